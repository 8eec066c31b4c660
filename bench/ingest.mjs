#!/usr/bin/env node
// Ingestion throughput benchmark (issue 3): the real hookrelay server process on a throwaway,
// durable PostgreSQL (fsync and synchronous_commit on) against a bare Fastify handler that answers
// 200, both driven by autocannon in the same run with a 1 KiB JSON body.
//
//   pnpm bench:ingest [--duration 10] [--connections 10,100] [--warmup 3] [--pool-size N]
//                     [--batch-stats] [--cpu-prof] [--enforce] [--no-build]
//
// Prints, per connection count: requests/s and p50/p99 latency of both, their ratio, non-2xx and
// errors (must be 0), and where the CPU went (ms per 1,000 requests: server, PostgreSQL, client).
// Afterwards it checks that every 2xx answer is a stored inbound message (no loss).
// Exit code: 1 when a request failed, a message is missing or a step timed out; with --enforce also
// when the ratio is below 50 %.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { startPgCluster } from '@hookrelay/server/testing';

const TARGET_RATIO = 0.5;
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const serverDir = path.dirname(createRequire(import.meta.url).resolve('@hookrelay/server/package.json'));

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10,100' },
    warmup: { type: 'string', default: '3' },
    'pool-size': { type: 'string' },
    'batch-stats': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    enforce: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 13).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
  process.exit(0);
}
const duration = Number(args.duration);
const warmup = Number(args.warmup);
const connectionCounts = args.connections.split(',').map(Number);
if (!(duration > 0) || !(warmup >= 0) || connectionCounts.some((c) => !(Number.isInteger(c) && c > 0))) {
  process.stderr.write('usage: --duration SECONDS (>0) --warmup SECONDS (>=0) --connections N[,N...]\n');
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

// ---------- bounded helpers ----------

const cleanups = [];
let cleaningUp = false;
async function cleanup() {
  if (cleaningUp) return;
  cleaningUp = true;
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (error) {
      process.stderr.write(`cleanup: ${error instanceof Error ? error.message : error}\n`);
    }
  }
}
async function fail(message) {
  process.stderr.write(`bench: ${message}\n`);
  await cleanup();
  process.exit(1);
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void fail(`interrupted by ${signal}`));

// A watchdog for the whole run: every phase is bounded, this bounds their sum.
const phases = connectionCounts.length * 2 * duration + 2 * warmup;
const watchdog = setTimeout(() => void fail(`run exceeded ${phases + 180}s`), (phases + 180) * 1000);
watchdog.unref();

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

/** Spawns a node child, resolves with its URL once it prints `... listening on http://...`. */
async function startChild(name, nodeArgs, env) {
  const child = spawn(process.execPath, nodeArgs, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  cleanups.push(() => stopChild(child, exited));
  const url = await withTimeout(
    new Promise((resolve, reject) => {
      const onData = (chunk) => {
        output += chunk;
        const match = /listening on (http:\/\/[^\s]+)/.exec(output);
        if (match) resolve(match[1]);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', (chunk) => (output += chunk));
      exited.then(({ code, signal }) => reject(new Error(`${name} exited (${code ?? signal}) before listening:\n${output}`)));
    }),
    30_000,
    `${name} start`,
  );
  // Keep draining its output (warnings) so the pipe never blocks it.
  child.stdout.on('data', (chunk) => process.stderr.write(`[${name}] ${chunk}`));
  child.stderr.on('data', (chunk) => process.stderr.write(`[${name}] ${chunk}`));
  return { child, url, exited, stop: () => stopChild(child, exited) };
}

async function stopChild(child, exited) {
  if (child.exitCode !== null || child.signalCode !== null) return exited;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 35_000);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

// ---------- CPU accounting from /proc (Linux) ----------

const CLK_TCK = 100;
function procTimes(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK };
  } catch {
    return undefined;
  }
}
/** CPU ms of a process and all its descendants (PostgreSQL: the postmaster and its backends). */
function treeCpuMs(rootPid) {
  const all = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const t = procTimes(Number(entry));
    if (t) all.set(Number(entry), t);
  }
  let total = 0;
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop();
    total += all.get(pid)?.cpuMs ?? 0;
    for (const [child, t] of all) if (t.ppid === pid) stack.push(child);
  }
  return total;
}
const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

// ---------- load generation ----------

async function load(url, connections, seconds) {
  const result = await withTimeout(
    autocannon({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
      connections,
      duration: seconds,
      timeout: 10,
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

function machine() {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  return { nproc: os.availableParallelism(), cpu, node: process.version, loadavg: readFileSync('/proc/loadavg', 'utf8').trim() };
}

function revision() {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', timeout: 5000 }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'packages/server', 'packages/shared'], { cwd: root, encoding: 'utf8', timeout: 5000 }).trim();
    return dirty ? `${commit} with uncommitted server changes` : commit;
  } catch {
    return 'unknown revision';
  }
}

// ---------- the run ----------

async function main() {
  if (!args['no-build']) {
    // Incremental and quick when up to date: never measure a stale dist/.
    execFileSync(path.join(root, 'node_modules/.bin/tsc'), ['-b', 'packages/shared', 'packages/server'], { cwd: root, stdio: 'inherit', timeout: 300_000 });
  }
  const m = machine();
  process.stdout.write(`machine: ${m.nproc} cores, ${m.cpu}, node ${m.node}, loadavg ${m.loadavg}\n`);
  process.stdout.write(`hookrelay: ${revision()}, 1 server process, pool ${args['pool-size'] ?? 'default'}; body ${Buffer.byteLength(BODY)} bytes of JSON\n`);

  const pg = await startPgCluster(process.env, { durable: true });
  cleanups.push(() => pg.stop());
  const postmasterPid = Number(readFileSync(path.join(pg.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const stats = postgres(pg.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  cleanups.push(() => stats.end({ timeout: 5 }));
  const [settings] = await stats`SELECT version() AS version, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync, current_setting('full_page_writes') AS fpw`;
  if (settings.fsync !== 'on' || settings.sync !== 'on') throw new Error(`PostgreSQL is not durable: fsync=${settings.fsync} synchronous_commit=${settings.sync}`);
  // WAL flush timing for the report (a reloadable setting; costs two clock reads per flush).
  await stats`ALTER SYSTEM SET track_wal_io_timing = on`;
  await stats`SELECT pg_reload_conf()`;
  const pgVersion = /PostgreSQL [\d.]+/.exec(settings.version)?.[0] ?? settings.version;
  process.stdout.write(`database: ${pgVersion}, fsync=${settings.fsync}, synchronous_commit=${settings.sync}, full_page_writes=${settings.fpw}\n`);

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-'));
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  const apiKey = `hr_${randomBytes(20).toString('hex')}`;
  const profDir = args['cpu-prof'] ? mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-prof-')) : undefined;
  const batchStatsFile = path.join(tmp, 'batch-stats.json');
  const nodeArgs = [
    ...(profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : []),
    ...(args['batch-stats'] ? ['--import', pathToFileURL(path.join(here, 'batch-stats.mjs')).href] : []),
    path.join(serverDir, 'dist/main.js'),
    'start',
  ];
  const server = await startChild('hookrelay', nodeArgs, {
    ...process.env,
    HOOKRELAY_HOST: '127.0.0.1',
    HOOKRELAY_PORT: '0',
    DATABASE_URL: pg.url,
    HOOKRELAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
    HOOKRELAY_DATA_DIR: path.join(tmp, 'data'),
    HOOKRELAY_LOG_LEVEL: 'warn',
    HOOKRELAY_BENCH_BATCH_STATS: batchStatsFile,
    ...(args['pool-size'] ? { HOOKRELAY_DB_POOL_SIZE: args['pool-size'] } : {}),
  });
  const bare = await startChild('bare', [path.join(here, 'bare-server.mjs')], { ...process.env });

  const created = await withTimeout(
    fetch(`${server.url}/v1/inbound-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', mode: 'cli' }),
    }),
    10_000,
    'create inbound endpoint',
  );
  const createdBody = await created.json();
  if (created.status !== 201 && created.status !== 200) throw new Error(`create inbound endpoint: ${created.status} ${JSON.stringify(createdBody)}`);
  const { id: endpointId, secret_token: token } = createdBody.data;
  const ingestUrl = `${server.url}/in/${token}`;
  const bareUrl = `${bare.url}/in/${token}`;

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
    account(await load(ingestUrl, 10, warmup));
    await load(bareUrl, 10, warmup);
  }

  const dbCounters = async () => {
    const [row] = await stats`
      SELECT (SELECT count(*) FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId})::int AS messages,
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
  for (const connections of connectionCounts) {
    process.stdout.write(`${connections} connections, ${duration}s each: hookrelay ...`);
    await readBatchStats(); // reset
    const before = { db: await dbCounters(), server: treeCpuMs(server.child.pid), pg: treeCpuMs(postmasterPid), self: selfCpuMs() };
    const hr = await load(ingestUrl, connections, duration);
    await new Promise((r) => setTimeout(r, 200)); // let the last in-flight commits land
    const after = { db: await dbCounters(), server: treeCpuMs(server.child.pid), pg: treeCpuMs(postmasterPid), self: selfCpuMs() };
    const batches = await readBatchStats();
    account(hr);

    process.stdout.write(' bare ...');
    const bareBefore = { server: treeCpuMs(bare.child.pid), self: selfCpuMs() };
    const b = await load(bareUrl, connections, duration);
    const bareAfter = { server: treeCpuMs(bare.child.pid), self: selfCpuMs() };
    if (b.non2xx + b.errors + b.timeouts > 0) failures += b.non2xx + b.errors + b.timeouts;
    process.stdout.write(' done\n');

    const stored = after.db.messages - before.db.messages;
    const perK = (ms, n) => (n > 0 ? (ms * 1000) / n : 0);
    rows.push({
      connections,
      hr,
      bare: b,
      ratio: b.rps > 0 ? hr.rps / b.rps : 0,
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
      },
      batches,
    });
  }

  const profiles = [];
  await server.stop(); // drains the batcher: every accepted message is committed
  if (profDir) profiles.push(...readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(profDir, f)));
  await bare.stop();
  const [{ count: storedTotal }] = await stats`SELECT count(*)::int AS count FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId}`;

  // ---------- report ----------
  const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const table = [
    ['conns', 'hookrelay req/s', 'p50 / p99 ms', 'bare req/s', 'p50 / p99 ms', 'ratio', 'non-2xx+errors (hr / bare)'],
    ...rows.map((r) => [
      String(r.connections),
      fmt(r.hr.rps),
      `${r.hr.p50} / ${r.hr.p99}`,
      fmt(r.bare.rps),
      `${r.bare.p50} / ${r.bare.p99}`,
      `${fmt(r.ratio * 100, 1)} %`,
      `${r.hr.non2xx + r.hr.errors + r.hr.timeouts} / ${r.bare.non2xx + r.bare.errors + r.bare.timeouts}`,
    ]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  process.stdout.write('\n' + table.map((row) => row.map((cell, i) => cell.padStart(widths[i])).join('  ')).join('\n') + '\n\n');
  for (const r of rows) {
    process.stdout.write(
      `${r.connections} conns: ${fmt(r.perCommit, 1)} messages per commit, ${fmt(r.perWalSync, 1)} per WAL fsync (${fmt(r.walSyncMs, 2)} ms each); CPU ms per 1,000 requests: ` +
        `hookrelay ${fmt(r.cpu.server)} + PostgreSQL ${fmt(r.cpu.pg)} + autocannon ${fmt(r.cpu.client)} (bare: server ${fmt(r.cpu.bareServer)} + autocannon ${fmt(r.cpu.bareClient)})\n`,
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
  const worst = Math.min(...rows.map((r) => r.ratio));
  process.stdout.write(`target ≥ ${TARGET_RATIO * 100} % of the bare handler: ${worst >= TARGET_RATIO ? 'met' : `NOT met (lowest ${fmt(worst * 100, 1)} %)`}\n`);
  process.stdout.write(`loadavg at the end: ${readFileSync('/proc/loadavg', 'utf8').trim()}\n`);
  if (profiles.length > 0) {
    process.stdout.write(`\nserver CPU profile: ${profiles.join(', ')}\n`);
    process.stdout.write(summarizeProfile(profiles[0]));
  }

  await cleanup();
  if (failures > 0) return `${failures} requests failed (non-2xx, errors or timeouts)`;
  if (!lossOk) return `stored ${storedTotal} messages for ${answered2xx} 2xx answers (${inFlightTotal} in flight at stops)`;
  if (args.enforce && worst < TARGET_RATIO) return `ratio ${fmt(worst * 100, 1)} % is below the ${TARGET_RATIO * 100} % target`;
  return undefined;
}

/** Self time per function (top 25) and per package of a .cpuprofile. */
function summarizeProfile(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const dt = new Map();
  for (let i = 0; i < profile.samples.length; i++) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const total = [...dt.values()].reduce((a, b) => a + b, 0);
  const byFn = new Map();
  const byArea = new Map();
  for (const node of profile.nodes) {
    const us = dt.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const short = url.replace(/^file:\/\//, '').replace(/.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '').replace(root + '/', '');
    const key = `${functionName || '(anonymous)'} ${short ? `${short}:${lineNumber + 1}` : ''}`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
    const area = !url ? functionName : url.startsWith('node:') ? 'node core' : /node_modules/.test(url) ? short.split('/').slice(0, short.startsWith('@') ? 2 : 1).join('/') : 'hookrelay';
    byArea.set(area, (byArea.get(area) ?? 0) + us);
  }
  const lines = (map, n) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${k}`)
      .join('\n');
  return `self time by area:\n${lines(byArea, 12)}\nself time by function (top 25):\n${lines(byFn, 25)}\n`;
}

main().then(
  async (failure) => {
    if (failure) await fail(failure);
    process.exit(0);
  },
  async (error) => fail(error instanceof Error ? (error.stack ?? error.message) : String(error)),
);
