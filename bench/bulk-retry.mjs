#!/usr/bin/env node
// Bulk retry under live traffic: the real hookrelay server process (every role) on a throwaway,
// durable PostgreSQL retries --messages outbound messages that failed for good (seeded, 1 KiB
// payload rows, created in the last hour) in one job (POST /v1/bulk-retries), delivering them to an
// HTTPS receiver in this process, while webhooks arrive at --rate and live messages are sent at
// --live-rate to another endpoint of the same receiver. Measured for --seconds without the job,
// then in windows of --seconds one after the other from the job's start until the job has ended
// and every retried message has been received, then for --seconds without it again:
// - the ingest latency (paced 1 KiB webhooks at a cli-mode endpoint), p50/p99;
// - the live messages' enqueue → first attempt (the server's created_at → first_attempt_at), p50.
//
//   pnpm bench:bulk-retry [--messages 100000] [--rate 1000] [--seconds 10] [--live-rate 20]
//                         [--connections 20] [--chunk-size N] [--chunk-delay-ms N] [--enforce] [--no-build]
// --chunk-size, --chunk-delay-ms: HOOKRELAY_BULK_CHUNK_SIZE and HOOKRELAY_BULK_CHUNK_DELAY_MS
// (default: the server's).
//
// Prints the job's duration and rate (retries and deliveries per second), the ingest p50/p99 and
// the live deliveries' p50 without and with the job, and the ratios against the targets: ingest p99
// with ≤ 1.10 × without, live enqueue → first attempt p50 with ≤ 2 × without. Exit code 1 when a
// webhook or a live message was not answered 2xx or not stored, a retried message was not received
// exactly once, the job did not end in time, or a step failed; with --enforce also when a target
// is missed.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  apiPool,
  benchArgs,
  build,
  cleanup,
  cleanups,
  createInboundEndpoint,
  delay,
  fmt,
  KIB_PAYLOAD,
  machine,
  revision,
  runBench,
  startDeliveryReceiver,
  startDurablePg,
  startServer,
  table,
  watchdog,
  withTimeout,
} from './lib.mjs';
import { quantile, runLoad } from './loadgen.mjs';

const P99_RATIO_TARGET = 1.1;
const LIVE_P50_RATIO_TARGET = 2;
const SEED_CHUNK = 50_000;

const args = benchArgs(import.meta.url, 22, {
  messages: { type: 'string', default: '100000' },
  rate: { type: 'string', default: '1000' },
  seconds: { type: 'string', default: '10' },
  'live-rate': { type: 'string', default: '20' },
  connections: { type: 'string', default: '20' },
  'chunk-size': { type: 'string' },
  'chunk-delay-ms': { type: 'string' },
  enforce: { type: 'boolean', default: false },
});
const N = Number(args.messages);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const LIVE_RATE = Number(args['live-rate']);
const CONNECTIONS = Number(args.connections);
const positive = (n) => Number.isInteger(n) && n > 0;
if (![N, RATE, LIVE_RATE, CONNECTIONS].every(positive) || !(SECONDS > 0) || (args['chunk-size'] !== undefined && !positive(Number(args['chunk-size']))) || (args['chunk-delay-ms'] !== undefined && !(Number(args['chunk-delay-ms']) >= 0))) {
  process.stderr.write('usage: --messages N --rate N (webhooks/s) --seconds S --live-rate N (messages/s) --connections N [--chunk-size N] [--chunk-delay-ms N]\n');
  process.exit(2);
}
// Seeding, the job at no less than 500 retries a second, and the measurements around it.
const JOB_LIMIT_S = N / 500 + 120;
watchdog(N / 5000 + JOB_LIMIT_S + 4 * (SECONDS + 30) + 180);

/** 1 KiB of JSON, as a webhook provider would send it. */
const WEBHOOK = JSON.stringify(KIB_PAYLOAD);

/** The failed backlog, in statements of SEED_CHUNK: ids carry their creation time (a millisecond each, from an hour ago). */
function seedScripts(n, ids) {
  const start = Date.now() - 3_600_000;
  const scripts = [];
  const uuid = (g) => `(lpad(to_hex(${start}::bigint + ${g}), 12, '0') || '7000' || '9' || lpad(to_hex(${g}), 15, '0'))::uuid`;
  const at = (g) => `to_timestamp((${start}::bigint + ${g}) / 1000.0)`;
  const payload = WEBHOOK.replace(/'/g, "''");
  for (let from = 1; from <= n; from += SEED_CHUNK) {
    const to = Math.min(n, from + SEED_CHUNK - 1);
    scripts.push(`
      INSERT INTO outbound_messages (id, project_id, endpoint_id, request_sha256, payload_format, content_type, size_bytes, payload_sha256,
        payload_key, status, attempt_count, response_status, last_error, created_at, updated_at, failed_at)
      SELECT ${uuid('g')}, '${ids.project}', '${ids.endpoint}', 'x', 'json', 'application/json', ${Buffer.byteLength(WEBHOOK)}, 'x',
        'bench/bulk/' || g, 'failed_permanent', 8, 503, 'HTTP 503', ${at('g')}, ${at('g')}, ${at('g')}
      FROM generate_series(${from}, ${to}) AS g;
      INSERT INTO payloads (key, data) SELECT 'bench/bulk/' || g, convert_to('${payload}', 'UTF8') FROM generate_series(${from}, ${to}) AS g;`);
  }
  return { scripts, since: new Date(start - 1000).toISOString() };
}

/** One measurement: the paced ingest load and, beside it, live messages at LIVE_RATE; resolves when both are done. */
async function measure(ctx) {
  const startAt = Date.now() + 500;
  const ingest = runLoad({
    samples: true,
    origin: ctx.server.url,
    path: `/in/${ctx.inbound.token}`,
    headers: { 'content-type': 'application/json' },
    body: WEBHOOK,
    mode: 'paced',
    connections: CONNECTIONS,
    rate: RATE,
    durationMs: SECONDS * 1000,
    startAt,
  });
  await delay(Math.max(0, startAt - Date.now()));
  const sends = [];
  const total = Math.round(LIVE_RATE * SECONDS);
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const wait = t0 + (i * 1000) / LIVE_RATE - performance.now();
    if (wait > 1) await delay(wait);
    sends.push(ctx.api.call('POST', '/v1/messages', { endpoint_id: ctx.live, payload: KIB_PAYLOAD }));
  }
  const answers = await withTimeout(Promise.all(sends), 60_000, 'live messages');
  return { ingest: await ingest, live: answers.map((a) => (a.status === 202 ? a.body.data.message_id : null)) };
}

/** Measurements one after the other as one: the ingest answers' quantiles over all of them, the live ids together. */
function merged(results) {
  const statuses = {};
  for (const r of results) for (const [status, count] of Object.entries(r.ingest.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
  const sorted = Float64Array.from(results.flatMap((r) => r.ingest.samplesMs)).sort();
  return {
    windows: results.length,
    sent: results.reduce((sum, r) => sum + r.ingest.sent, 0),
    statuses,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    live: results.flatMap((r) => r.live),
  };
}

/** The live messages' enqueue → first attempt p50 (ms), once each has had its first attempt. */
async function liveP50(stats, ids) {
  const known = ids.filter((id) => id !== null);
  const attempted = async () => (await stats`SELECT count(*)::int AS n FROM outbound_messages WHERE id = ANY(${known}::uuid[]) AND first_attempt_at IS NOT NULL`)[0].n;
  const deadline = Date.now() + 120_000;
  while ((await attempted()) < known.length && Date.now() < deadline) await delay(200);
  const [row] = await stats`
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM first_attempt_at - created_at) * 1000) AS p50, count(first_attempt_at)::int AS attempted
    FROM outbound_messages WHERE id = ANY(${known}::uuid[])`;
  return { p50: Number(row.p50), attempted: row.attempted, sent: ids.length, accepted: known.length };
}

async function main() {
  if (!args['no-build']) build(['packages/shared', 'packages/server']);
  const m = machine();
  const { pg, stats, settings, version } = await startDurablePg();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-bulk-'));
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  const receiver = await startDeliveryReceiver(tmp);
  const server = await startServer({
    databaseUrl: pg.url,
    dataDir: path.join(tmp, 'data'),
    env: {
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
      HOOKRELAY_TLS_CA_FILE: receiver.caFile,
      ...(args['chunk-size'] !== undefined ? { HOOKRELAY_BULK_CHUNK_SIZE: args['chunk-size'] } : {}),
      ...(args['chunk-delay-ms'] !== undefined ? { HOOKRELAY_BULK_CHUNK_DELAY_MS: args['chunk-delay-ms'] } : {}),
    },
  });
  const api = apiPool(server.url, server.apiKey, 10);
  const endpoint = async (urlPath) => {
    const res = await api.call('POST', '/v1/endpoints', { url: `https://127.0.0.1:${receiver.port}${urlPath}` });
    if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${JSON.stringify(res.body)}`);
    receiver.addSecret(urlPath, res.body.data.signing_secret);
    return res.body.data.id;
  };
  const bulk = await endpoint('/hook-bulk');
  const live = await endpoint('/hook-live');
  const inbound = await createInboundEndpoint(server.url, server.apiKey, 'cli');
  const { project_id: project } = (await api.call('GET', '/v1/whoami')).body.data;

  const seedStarted = performance.now();
  const seed = seedScripts(N, { project, endpoint: bulk });
  for (const script of seed.scripts) await stats.unsafe(script).simple();
  await stats`VACUUM ANALYZE`;
  await stats`CHECKPOINT`;
  process.stderr.write(`bench: ${fmt(N)} failed messages seeded in ${fmt((performance.now() - seedStarted) / 1000, 1)} s\n`);

  const ctx = { server, api, inbound, live };
  const before = merged([await measure(ctx)]);

  const created = await api.call('POST', '/v1/bulk-retries', { filter: { endpoint_id: bulk, created_after: seed.since } });
  if (created.status !== 202) throw new Error(`POST /v1/bulk-retries: ${created.status} ${JSON.stringify(created.body)}`);
  const jobId = created.body.data.id;
  const startedAt = performance.now();
  let jobDoneAt = 0;
  let receivedAt = 0;
  let job = created.body.data;
  const bulkIds = (await stats`SELECT id FROM outbound_messages WHERE endpoint_id = ${bulk}`).map((r) => r.id);
  const watching = (async () => {
    const deadline = performance.now() + JOB_LIMIT_S * 1000;
    while (performance.now() < deadline) {
      if (jobDoneAt === 0) {
        job = (await api.call('GET', `/v1/bulk-retries/${jobId}`)).body.data;
        if (job.status !== 'running') jobDoneAt = performance.now();
      }
      if (receivedAt === 0 && bulkIds.every((id) => receiver.receipts.has(id))) receivedAt = performance.now();
      // Both: every retried message received, and the job's own end (its last chunk, which finds
      // nothing left, may come after the last delivery).
      if (receivedAt !== 0 && jobDoneAt !== 0) return;
      await delay(200);
    }
  })();
  const windows = [];
  do windows.push(await measure(ctx));
  while ((receivedAt === 0 || jobDoneAt === 0) && performance.now() - startedAt < JOB_LIMIT_S * 1000);
  await watching;
  const during = merged(windows);
  const after = merged([await measure(ctx)]);

  const problems = [];
  if (receivedAt === 0) problems.push(`the job did not end, or its deliveries did not all arrive, within ${fmt(JOB_LIMIT_S)} s (job ${JSON.stringify(job)})`);
  if (job.status !== 'done' || job.done !== N) problems.push(`the job ended ${job.status} with ${job.done} of ${N} retried (matched ${job.matched})`);
  const duplicates = bulkIds.filter((id) => (receiver.receipts.get(id)?.n ?? 0) > 1).length;
  if (duplicates > 0) problems.push(`${duplicates} retried messages received more than once`);
  const [{ stored }] = await stats`SELECT count(*)::int AS stored FROM inbound_messages WHERE inbound_endpoint_id = ${inbound.id}`;
  const phases = [before, during, after];
  const answered = phases.reduce((sum, r) => sum + Object.entries(r.statuses).reduce((s, [status, count]) => s + (status.startsWith('2') ? count : 0), 0), 0);
  const sent = phases.reduce((sum, r) => sum + r.sent, 0);
  if (answered !== sent) problems.push(`${sent - answered} of ${sent} webhooks not answered 2xx`);
  if (stored !== answered) problems.push(`${answered} webhooks answered 2xx, ${stored} stored`);
  const [liveBefore, liveDuring, liveAfter] = [await liveP50(stats, before.live), await liveP50(stats, during.live), await liveP50(stats, after.live)];
  for (const [name, l] of [['before', liveBefore], ['during', liveDuring], ['after', liveAfter]]) {
    if (l.accepted !== l.sent) problems.push(`${name}: ${l.sent - l.accepted} of ${l.sent} live messages not accepted`);
    if (l.attempted !== l.accepted) problems.push(`${name}: ${l.accepted - l.attempted} live messages never attempted`);
  }
  await api.close();
  await cleanup();

  const jobSeconds = (jobDoneAt - startedAt) / 1000;
  const deliverySeconds = (receivedAt - startedAt) / 1000;
  const withoutP99 = (before.p99 + after.p99) / 2;
  const withoutLive = (liveBefore.p50 + liveAfter.p50) / 2;
  const ingestRatio = during.p99 / withoutP99;
  const liveRatio = liveDuring.p50 / withoutLive;
  process.stdout.write(`\nbulk retry under live traffic — ${new Date().toISOString()}, server ${revision()}, ${m.cpu} ×${m.nproc}, ${m.node}, load average ${m.loadavg}\n`);
  process.stdout.write(`database: ${version}, fsync=${settings.fsync}, synchronous_commit=${settings.sync}; chunk size ${args['chunk-size'] ?? 'default'}, chunk delay ${args['chunk-delay-ms'] ?? 'default'} ms\n`);
  process.stdout.write(`ingest: ${fmt(RATE)} webhooks/s paced over ${CONNECTIONS} connections; live: ${LIVE_RATE} messages/s; ${SECONDS} s per measurement, ${during.windows} during the job\n\n`);
  process.stdout.write(
    table([
      ['messages', 'job s', 'retries/s', 'delivered s', 'deliveries/s', 'ingest p50/p99 ms before', 'during', 'after', 'p99 ratio', 'live p50 ms before', 'during', 'after', 'live ratio'],
      [
        fmt(N),
        fmt(jobSeconds, 1),
        fmt(N / jobSeconds),
        fmt(deliverySeconds, 1),
        fmt(N / deliverySeconds),
        `${fmt(before.p50, 2)} / ${fmt(before.p99, 2)}`,
        `${fmt(during.p50, 2)} / ${fmt(during.p99, 2)}`,
        `${fmt(after.p50, 2)} / ${fmt(after.p99, 2)}`,
        `${fmt(ingestRatio, 2)}×`,
        fmt(liveBefore.p50, 1),
        fmt(liveDuring.p50, 1),
        fmt(liveAfter.p50, 1),
        `${fmt(liveRatio, 2)}×`,
      ],
    ]),
  );
  const ingestMet = ingestRatio <= P99_RATIO_TARGET;
  const liveMet = liveRatio <= LIVE_P50_RATIO_TARGET;
  process.stdout.write(`ingest p99 during the job ≤ ${P99_RATIO_TARGET} × without: ${ingestMet ? 'met' : 'NOT met'} (${fmt(ingestRatio, 2)}×)\n`);
  process.stdout.write(`live enqueue → first attempt p50 during the job ≤ ${LIVE_P50_RATIO_TARGET} × without: ${liveMet ? 'met' : 'NOT met'} (${fmt(liveRatio, 2)}×)\n`);
  process.stdout.write(`receipts: ${fmt(receiver.total)} (${fmt(receiver.verified)} signatures verified, ${receiver.badSignatures} bad)\n`);
  if (receiver.badSignatures > 0) problems.push(`${receiver.badSignatures} bad signatures`);
  if (args.enforce && !(ingestMet && liveMet)) problems.push('a target was missed (--enforce)');
  return problems.length > 0 ? problems.join('; ') : undefined;
}

runBench(main);
