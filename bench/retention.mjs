#!/usr/bin/env node
// Message retention: a backlog of expired messages is removed while webhooks keep arriving. The real
// server process (sweepers every second) on a throwaway, durable PostgreSQL and on the embedded
// database (PGlite); --messages expired messages (half inbound with an attempt, half outbound with
// an attempt, each with a 1 KiB payload row, received 60 days ago) wait at two endpoints whose
// retention_days is 3650, while a third endpoint takes 1 KiB webhooks at a paced --rate. Its ingest
// latency is measured for --duration without the purge, then in windows of --duration one after
// the other from the moment a PATCH sets both endpoints' retention_days to 30 (the purge begins at
// the next sweeper round) until the purge has ended, then for --duration without it again.
//
//   pnpm bench:retention [--db both|postgres|pglite] [--messages N] [--duration 10] [--rate 200]
//                        [--connections 10] [--batch N] [--enforce] [--no-build]
// --messages: the expired backlog (default 1,000,000 on PostgreSQL, 100,000 on PGlite).
// --batch: HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE (default: the server's).
//
// Prints, per database: the purge's duration (from the PATCH) and rate, the ingest p50/p99 without
// the purge (before and after) and during it (all the windows' answers together), the p99 ratio
// (target: ≤ 1.10 on PostgreSQL), how much of the windows the purge covered, and the size of the
// database (PostgreSQL) or of the data dir (PGlite) before and after, once the sweepers' upkeep has
// run. Exit code 1 when a webhook was not answered
// 2xx or not stored, an expired message or payload is left, the purge took longer than the watchdog
// allows, or a step failed; with --enforce also when the PostgreSQL p99 target is missed.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { build, cleanup, cleanups, delay, fail, fmt, machine, revision, root, startDurablePg, startServer, table, usageText, watchdog, withTimeout } from './lib.mjs';
import { quantile, runLoad } from './loadgen.mjs';

const P99_RATIO_TARGET = 1.1;
const SEED_CHUNK = 50_000;
const DAY_MS = 86_400_000;

const { values: args } = parseArgs({
  options: {
    db: { type: 'string', default: 'both' },
    messages: { type: 'string' },
    duration: { type: 'string', default: '10' },
    rate: { type: 'string', default: '200' },
    connections: { type: 'string', default: '10' },
    batch: { type: 'string' },
    enforce: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 22));
  process.exit(0);
}
const backends = args.db === 'both' ? ['postgres', 'pglite'] : [args.db];
const duration = Number(args.duration);
const rate = Number(args.rate);
const connections = Number(args.connections);
const positive = (n) => Number.isInteger(n) && n > 0;
const messagesOf = (backend) => (args.messages !== undefined ? Number(args.messages) : backend === 'postgres' ? 1_000_000 : 100_000);
if (!backends.every((b) => b === 'postgres' || b === 'pglite') || !(duration > 0) || !positive(rate) || !positive(connections) || !backends.every((b) => positive(messagesOf(b))) || (args.batch !== undefined && !positive(Number(args.batch)))) {
  process.stderr.write('usage: --db both|postgres|pglite --messages N --duration SECONDS --rate N (requests/s) --connections N [--batch N]\n');
  process.exit(2);
}
// Seeding, three loads, and a purge at no less than 2,000 messages a second.
watchdog(backends.reduce((sum, b) => sum + messagesOf(b) / 2000 + messagesOf(b) / 20_000 + 3 * (duration + 30) + 180, 0));

const load = (file) => import(pathToFileURL(path.join(root, file)).href);

const BODY = (() => {
  const base = { id: 'evt_0001', type: 'invoice.paid', created: 1767225600, data: { object: { id: 'in_0001', amount: 4200, currency: 'eur', note: '' } } };
  base.data.object.note = 'x'.repeat(1024 - JSON.stringify(base).length);
  return JSON.stringify(base);
})();

/** Bytes of the files under `dir`. */
function dirBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) total += dirBytes(file);
    else if (entry.isFile()) total += statSync(file).size;
  }
  return total;
}
const mb = (bytes) => fmt(bytes / 1024 / 1024, 1);

async function api(server, method, url, body) {
  const res = await withTimeout(
    fetch(`${server.url}${url}`, {
      method,
      headers: { authorization: `Bearer ${server.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }),
    30_000,
    `${method} ${url}`,
  );
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text).data;
}

/** `hookrelay_messages_purged_total` of both kinds, from the server's /metrics. */
async function purgedSoFar(server) {
  const text = await (await withTimeout(fetch(`${server.url}/metrics`), 10_000, 'GET /metrics')).text();
  let total = 0;
  for (const match of text.matchAll(/^hookrelay_messages_purged_total\{kind="(?:inbound|outbound)"\} (\d+)$/gm)) total += Number(match[1]);
  return total;
}

/**
 * The expired backlog, in statements of SEED_CHUNK: ids carry the time they were received at, as
 * ingestion makes them (a millisecond each, from 60 days ago), each message with its payload and one
 * attempt, at endpoints made 70 days ago.
 */
function seedScripts(n, ids) {
  const start = Date.now() - 60 * DAY_MS;
  const half = Math.ceil(n / 2);
  const scripts = [
    `UPDATE inbound_endpoints SET created_at = now() - interval '70 days' WHERE id = '${ids.inbound}';
     UPDATE endpoints SET created_at = now() - interval '70 days' WHERE id = '${ids.outbound}';`,
  ];
  const uuid = (variant, g) => `(lpad(to_hex(${start}::bigint + ${g}), 12, '0') || '7000' || '${variant}' || lpad(to_hex(${g}), 15, '0'))::uuid`;
  const at = (g) => `to_timestamp((${start}::bigint + ${g}) / 1000.0)`;
  for (let from = 1; from <= n; from += SEED_CHUNK) {
    const to = Math.min(n, from + SEED_CHUNK - 1);
    const inTo = Math.min(to, half);
    if (from <= half) {
      scripts.push(`
        INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, status, attempt_count, method, path, content_type, size_bytes,
          payload_sha256, raw_headers, payload_key, received_at, updated_at, response_status)
        SELECT ${uuid('8', 'g')}, '${ids.project}', '${ids.inbound}', 'succeeded', 1, 'POST', '/', 'application/json', 1024,
          'x', '[["content-type","application/json"]]'::jsonb, 'bench/in/' || g, ${at('g')}, ${at('g')}, 200
        FROM generate_series(${from}, ${inTo}) AS g;
        INSERT INTO payloads (key, data) SELECT 'bench/in/' || g, convert_to(repeat('x', 1024), 'UTF8') FROM generate_series(${from}, ${inTo}) AS g;
        INSERT INTO delivery_attempts (id, message_id, attempt_number, started_at, response_status, latency_ms)
        SELECT ${uuid('a', 'g')}, ${uuid('8', 'g')}, 1, ${at('g')}, 200, 5 FROM generate_series(${from}, ${inTo}) AS g;`);
    }
    const outFrom = Math.max(from, half + 1);
    if (outFrom <= to) {
      scripts.push(`
        INSERT INTO outbound_messages (id, project_id, endpoint_id, request_sha256, payload_format, content_type, size_bytes, payload_sha256,
          payload_key, status, attempt_count, response_status, created_at, updated_at, delivered_at)
        SELECT ${uuid('9', 'g')}, '${ids.project}', '${ids.outbound}', 'x', 'json', 'application/json', 1024, 'x',
          'bench/out/' || g, 'succeeded', 1, 200, ${at('g')}, ${at('g')}, ${at('g')}
        FROM generate_series(${outFrom}, ${to}) AS g;
        INSERT INTO payloads (key, data) SELECT 'bench/out/' || g, convert_to(repeat('x', 1024), 'UTF8') FROM generate_series(${outFrom}, ${to}) AS g;
        INSERT INTO delivery_attempts (id, message_id, attempt_number, started_at, response_status, latency_ms)
        SELECT ${uuid('b', 'g')}, ${uuid('9', 'g')}, 1, ${at('g')}, 200, 5 FROM generate_series(${outFrom}, ${to}) AS g;`);
    }
  }
  return scripts;
}

/** Loads one after the other as one: their counts added, their quantiles over every answer. */
function merged(results) {
  const statuses = {};
  for (const r of results) for (const [status, count] of Object.entries(r.statuses)) statuses[status] = (statuses[status] ?? 0) + count;
  const sorted = Float64Array.from(results.flatMap((r) => r.samplesMs)).sort();
  const at = (q) => quantile(sorted, q);
  return {
    sent: results.reduce((sum, r) => sum + r.sent, 0),
    statuses,
    windows: results.length,
    latencyMs: { p50: at(0.5), p99: at(0.99), max: sorted.length ? sorted[sorted.length - 1] : Number.NaN },
  };
}

/** What is left of the seeded messages: rows, payloads and attempts. */
const LEFT_SQL = `
  SELECT (SELECT count(*)::int FROM inbound_messages WHERE payload_key LIKE 'bench/%') +
         (SELECT count(*)::int FROM outbound_messages WHERE payload_key LIKE 'bench/%') AS messages,
         (SELECT count(*)::int FROM payloads WHERE key LIKE 'bench/%') AS payloads,
         (SELECT count(*)::int FROM payload_removals) AS listed`;

async function runBackend(backend) {
  const n = messagesOf(backend);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `hookrelay-bench-retention-${backend}-`));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const pg = backend === 'postgres' ? await startDurablePg() : undefined;
  const keys = { HOOKRELAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'), HOOKRELAY_BOOTSTRAP_API_KEY: `hr_${randomBytes(20).toString('hex')}` };
  const env = {
    ...keys,
    HOOKRELAY_SWEEP_INTERVAL_SECONDS: '1',
    ...(args.batch !== undefined ? { HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE: args.batch } : {}),
  };
  const start = async () => {
    const server = await startServer({ databaseUrl: pg?.pg.url, dataDir, env, name: `server-${backend}` });
    return { ...server, apiKey: keys.HOOKRELAY_BOOTSTRAP_API_KEY };
  };

  let server = await start();
  const inbound = await api(server, 'POST', '/v1/inbound-endpoints', { name: 'expired inbound', mode: 'cli', retention_days: 3650 });
  const outbound = await api(server, 'POST', '/v1/endpoints', { url: 'https://example.com/expired', retention_days: 3650 });
  const target = await api(server, 'POST', '/v1/inbound-endpoints', { name: 'ingest', mode: 'cli' });
  const { project_id: project } = await api(server, 'GET', '/v1/whoami');
  const ids = { project, inbound: inbound.id, outbound: outbound.id };

  const seedStarted = performance.now();
  let seedMs;
  if (backend === 'postgres') {
    const sql = postgres(pg.pg.url, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end({ timeout: 5 }));
    for (const script of seedScripts(n, ids)) await sql.unsafe(script).simple();
    await sql`VACUUM ANALYZE`;
    await sql`CHECKPOINT`;
    seedMs = performance.now() - seedStarted;
  } else {
    // One process at a time opens a data dir: the server stops while the backlog is written.
    await server.stop();
    const { openPGlite } = await load('packages/server/dist/db/database.js');
    const { DEFAULT_PGLITE_SETTINGS } = await load('packages/server/dist/config.js');
    const db = await openPGlite({ dataDir: path.join(dataDir, 'pgdata'), settings: DEFAULT_PGLITE_SETTINGS });
    try {
      for (const script of seedScripts(n, ids)) await db.sql.execScript(script);
      await db.sql.execScript('VACUUM ANALYZE');
      await db.sql.execScript('CHECKPOINT');
    } finally {
      await db.close();
    }
    seedMs = performance.now() - seedStarted;
    server = await start();
  }
  process.stderr.write(`bench: ${backend}: ${fmt(n)} expired messages seeded in ${fmt(seedMs / 1000, 1)} s\n`);

  const sizeOf = async () => {
    if (backend === 'postgres') return Number((await pg.stats`SELECT pg_database_size(current_database())::float8 AS bytes`)[0].bytes);
    return dirBytes(dataDir);
  };
  const ingestLoad = (samples = false) =>
    runLoad({
      samples,
      origin: server.url,
      path: `/in/${target.secret_token}`,
      headers: { 'content-type': 'application/json' },
      body: BODY,
      mode: 'paced',
      connections,
      rate,
      durationMs: duration * 1000,
      startAt: Date.now() + 500,
    });

  const sizeBefore = await sizeOf();
  const before = await ingestLoad();

  const purgedBefore = await purgedSoFar(server);
  for (const [url, body] of [
    [`/v1/inbound-endpoints/${inbound.id}`, { retention_days: 30 }],
    [`/v1/endpoints/${outbound.id}`, { retention_days: 30 }],
  ]) await api(server, 'PATCH', url, body);
  const patchedAt = performance.now();
  let doneAt = 0;
  const watching = (async () => {
    const deadline = Date.now() + (n / 2000 + 120) * 1000;
    while (Date.now() < deadline) {
      if ((await purgedSoFar(server)) - purgedBefore >= n) return (doneAt = performance.now());
      await delay(200);
    }
  })();
  const windows = [];
  let windowMs = 0;
  do {
    const startsAt = performance.now() + 500;
    windows.push(await ingestLoad(true));
    windowMs += performance.now() - startsAt;
  } while (doneAt === 0 && performance.now() - patchedAt < (n / 2000 + 120) * 1000);
  await watching;
  if (doneAt === 0) await fail(`${backend}: the purge did not end in time`);
  const duringResult = merged(windows);
  // A few rounds of the sweepers (a second apart): the purge's last batches, then the upkeep that
  // follows them on the embedded database (vacuum, checkpoint).
  await delay(5000);
  const sizeAfter = await sizeOf();
  const after = await ingestLoad();

  // Every webhook answered 2xx is stored; nothing of the backlog is left.
  const answered = [before, duringResult, after].reduce((sum, r) => sum + Object.entries(r.statuses).reduce((s, [status, count]) => s + (status.startsWith('2') ? count : 0), 0), 0);
  const sent = [before, duringResult, after].reduce((sum, r) => sum + r.sent, 0);
  let left;
  let stored;
  if (backend === 'postgres') {
    [left] = await pg.stats.unsafe(LEFT_SQL);
    [{ stored }] = await pg.stats`SELECT count(*)::int AS stored FROM inbound_messages WHERE inbound_endpoint_id = ${target.id}`;
    await server.stop();
  } else {
    await server.stop();
    const { openPGlite } = await load('packages/server/dist/db/database.js');
    const db = await openPGlite({ dataDir: path.join(dataDir, 'pgdata') });
    try {
      [left] = await db.sql([LEFT_SQL]);
      [{ stored }] = await db.sql`SELECT count(*)::int AS stored FROM inbound_messages WHERE inbound_endpoint_id = ${target.id}`;
    } finally {
      await db.close();
    }
  }
  const problems = [];
  if (answered !== sent) problems.push(`${sent - answered} of ${sent} webhooks not answered 2xx`);
  if (stored !== answered) problems.push(`${answered} webhooks answered 2xx, ${stored} stored`);
  if (left.messages !== 0 || left.payloads !== 0) problems.push(`left of the backlog: ${left.messages} messages, ${left.payloads} payloads`);

  // From the PATCH: the purge begins at the next sweeper round, within a second.
  const purgeMs = doneAt - patchedAt;
  const covered = Math.min(1, purgeMs / windowMs);
  const without = (before.latencyMs.p99 + after.latencyMs.p99) / 2;
  return { backend, n, seedMs, purgeMs, sizeBefore, sizeAfter, before, during: duringResult, after, ratio: duringResult.latencyMs.p99 / without, covered, problems, listed: left.listed };
}

if (!args['no-build']) build(['packages/shared', 'packages/server']);
const results = [];
try {
  for (const backend of backends) results.push(await runBackend(backend));
} catch (error) {
  await fail(error instanceof Error ? (error.stack ?? error.message) : String(error));
}
await cleanup();

const m = machine();
process.stdout.write(`\nmessage retention — ${new Date().toISOString()}, server ${revision()}, ${m.cpu} ×${m.nproc}, ${m.node}, load average ${m.loadavg}\n`);
process.stdout.write(`ingest: ${rate} webhooks/s paced over ${connections} connections, ${duration} s per measurement\n\n`);
process.stdout.write(
  table([
    ['database', 'expired', 'purge s', 'messages/s', 'ingest p50/p99 ms before', 'during', 'after', 'p99 ratio', 'windows in purge', 'size before MB', 'after MB'],
    ...results.map((r) => [
      r.backend,
      fmt(r.n),
      fmt(r.purgeMs / 1000, 1),
      fmt(r.n / (r.purgeMs / 1000)),
      `${fmt(r.before.latencyMs.p50, 2)} / ${fmt(r.before.latencyMs.p99, 2)}`,
      `${fmt(r.during.latencyMs.p50, 2)} / ${fmt(r.during.latencyMs.p99, 2)}`,
      `${fmt(r.after.latencyMs.p50, 2)} / ${fmt(r.after.latencyMs.p99, 2)}`,
      `${fmt(r.ratio, 2)}×`,
      `${fmt(r.covered * 100)} %`,
      mb(r.sizeBefore),
      mb(r.sizeAfter),
    ]),
  ]),
);
let failed = false;
for (const r of results) {
  if (r.covered < 0.9) process.stdout.write(`${r.backend}: the purge covered ${fmt(r.covered * 100)} % of the ${r.during.windows} measured window(s): --messages larger, or --duration shorter, for a figure of the purge alone\n`);
  for (const problem of r.problems) {
    failed = true;
    process.stdout.write(`${r.backend}: FAILED: ${problem}\n`);
  }
  if (r.backend === 'postgres') {
    const met = r.ratio <= P99_RATIO_TARGET;
    process.stdout.write(`postgres: ingest p99 during the purge ≤ ${P99_RATIO_TARGET} × without: ${met ? 'met' : 'NOT met'} (${fmt(r.ratio, 2)}×)\n`);
    if (!met && args.enforce) failed = true;
  }
}
process.exit(failed ? 1 : 0);
