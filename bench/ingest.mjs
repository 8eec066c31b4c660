#!/usr/bin/env node
// Ingestion throughput benchmark: the real hookrelay server process on a throwaway, durable
// PostgreSQL (fsync and synchronous_commit on) against two Fastify baselines (bench/bare-server.mjs)
// in the same run, all driven by autocannon with a 1 KiB JSON body:
//   - the INSERT handler: one INSERT of the body per request in its own synchronous commit, pool of
//     10, on the same cluster — the least a durable ingest does; the targets are against it;
//   - the bare handler: answers 200 and stores nothing; its ratio is printed, not a target.
//
//   pnpm bench:ingest [--duration 10] [--connections 10,100,10x10] [--warmup 3] [--pool-size N]
//                     [--batch-stats] [--cpu-prof] [--otel] [--enforce] [--no-build]
//
// --connections: scenarios, `C` (C connections on one endpoint) or `CxE` (C connections spread over E
// endpoints, connection i on endpoint i mod E). Prints, per scenario: requests/s and p50/p99 latency
// of each, the ratios, non-2xx and errors (must be 0), and where the CPU went (ms per 1,000 requests:
// server, PostgreSQL, client). Afterwards it checks that every 2xx answer is a stored inbound
// message (no loss). Exit code: 1 when a request failed, a message is missing or a step timed out;
// with --enforce also when a target is missed. --otel: the server exports every span (all sampled)
// over OTLP/HTTP to a local sink (otlp-sink.mjs), the cost of tracing against a run without it.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import {
  build,
  cleanup,
  cleanups,
  createInboundEndpoint,
  fail,
  here,
  machine,
  revision,
  selfCpuMs,
  startChild,
  startDurablePg,
  startOtlpSink,
  startServer,
  summarizeProfile,
  treeCpuMs,
  usageText,
  watchdog,
  withTimeout,
} from './lib.mjs';

// hookrelay's req/s over the INSERT handler's, per scenario (100 connections on one endpoint; 10
// connections over 10 endpoints).
const TARGETS = [
  { connections: 100, endpoints: 1, ratio: 2.5 },
  { connections: 10, endpoints: 10, ratio: 1.2 },
];

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10,100,10x10' },
    warmup: { type: 'string', default: '3' },
    'pool-size': { type: 'string' },
    'batch-stats': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    otel: { type: 'boolean', default: false },
    enforce: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 18));
  process.exit(0);
}
const duration = Number(args.duration);
const warmup = Number(args.warmup);
const scenarios = args.connections.split(',').map((text) => {
  const [connections, endpoints = 1] = text.split('x').map(Number);
  return { connections, endpoints, label: endpoints > 1 ? `${connections} over ${endpoints} endpoints` : String(connections) };
});
const positive = (n) => Number.isInteger(n) && n > 0;
if (!(duration > 0) || !(warmup >= 0) || scenarios.some((c) => !positive(c.connections) || !positive(c.endpoints))) {
  process.stderr.write('usage: --duration SECONDS (>0) --warmup SECONDS (>=0) --connections C[xE][,C[xE]...]\n');
  process.exit(2);
}

// 1 KiB of JSON, as a webhook provider would send it.
const BODY = (() => {
  const base = { id: 'evt_0001', type: 'invoice.paid', created: 1767225600, data: { object: { id: 'in_0001', amount: 4200, currency: 'eur', note: '' } } };
  const pad = 1024 - JSON.stringify(base).length;
  base.data.object.note = 'x'.repeat(pad);
  const text = JSON.stringify(base);
  if (Buffer.byteLength(text) !== 1024) throw new Error('body is not 1 KiB');
  return text;
})();

// A watchdog for the whole run: every phase is bounded, this bounds their sum.
const phases = scenarios.length * 3 * duration + 3 * warmup;
watchdog(phases + 180);

// ---------- load generation ----------

/** `paths`: connection i posts to paths[i mod paths.length] for the whole run. */
async function load(baseUrl, paths, connections, seconds) {
  let nextClient = 0;
  const request = (path) => ({ method: 'POST', path, headers: { 'content-type': 'application/json' }, body: BODY });
  const result = await withTimeout(
    autocannon({
      url: baseUrl,
      ...request(paths[0]),
      connections,
      duration: seconds,
      timeout: 10,
      setupClient: (client) => client.setRequests([request(paths[nextClient++ % paths.length])]),
    }),
    (seconds + 30) * 1000,
    'autocannon',
  );
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    // Sent but not answered when autocannon stopped: the server may still have stored them.
    inFlight: result.requests.sent - result.requests.total,
  };
}

// ---------- the run ----------

async function main() {
  if (!args['no-build']) {
    build(['packages/shared', 'packages/server']);
  }
  const m = machine();
  process.stdout.write(`machine: ${m.nproc} cores, ${m.cpu}, node ${m.node}, loadavg ${m.loadavg}\n`);
  process.stdout.write(`hookrelay: ${revision()}, 1 server process, pool ${args['pool-size'] ?? 'default'}; body ${Buffer.byteLength(BODY)} bytes of JSON\n`);

  const { pg, postmasterPid, stats, settings, version: pgVersion } = await startDurablePg();
  // WAL flush timing for the report (a reloadable setting; costs two clock reads per flush).
  await stats`ALTER SYSTEM SET track_wal_io_timing = on`;
  await stats`SELECT pg_reload_conf()`;
  process.stdout.write(`database: ${pgVersion}, fsync=${settings.fsync}, synchronous_commit=${settings.sync}, full_page_writes=${settings.fpw}\n`);

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-'));
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  const profDir = args['cpu-prof'] ? mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-prof-')) : undefined;
  const batchStatsFile = path.join(tmp, 'batch-stats.json');
  const otel = await startOtlpSink(args.otel);
  process.stdout.write(`tracing: ${args.otel ? 'on, every span exported (http/protobuf) to a local OTLP sink' : 'off'}\n`);
  const server = await startServer({
    databaseUrl: pg.url,
    dataDir: path.join(tmp, 'data'),
    nodeArgs: [
      ...(profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : []),
      ...(args['batch-stats'] ? ['--import', pathToFileURL(path.join(here, 'batch-stats.mjs')).href] : []),
    ],
    env: {
      HOOKRELAY_BENCH_BATCH_STATS: batchStatsFile,
      ...otel.env,
      ...(args['pool-size'] ? { HOOKRELAY_DB_POOL_SIZE: args['pool-size'] } : {}),
    },
  });
  const bare = await startChild('bare', [path.join(here, 'bare-server.mjs')], { ...process.env, DATABASE_URL: '' });
  const insert = await startChild('insert', [path.join(here, 'bare-server.mjs')], { ...process.env, DATABASE_URL: pg.url });

  const endpoints = [];
  for (let i = 0; i < Math.max(...scenarios.map((c) => c.endpoints)); i++) endpoints.push(await createInboundEndpoint(server.url, server.apiKey, 'cli'));
  const endpointIds = endpoints.map((e) => e.id);
  const pathsFor = (count) => endpoints.slice(0, count).map((e) => `/in/${e.token}`);

  let answered2xx = 0;
  let inFlightTotal = 0;
  let failures = 0;
  const account = (r) => {
    answered2xx += r.ok;
    inFlightTotal += r.inFlight;
    failures += r.non2xx + r.errors + r.timeouts;
  };

  if (warmup > 0) {
    process.stdout.write(`warming up both for ${warmup}s ...\n`);
    account(await load(server.url, pathsFor(1), 10, warmup));
    await load(bare.url, pathsFor(1), 10, warmup);
    await load(insert.url, pathsFor(1), 10, warmup);
  }

  const dbCounters = async () => {
    const [row] = await stats`
      SELECT (SELECT count(*) FROM inbound_messages WHERE inbound_endpoint_id = ANY(${endpointIds}::uuid[]))::int AS messages,
             (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::bigint AS commits,
             (SELECT wal_sync FROM pg_stat_wal)::bigint AS wal_syncs,
             (SELECT wal_sync_time FROM pg_stat_wal)::float8 AS wal_sync_ms`;
    return { messages: row.messages, commits: Number(row.commits), walSyncs: Number(row.wal_syncs), walSyncMs: row.wal_sync_ms };
  };
  const readBatchStats = async () => {
    if (!args['batch-stats']) return undefined;
    rmSync(batchStatsFile, { force: true });
    server.child.kill('SIGUSR2');
    for (let i = 0; i < 100; i++) {
      try {
        return JSON.parse(readFileSync(batchStatsFile, 'utf8'));
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    throw new Error('no batch statistics from the server');
  };

  const rows = [];
  for (const scenario of scenarios) {
    const { connections } = scenario;
    const paths = pathsFor(scenario.endpoints);
    process.stdout.write(`${scenario.label} connections, ${duration}s each: hookrelay ...`);
    await readBatchStats(); // reset
    const before = { db: await dbCounters(), server: treeCpuMs(server.child.pid), pg: treeCpuMs(postmasterPid), self: selfCpuMs() };
    const hr = await load(server.url, paths, connections, duration);
    await new Promise((r) => setTimeout(r, 200)); // let the last in-flight commits land
    const after = { db: await dbCounters(), server: treeCpuMs(server.child.pid), pg: treeCpuMs(postmasterPid), self: selfCpuMs() };
    const batches = await readBatchStats();
    account(hr);

    process.stdout.write(' bare ...');
    const bareBefore = { server: treeCpuMs(bare.child.pid), self: selfCpuMs() };
    const b = await load(bare.url, paths, connections, duration);
    const bareAfter = { server: treeCpuMs(bare.child.pid), self: selfCpuMs() };
    if (b.non2xx + b.errors + b.timeouts > 0) failures += b.non2xx + b.errors + b.timeouts;

    process.stdout.write(' INSERT handler ...');
    const insertBefore = { server: treeCpuMs(insert.child.pid), pg: treeCpuMs(postmasterPid), self: selfCpuMs() };
    const ins = await load(insert.url, paths, connections, duration);
    const insertAfter = { server: treeCpuMs(insert.child.pid), pg: treeCpuMs(postmasterPid), self: selfCpuMs() };
    if (ins.non2xx + ins.errors + ins.timeouts > 0) failures += ins.non2xx + ins.errors + ins.timeouts;
    process.stdout.write(' done\n');

    const stored = after.db.messages - before.db.messages;
    const perK = (ms, n) => (n > 0 ? (ms * 1000) / n : 0);
    rows.push({
      scenario,
      hr,
      bare: b,
      insert: ins,
      ratio: b.rps > 0 ? hr.rps / b.rps : 0,
      insertRatio: ins.rps > 0 ? hr.rps / ins.rps : 0,
      stored,
      perCommit: stored / Math.max(1, after.db.commits - before.db.commits),
      perWalSync: stored / Math.max(1, after.db.walSyncs - before.db.walSyncs),
      walSyncMs: (after.db.walSyncMs - before.db.walSyncMs) / Math.max(1, after.db.walSyncs - before.db.walSyncs),
      cpu: {
        server: perK(after.server - before.server, hr.ok),
        pg: perK(after.pg - before.pg, hr.ok),
        client: perK(after.self - before.self, hr.ok),
        bareServer: perK(bareAfter.server - bareBefore.server, b.ok),
        bareClient: perK(bareAfter.self - bareBefore.self, b.ok),
        insertServer: perK(insertAfter.server - insertBefore.server, ins.ok),
        insertPg: perK(insertAfter.pg - insertBefore.pg, ins.ok),
      },
      batches,
    });
  }

  const profiles = [];
  await server.stop(); // drains the batcher: every accepted message is committed
  const exported = await otel.summary();
  if (exported) process.stdout.write(`tracing: the sink received ${exported.exports} exports, ${(exported.bytes / 1048576).toFixed(1)} MiB\n`);
  if (profDir) profiles.push(...readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(profDir, f)));
  await bare.stop();
  await insert.stop();
  const [{ count: storedTotal }] = await stats`SELECT count(*)::int AS count FROM inbound_messages WHERE inbound_endpoint_id = ANY(${endpointIds}::uuid[])`;

  // ---------- report ----------
  const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const failed = (x) => x.non2xx + x.errors + x.timeouts;
  const table = [
    ['conns', 'hookrelay req/s', 'p50 / p99 ms', 'INSERT handler req/s', 'p50 / p99 ms', 'ratio', 'bare req/s', 'p50 / p99 ms', 'ratio', 'non-2xx+errors (hr / insert / bare)'],
    ...rows.map((r) => [
      r.scenario.label,
      fmt(r.hr.rps),
      `${r.hr.p50} / ${r.hr.p99}`,
      fmt(r.insert.rps),
      `${r.insert.p50} / ${r.insert.p99}`,
      `${fmt(r.insertRatio, 2)}×`,
      fmt(r.bare.rps),
      `${r.bare.p50} / ${r.bare.p99}`,
      `${fmt(r.ratio * 100, 1)} %`,
      `${failed(r.hr)} / ${failed(r.insert)} / ${failed(r.bare)}`,
    ]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  process.stdout.write('\n' + table.map((row) => row.map((cell, i) => cell.padStart(widths[i])).join('  ')).join('\n') + '\n\n');
  for (const r of rows) {
    process.stdout.write(
      `${r.scenario.label} conns: ${fmt(r.perCommit, 1)} messages per commit, ${fmt(r.perWalSync, 1)} per WAL fsync (${fmt(r.walSyncMs, 2)} ms each); CPU ms per 1,000 requests: ` +
        `hookrelay ${fmt(r.cpu.server)} + PostgreSQL ${fmt(r.cpu.pg)} + autocannon ${fmt(r.cpu.client)} ` +
        `(INSERT handler: ${fmt(r.cpu.insertServer)} + PostgreSQL ${fmt(r.cpu.insertPg)}; bare: server ${fmt(r.cpu.bareServer)} + autocannon ${fmt(r.cpu.bareClient)})\n`,
    );
    if (r.batches && r.batches.transactions > 0) {
      const sizes = Object.entries(r.batches.sizes).map(([size, n]) => [Number(size), n]).sort((a, b) => a[0] - b[0]);
      const pct = (p) => {
        let seen = 0;
        for (const [size, n] of sizes) if ((seen += n) >= p * r.batches.transactions) return size;
        return sizes.at(-1)[0];
      };
      process.stdout.write(
        `  batcher: ${fmt(r.batches.transactions)} transactions, ${fmt(r.batches.messages / r.batches.transactions, 1)} webhooks each ` +
          `(median ${pct(0.5)}, p90 ${pct(0.9)}, max ${sizes.at(-1)[0]}), ${fmt(r.batches.txMs / r.batches.transactions, 2)} ms per transaction ` +
          `(${fmt(r.batches.storeMs / r.batches.transactions, 2)} ms in its statements), busy ${fmt((r.batches.txMs / (duration * 1000)) * 100)} % of the time\n` +
          `  statements per transaction: ${Object.entries(r.batches.statements)
            .map(([label, s]) => `${label} ${fmt(s.ms / s.n, 2)} ms`)
            .join(', ')}\n` +
          `  server event loop: ${fmt(r.batches.loop.utilization * 100)} % busy, delay p50 ${fmt(r.batches.loop.delayP50Ms, 1)} ms / p99 ${fmt(r.batches.loop.delayP99Ms, 1)} ms beyond its 10 ms sampling tick\n`,
      );
    }
  }
  const missing = answered2xx - storedTotal;
  const extra = storedTotal - answered2xx;
  const lossOk = missing <= 0 && extra <= inFlightTotal;
  process.stdout.write(
    `\nstored inbound messages: ${fmt(storedTotal)}; 2xx answers: ${fmt(answered2xx)}; in flight when autocannon stopped: ${fmt(inFlightTotal)} ` +
      `→ ${lossOk ? 'no loss' : 'MISMATCH'}\n`,
  );
  /**
   * The floor of a missed target in CPU: at the target's rate the machine's cores allow so many
   * microseconds of CPU per request, all processes together. The bare handler and the load generator
   * take theirs whatever the server does; what is left is all a durable ingest may spend, server and
   * PostgreSQL included. Set against what hookrelay's server and PostgreSQL spent in this run.
   */
  const cpuBudget = (row, targetRps) => {
    const cores = os.availableParallelism();
    const budgetUs = (cores * 1e6) / targetRps;
    const fixedUs = row.cpu.bareServer + row.cpu.bareClient; // ms per 1,000 = µs per request
    const spentUs = row.cpu.server + row.cpu.pg;
    return (
      `  CPU budget at ${fmt(targetRps)} req/s on ${cores} cores: ${fmt(budgetUs)} µs per request; a handler that stores nothing and the load ` +
      `generator take ${fmt(fixedUs)}, leaving ${fmt(budgetUs - fixedUs)} µs for storing it durably; hookrelay's server and PostgreSQL spent ` +
      `${fmt(spentUs)} (${fmt(row.cpu.server)} + ${fmt(row.cpu.pg)}; the INSERT handler's PostgreSQL alone ${fmt(row.cpu.insertPg)})\n`
    );
  };
  let targetsMet = true;
  for (const target of TARGETS) {
    const row = rows.find((r) => r.scenario.connections === target.connections && r.scenario.endpoints === target.endpoints);
    const label = target.endpoints > 1 ? `${target.connections} connections over ${target.endpoints} endpoints` : `${target.connections} connections`;
    if (row === undefined) {
      process.stdout.write(`target ≥ ${target.ratio}× the INSERT handler at ${label}: not measured\n`);
      continue;
    }
    const met = row.insertRatio >= target.ratio;
    targetsMet &&= met;
    process.stdout.write(`target ≥ ${target.ratio}× the INSERT handler at ${label}: ${met ? 'met' : 'NOT met'} (${fmt(row.insertRatio, 2)}×)\n`);
    if (!met) process.stdout.write(cpuBudget(row, target.ratio * row.insert.rps));
  }
  process.stdout.write(`loadavg at the end: ${readFileSync('/proc/loadavg', 'utf8').trim()}\n`);
  if (profiles.length > 0) {
    process.stdout.write(`\nserver CPU profile: ${profiles.join(', ')}\n`);
    process.stdout.write(summarizeProfile(profiles[0]));
  }

  await cleanup();
  if (failures > 0) return `${failures} requests failed (non-2xx, errors or timeouts)`;
  if (!lossOk) return `stored ${storedTotal} messages for ${answered2xx} 2xx answers (${inFlightTotal} in flight at stops)`;
  if (args.enforce && !targetsMet) return 'a target is missed';
  return undefined;
}

main().then(
  async (failure) => {
    if (failure) await fail(failure);
    process.exit(0);
  },
  async (error) => fail(error instanceof Error ? (error.stack ?? error.message) : String(error)),
);
