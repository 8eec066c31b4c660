#!/usr/bin/env node
// A flood of refused requests at one endpoint must not slow another's ingestion. The real server
// process on a throwaway, durable PostgreSQL; endpoint A takes 1 KiB JSON webhooks (accepted) and its
// latency is measured twice: alone, then while badly signed webhooks (GitHub scheme, a wrong secret)
// arrive at endpoint B at a steady rate. Each load runs in a process of its own (loadgen.mjs), the
// flood paced evenly, every answer timed in microseconds. Afterwards it counts what B kept: at most
// the cap (1,000) stored refusals, the rest counted as dropped.
//
//   pnpm bench:rejections [--duration 10] [--connections 10] [--rate 0] [--flood-rate 1000] [--warmup 3]
//                         [--flood-to endpoint|unknown] [--rounds 3] [--enforce] [--no-build]
// --rate: A's requests a second, paced (0: each of its connections sends again as soon as it has
// its answer, which keeps the server busy, so whatever the flood costs it shows in A's latency).
// --flood-to unknown: the same flood to a URL whose token matches no endpoint (404 before the body
// is read, nothing verified or recorded), the control: what receiving the requests costs.
//
// Prints the server's CPU per flood request (the flood alone), A's requests/s and p50/p99 without
// and with the flood (each round measures both, in alternating order; the median of the rounds),
// the ratio of the p99s (target: ≤ 1.10), the flood's achieved rate and answers (all must be 401),
// and B's stored, counted and dropped refusals. Exit code: 1 when a request failed, a flood answer
// was not 401, more than the cap were stored, or a step timed out; with --enforce also when the p99
// target is missed.
import { mkdtempSync, rmSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build, cleanup, cleanups, fail, fmt, machine, revision, startDurablePg, startServer, table, treeCpuMs, usageText, watchdog, withTimeout } from './lib.mjs';
import { runLoad } from './loadgen.mjs';

const P99_RATIO_TARGET = 1.1;
const CAP = 1000;

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    rate: { type: 'string', default: '0' },
    'flood-to': { type: 'string', default: 'endpoint' },
    'flood-rate': { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    enforce: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 21));
  process.exit(0);
}
const duration = Number(args.duration);
const connections = Number(args.connections);
const rate = Number(args.rate);
const floodToUnknown = args['flood-to'] === 'unknown';
if (!floodToUnknown && args['flood-to'] !== 'endpoint') {
  process.stderr.write('usage: --flood-to endpoint|unknown\n');
  process.exit(2);
}
/** The answer every flood request must get: 401 at the endpoint, 404 at a token of no endpoint. */
const FLOOD_STATUS = floodToUnknown ? '404' : '401';
/** A token of the right shape that no endpoint has. */
const UNKNOWN_TOKEN = 'f'.repeat(32);
const floodRate = Number(args['flood-rate']);
const warmup = Number(args.warmup);
const rounds = Number(args.rounds);
const positive = (n) => Number.isInteger(n) && n > 0;
if (!(duration > 0) || !positive(connections) || !(Number.isInteger(rate) && rate >= 0) || !positive(floodRate) || !(warmup >= 0) || !positive(rounds)) {
  process.stderr.write('usage: --duration SECONDS (>0) --connections N --rate N (requests/s, 0: as fast as answered) --flood-rate N (requests/s) --warmup SECONDS (>=0) --rounds N\n');
  process.exit(2);
}
watchdog((rounds * 2 + 1) * (duration + 30) + warmup + 240);

const BODY = (() => {
  const base = { id: 'evt_0001', type: 'invoice.paid', created: 1767225600, data: { object: { id: 'in_0001', amount: 4200, currency: 'eur', note: '' } } };
  base.data.object.note = 'x'.repeat(1024 - JSON.stringify(base).length);
  return JSON.stringify(base);
})();
const GITHUB_SECRET = 'bench-github-secret';
const WRONG_SIGNATURE = `sha256=${createHmac('sha256', 'a mistyped secret').update(BODY).digest('hex')}`;

async function api(server, method, url, body) {
  const res = await withTimeout(
    fetch(`${server.url}${url}`, {
      method,
      headers: { authorization: `Bearer ${server.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    }),
    10_000,
    `${method} ${url}`,
  );
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** Starts the loads together, whatever their processes' start-up takes. */
const START_DELAY_MS = 500;

/** Endpoint A's webhooks, accepted. */
function accepted(server, token, seconds, startAt) {
  return runLoad({
    origin: server.url,
    path: `/in/${token}`,
    headers: { 'content-type': 'application/json' },
    body: BODY,
    ...(rate > 0 ? { mode: 'paced', rate, connections: Math.max(connections, 64) } : { mode: 'closed', connections }),
    durationMs: seconds * 1000,
    startAt,
  });
}

/** Endpoint B's flood: badly signed webhooks, `floodRate` a second. */
function flood(server, token, seconds, startAt) {
  return runLoad({
    origin: server.url,
    path: `/in/${token}`,
    headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': WRONG_SIGNATURE },
    body: BODY,
    mode: 'paced',
    rate: floodRate,
    connections: 64,
    durationMs: seconds * 1000,
    startAt,
  });
}

async function main() {
  if (!args['no-build']) build(['packages/shared', 'packages/server']);
  const m = machine();
  process.stdout.write(`machine: ${m.nproc} cores, ${m.cpu}, node ${m.node}, loadavg ${m.loadavg}\n`);
  process.stdout.write(`hookrelay: ${revision()}, 1 server process; A: ${connections} connections of 1 KiB JSON${rate > 0 ? ` at ${fmt(rate)}/s` : ''}; B: ${fmt(floodRate)} badly signed webhooks/s\n`);
  const { pg, stats, version } = await startDurablePg();
  process.stdout.write(`database: ${version}, durable\n`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-rejections-'));
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  const server = await startServer({ databaseUrl: pg.url, dataDir: path.join(tmp, 'data') });

  const a = await api(server, 'POST', '/v1/inbound-endpoints', { name: 'accepted', mode: 'cli' });
  const b = await api(server, 'POST', '/v1/inbound-endpoints', { name: 'flooded', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: GITHUB_SECRET });

  const floodToken = floodToUnknown ? UNKNOWN_TOKEN : b.secret_token;
  if (warmup > 0) {
    process.stdout.write(`warming up for ${warmup}s ...\n`);
    const startAt = Date.now() + START_DELAY_MS;
    await Promise.all([accepted(server, a.secret_token, warmup, startAt), flood(server, floodToken, warmup, startAt)]);
  }

  let failures = 0;
  let floodSent = 0;
  let floodNon401 = 0;
  const quiet = [];
  const flooded = [];
  const floodRates = [];
  const countFlood = (floodResult) => {
    floodSent += floodResult.sent;
    floodRates.push(floodResult.rate);
    floodNon401 += floodResult.sent - (floodResult.statuses[FLOOD_STATUS] ?? 0);
  };

  // The flood alone: what one of its requests costs the server.
  const cpuBefore = treeCpuMs(server.child.pid);
  const alone = await flood(server, floodToken, duration, Date.now() + START_DELAY_MS);
  const serverCpuUs = ((treeCpuMs(server.child.pid) - cpuBefore) * 1000) / Math.max(1, alone.answered);
  countFlood(alone);
  process.stdout.write(`the flood alone: ${fmt(alone.rate)}/s answered, p50 ${fmt(alone.latencyMs.p50, 2)} ms, server CPU ${fmt(serverCpuUs)} µs a request\n`);

  const measure = async (withFlood) => {
    const startAt = Date.now() + START_DELAY_MS;
    const [result, floodResult] = await Promise.all([accepted(server, a.secret_token, duration, startAt), withFlood ? flood(server, floodToken, duration, startAt) : Promise.resolve(undefined)]);
    failures += result.sent - (result.statuses['200'] ?? 0);
    (withFlood ? flooded : quiet).push({ rps: result.rate, p50: result.latencyMs.p50, p99: result.latencyMs.p99 });
    if (floodResult) countFlood(floodResult);
  };
  for (let round = 0; round < rounds; round++) {
    process.stdout.write(`round ${round + 1} of ${rounds} ...\n`);
    // Alternating order, so that a drift of the machine does not favour one side.
    for (const withFlood of round % 2 === 0 ? [false, true] : [true, false]) await measure(withFlood);
  }

  const median = (values) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)];
  const q = { rps: median(quiet.map((r) => r.rps)), p50: median(quiet.map((r) => r.p50)), p99: median(quiet.map((r) => r.p99)) };
  const f = { rps: median(flooded.map((r) => r.rps)), p50: median(flooded.map((r) => r.p50)), p99: median(flooded.map((r) => r.p99)) };
  process.stdout.write(
    `\nendpoint A (accepted), median of ${rounds} round${rounds === 1 ? '' : 's'} of ${duration}s:\n` +
      table([
        ['', 'req/s', 'p50 ms', 'p99 ms'],
        ['alone', fmt(q.rps), fmt(q.p50, 2), fmt(q.p99, 2)],
        [`with ${fmt(floodRate)}/s refused at B`, fmt(f.rps), fmt(f.p50, 2), fmt(f.p99, 2)],
      ]),
  );
  const ratio = f.p99 / q.p99;
  const met = ratio <= P99_RATIO_TARGET;
  process.stdout.write(`p99 with the flood / alone: ${fmt(ratio, 3)} (target ≤ ${P99_RATIO_TARGET}): ${met ? 'met' : 'NOT met'}\n`);
  process.stdout.write(`flood: ${fmt(floodSent)} sent at ${fmt(median(floodRates))}/s, ${fmt(floodNon401)} not answered ${FLOOD_STATUS}${floodToUnknown ? ' (a token of no endpoint)' : ''}\n`);

  // What B kept: the writer drains within a moment of the last refusal.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const [kept] = await stats`SELECT count(*)::int AS n FROM ingest_rejections WHERE endpoint_id = ${b.id}::uuid`;
  const [counts] = await stats`SELECT rejected_count::float8 AS rejected, rejections_dropped_count::float8 AS dropped FROM inbound_endpoints WHERE id = ${b.id}::uuid`;
  process.stdout.write(`endpoint B: ${fmt(kept.n)} refusals stored (cap ${fmt(CAP)}), ${fmt(counts.rejected)} counted, ${fmt(counts.dropped)} counted but not stored\n`);

  await cleanup();
  if (failures > 0) return `${failures} accepted-path requests failed`;
  if (floodNon401 > 0) return `${floodNon401} flood requests were not answered ${FLOOD_STATUS}`;
  if (kept.n > CAP) return `${kept.n} refusals stored, over the cap of ${CAP}`;
  if (args.enforce && !met) return 'the p99 target is missed';
  return undefined;
}

main().then(
  async (failure) => {
    if (failure) await fail(failure);
    process.exit(0);
  },
  async (error) => fail(error instanceof Error ? (error.stack ?? error.message) : String(error)),
);
