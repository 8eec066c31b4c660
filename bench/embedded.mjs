#!/usr/bin/env node
// Embedded database start-up and memory benchmark: `hookrelay-server start` on PGlite (no
// DATABASE_URL) and `hookrelay dev` (the CLI and the server it starts), each on a new data dir and
// on the same data dir reopened. Targets: the server new ≤ 2 s, peak RSS ≤ 300 MB; reopened ≤ 1 s,
// idle RSS ≤ 200 MB; idle RSS after 10,000 webhooks ≤ 300 MB; dev forwarding ≤ 3 s new, ≤ 1.5 s
// reopened, CLI and server together ≤ 250 MB idle (their PSS added up: memory they take together,
// the node binary's shared pages once; the RSS sum is printed beside it).
//
//   pnpm bench:embedded [--runs 10] [--webhooks 10000] [--connections 10] [--idle-ms 2000]
//                       [--options SETTINGS] [--compare-options SETTINGS] [--no-dev] [--no-build]
//                       [--forwarded 20000] [--forward-rounds 4] [--server-main PATH]
//
// Per case: median and max over the runs of the time from spawn to the server's listening line
// (to the CLI's "connected (...)" line for dev), the peak RSS (VmHWM) at that moment and the RSS
// after --idle-ms with nothing to do (for dev: the CLI's and the server's added up). Then one
// server on a new data dir ingests --webhooks 1 KiB webhooks (autocannon, --connections) into a
// cli-mode endpoint: requests/s, p50/p99, the server's CPU time per 1,000 webhooks, RSS idle
// afterwards, data dir size. --options is passed
// as HOOKRELAY_PGLITE_OPTIONS to every server started here (dev's server takes none of the
// caller's HOOKRELAY_* settings: it runs the defaults); --compare-options runs the ingest once more with
// those settings instead (repeatable; e.g. "shared_buffers=128MB wasm_tier=optimizing", PGlite's
// and V8's own defaults), in the same run.
// --forwarded N (default 20,000; 0 skips it) then measures the data dir's size over time: one server
// on a new data dir forwards N webhooks of 1 KiB to a local app in --forward-rounds rounds (a
// forward-mode endpoint, the server's own delivery worker); after each round the round's messages
// are deleted through the API and the sweepers (every second here) remove their payloads. pgdata's
// size (base/ and pg_wal/ apart) is printed at the start, after each round's deliveries and after
// its deletes were swept: live data stays small, so a data dir that reuses space stays level.
// --server-main measures another build's server (an older commit's dist/bin/hookrelay-server.js, or
// this tree's unbundled dist/main.js; use it with --no-dev: dev runs this tree's CLI and server).
// Builds first (tsc -b, the bundle and the template data dir) unless --no-build. Exit code 1 when a run fails or a webhook is not answered 200.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { build, cleanups, cleanup, delay, fail, fmt, machine, procTimes, revision, root, selfSignedCert, serveOnLoopback, serverDir, table, usageText, watchdog, withTimeout } from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    webhooks: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '10' },
    'idle-ms': { type: 'string', default: '2000' },
    options: { type: 'string' },
    'compare-options': { type: 'string', multiple: true, default: [] },
    'no-dev': { type: 'boolean', default: false },
    forwarded: { type: 'string', default: '20000' },
    'forward-rounds': { type: 'string', default: '4' },
    'server-main': { type: 'string' },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 31));
  process.exit(0);
}
const runs = Number(args.runs);
const webhooks = Number(args.webhooks);
const connections = Number(args.connections);
const idleMs = Number(args['idle-ms']);
const forwarded = Number(args.forwarded);
const forwardRounds = Number(args['forward-rounds']);
for (const [name, value] of [['runs', runs], ['webhooks', webhooks], ['connections', connections], ['idle-ms', idleMs], ['forwarded', forwarded], ['forward-rounds', forwardRounds]]) {
  if (!Number.isInteger(value) || value < 0 || (name !== 'webhooks' && name !== 'forwarded' && value < 1)) await fail(`--${name} must be a positive integer`);
}
watchdog(3600);

const SERVER_MAIN = args['server-main'] === undefined ? path.join(serverDir, 'dist/bin/hookrelay-server.js') : path.resolve(args['server-main']);
const CLI_BIN = path.join(root, 'packages/cli/bin/run.js');
const TARGETS = { newMs: 2000, newPeakMb: 300, reopenMs: 1000, reopenIdleMb: 200, afterIdleMb: 300, devNewMs: 3000, devReopenMs: 1500, devIdleMb: 250 };
const BODY = JSON.stringify({ type: 'bench.embedded', data: { pad: 'x'.repeat(980) } });

if (!args['no-build']) {
  build(['packages/shared', 'packages/server', 'packages/cli']);
  execFileSync(process.execPath, [path.join(serverDir, 'scripts/build-pglite-template.mjs')], { cwd: root, stdio: 'inherit', timeout: 300_000 });
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-embedded-'));
cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
let dirCount = 0;
const newDir = (what) => path.join(tmp, `${what}-${++dirCount}`);

/**
 * VmHWM and VmRSS of a process, and its PSS (its own pages, plus its share of the pages it shares
 * with other processes: the node binary's, mapped by the CLI and its server alike), in MB;
 * undefined once it is gone.
 */
function memory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (text, name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) / 1024;
    return { peak: field(status, 'VmHWM'), rss: field(status, 'VmRSS'), pss: field(rollup, 'Pss') };
  } catch {
    return undefined;
  }
}

/** The pids of a process's children (the server that `hookrelay dev` starts). */
function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const baseEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? os.homedir(), NO_COLOR: '1' };
const pgliteEnv = args.options === undefined ? {} : { HOOKRELAY_PGLITE_OPTIONS: args.options };

/**
 * Spawns a process and resolves once `ready` matches its output: milliseconds since the spawn, and a
 * handle to measure and stop it. Output is drained (and kept for errors).
 */
async function spawnUntil(name, argv, env, ready) {
  const started = performance.now();
  const child = spawn(process.execPath, argv, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }, 30_000);
      await exited;
      clearTimeout(timer);
    }
    return exited;
  };
  cleanups.push(stop);
  let output = '';
  const ms = await withTimeout(
    new Promise((resolve, reject) => {
      const onData = (chunk) => {
        output = (output + chunk).slice(-20_000);
        if (ready.test(output)) resolve(performance.now() - started);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      exited.then(({ code, signal }) => reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output}`)));
    }),
    120_000,
    `${name} start`,
  );
  return { child, ms, stop, output: () => output, exited };
}

/** The processes to measure: the spawned one and, for dev, the server it started. */
function measure(pids) {
  let peak = 0;
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    const m = memory(pid);
    if (!m) throw new Error(`process ${pid} is gone`);
    peak += m.peak;
    rss += m.rss;
    pss += m.pss;
  }
  return { peak, rss, pss };
}

async function runServerStart(dataDir) {
  const env = { ...baseEnv, ...pgliteEnv, HOOKRELAY_PORT: '0', HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_LOG_LEVEL: 'warn', HOOKRELAY_API_RATE_LIMIT: '0' };
  const server = await spawnUntil('hookrelay-server', [SERVER_MAIN, 'start'], env, /hookrelay-server listening on http:\/\/\S+\n/);
  const atReady = measure([server.child.pid]);
  await delay(idleMs);
  const idle = measure([server.child.pid]);
  const { code } = await server.stop();
  if (code !== 0) throw new Error(`hookrelay-server exited with ${code}:\n${server.output()}`);
  return { ms: server.ms, peak: Math.max(atReady.peak, idle.peak), idle: idle.rss, idlePss: idle.pss };
}

let forwardTarget;
async function runDev(dataDir) {
  if (!forwardTarget) {
    const receiver = createServer((req, res) => req.resume().on('end', () => res.end('ok')));
    await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => receiver.close(resolve)));
    forwardTarget = receiver.address().port;
  }
  const port = await freePort();
  const env = { ...baseEnv, HOOKRELAY_CONFIG_DIR: path.join(dataDir, 'config') };
  const dev = await spawnUntil('hookrelay dev', [CLI_BIN, 'dev', '--forward-to', String(forwardTarget), '--port', String(port), '--data-dir', dataDir], env, /connected \((websocket|polling)\)/);
  const pids = [dev.child.pid, ...childrenOf(dev.child.pid)];
  if (pids.length !== 2) throw new Error(`hookrelay dev: expected one server process, found ${pids.length - 1}`);
  const atReady = measure(pids);
  await delay(idleMs);
  const idle = measure(pids);
  const { code } = await dev.stop();
  if (code !== 0) throw new Error(`hookrelay dev exited with ${code}:\n${dev.output()}`);
  return { ms: dev.ms, peak: Math.max(atReady.peak, idle.peak), idle: idle.rss, idlePss: idle.pss };
}

async function series(what, run, reuse) {
  const results = [];
  const shared = newDir(what);
  if (reuse) await run(shared); // makes the data dir: not a reopening, not counted
  for (let i = 0; i < runs; i++) results.push(await run(reuse ? shared : newDir(what)));
  process.stderr.write(`${what}: ${results.map((r) => `${Math.round(r.ms)} ms`).join(', ')}\n`);
  return results;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

function summary(name, results) {
  const col = (key) => results.map((r) => r[key]);
  return {
    name,
    msMedian: median(col('ms')),
    msMax: Math.max(...col('ms')),
    peakMedian: median(col('peak')),
    peakMax: Math.max(...col('peak')),
    idleMedian: median(col('idle')),
    idleMax: Math.max(...col('idle')),
    idlePssMax: Math.max(...col('idlePss')),
  };
}

async function ingest(options) {
  const dataDir = newDir('ingest');
  const apiKey = `hr_${randomBytes(20).toString('hex')}`;
  const env = {
    ...baseEnv,
    ...(options === undefined ? {} : { HOOKRELAY_PGLITE_OPTIONS: options }),
    HOOKRELAY_PORT: '0',
    HOOKRELAY_DATA_DIR: dataDir,
    HOOKRELAY_LOG_LEVEL: 'warn',
    HOOKRELAY_API_RATE_LIMIT: '0',
    HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
  };
  const server = await spawnUntil('hookrelay-server', [SERVER_MAIN, 'start'], env, /hookrelay-server listening on http:\/\/\S+\n/);
  const url = /listening on (http:\/\/\S+)/.exec(server.output())[1];
  const created = await fetch(`${url}/v1/inbound-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench embedded', mode: 'cli' }),
  });
  if (created.status !== 201) throw new Error(`create inbound endpoint: ${created.status}`);
  const token = (await created.json()).data.secret_token;
  const cpuBefore = procTimes(server.child.pid).cpuMs;
  const result = await withTimeout(
    autocannon({
      url: `${url}/in/${token}`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: BODY,
      connections,
      amount: webhooks,
      timeout: 10,
    }),
    600_000,
    'autocannon',
  );
  const ok = result['2xx'];
  if (ok !== webhooks || result.errors > 0 || result.timeouts > 0) throw new Error(`ingest: ${ok} of ${webhooks} answered 2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  // CPU time of the server per webhook: steadier than requests/s on a machine that others share.
  const cpuMsPer1000 = ((procTimes(server.child.pid).cpuMs - cpuBefore) * 1000) / webhooks;
  await delay(idleMs);
  const after = measure([server.child.pid]);
  const size = Number(execFileSync('du', ['-sk', path.join(dataDir, 'pgdata')], { encoding: 'utf8' }).split('\t')[0]) / 1024;
  const { code } = await server.stop();
  if (code !== 0) throw new Error(`hookrelay-server exited with ${code}:\n${server.output()}`);
  return { options: options ?? '(defaults)', rps: webhooks / (result.duration || 1), p50: result.latency.p50, p99: result.latency.p99, cpuMsPer1000, peak: after.peak, idle: after.rss, sizeMb: size };
}

/** pgdata's size in MB: all of it, its tables and indexes (base/), its WAL (pg_wal/). */
function pgdataSize(pgdata) {
  const du = (dir) => Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) / 1024;
  return { total: du(pgdata), base: du(path.join(pgdata, 'base')), wal: du(path.join(pgdata, 'pg_wal')) };
}

async function forwardSoak() {
  const dataDir = newDir('forward');
  const apiKey = `hr_${randomBytes(20).toString('hex')}`;
  let received = 0;
  // Forwarding URLs are https: a self-signed local app, trusted through HOOKRELAY_TLS_CA_FILE.
  const { key, cert, certFile } = selfSignedCert(tmp);
  const app = https.createServer({ key, cert, keepAliveTimeout: 60_000 }, (req, res) => req.resume().on('end', () => {
    received += 1;
    res.end('ok');
  }));
  const appPort = await serveOnLoopback(app, 'forward target');
  const env = {
    ...baseEnv,
    ...pgliteEnv,
    HOOKRELAY_PORT: '0',
    HOOKRELAY_DATA_DIR: dataDir,
    HOOKRELAY_LOG_LEVEL: 'warn',
    HOOKRELAY_API_RATE_LIMIT: '0',
    HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
    HOOKRELAY_TLS_CA_FILE: certFile,
    HOOKRELAY_SWEEP_INTERVAL_SECONDS: '1',
  };
  const server = await spawnUntil('hookrelay-server', [SERVER_MAIN, 'start'], env, /hookrelay-server listening on http:\/\/\S+\n/);
  const url = /listening on (http:\/\/\S+)/.exec(server.output())[1];
  const api = async (method, route, body) => {
    const res = await fetch(`${url}${route}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return (await res.json()).data;
  };
  const endpoint = await api('POST', '/v1/inbound-endpoints', { name: 'bench forward', url: `https://127.0.0.1:${appPort}/hooks` });
  const pgdata = path.join(dataDir, 'pgdata');
  const started = performance.now();
  const rows = [];
  const sample = (phase, sent, deleted) => {
    rows.push({ phase, s: (performance.now() - started) / 1000, sent, deleted, ...pgdataSize(pgdata) });
    process.stderr.write(`forward: ${phase}: ${fmt(rows.at(-1).total, 1)} MB\n`);
  };
  sample('start', 0, 0);
  let sent = 0;
  let deleted = 0;
  for (let round = 1; round <= forwardRounds; round++) {
    const amount = Math.round((forwarded * round) / forwardRounds) - sent;
    const result = await withTimeout(
      autocannon({ url: `${url}/in/${endpoint.secret_token}`, method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, connections, amount, timeout: 10 }),
      600_000,
      'autocannon',
    );
    if (result['2xx'] !== amount || result.errors > 0 || result.timeouts > 0) throw new Error(`forward round ${round}: ${result['2xx']} of ${amount} answered 2xx`);
    sent += amount;
    await withTimeout((async () => { while (received < sent) await delay(100); })(), 600_000, `round ${round}'s deliveries`);
    sample(`round ${round}: delivered`, sent, deleted);
    // Deleted ones leave the list: read the first page until it is empty.
    for (;;) {
      const page = await fetch(`${url}/v1/inbound-endpoints/${endpoint.id}/messages?limit=200`, { headers: { authorization: `Bearer ${apiKey}` } });
      const ids = (await page.json()).data.map((m) => m.id);
      if (ids.length === 0) break;
      for (let i = 0; i < ids.length; i += 100) await api('POST', '/v1/inbound-messages/delete-batch', { message_ids: ids.slice(i, i + 100) });
      deleted += ids.length;
    }
    // The payload sweeper removes 500 per second here; then a few rounds more for the upkeep.
    await delay((Math.ceil(amount / 500) + 3) * 1000);
    sample(`round ${round}: deleted, swept`, sent, deleted);
  }
  const { code } = await server.stop();
  if (code !== 0) throw new Error(`hookrelay-server exited with ${code}:\n${server.output()}`);
  sample('stopped', sent, deleted);
  return rows;
}

try {
  const info = machine();
  process.stderr.write(`embedded: ${info.nproc} cores, ${info.cpu}, Node ${info.node}, load ${info.loadavg}, tree ${revision(['packages/server', 'packages/shared', 'packages/cli'], 'source')}\n`);
  const rows = [];
  rows.push(summary('server start, new data dir', await series('server-new', runServerStart, false)));
  rows.push(summary('server start, reopened', await series('server-reopen', runServerStart, true)));
  if (!args['no-dev']) {
    rows.push(summary('hookrelay dev, new data dir', await series('dev-new', runDev, false)));
    rows.push(summary('hookrelay dev, reopened', await series('dev-reopen', runDev, true)));
  }
  const ingests = [];
  if (webhooks > 0) {
    ingests.push(await ingest(args.options));
    for (const options of args['compare-options']) ingests.push(await ingest(options));
  }
  const forwardRows = forwarded > 0 ? await forwardSoak() : [];
  const endLoad = machine().loadavg;

  const f1 = (n) => fmt(n, 0);
  process.stdout.write(`\n${runs} runs each; idle = RSS after ${idleMs} ms; dev = the CLI and its server added up (PSS: pages they share counted once); load at the end ${endLoad}\n\n`);
  process.stdout.write(
    table([
      ['case', 'ms median', 'ms max', 'peak MB median', 'peak MB max', 'idle MB median', 'idle MB max', 'idle PSS MB max'],
      ...rows.map((r) => [r.name, f1(r.msMedian), f1(r.msMax), f1(r.peakMedian), f1(r.peakMax), f1(r.idleMedian), f1(r.idleMax), f1(r.idlePssMax)]),
    ]),
  );
  if (ingests.length > 0) {
    process.stdout.write(`\n${fmt(webhooks)} webhooks of 1 KiB at ${connections} connections into a new data dir, then idle ${idleMs} ms:\n\n`);
    process.stdout.write(
      table([
        ['HOOKRELAY_PGLITE_OPTIONS', 'req/s', 'p50 ms', 'p99 ms', 'server CPU ms / 1,000', 'peak MB', 'idle MB', 'pgdata MB'],
        ...ingests.map((r) => [r.options, f1(r.rps), f1(r.p50), f1(r.p99), f1(r.cpuMsPer1000), f1(r.peak), f1(r.idle), f1(r.sizeMb)]),
      ]),
    );
  }
  if (forwardRows.length > 0) {
    process.stdout.write(`\n${fmt(forwarded)} webhooks of 1 KiB forwarded in ${forwardRounds} rounds, each round's messages then deleted and swept; pgdata's size:\n\n`);
    process.stdout.write(
      table([
        ['when', 's', 'forwarded', 'deleted', 'pgdata MB', 'base/ MB', 'pg_wal/ MB'],
        ...forwardRows.map((r) => [r.phase, f1(r.s), fmt(r.sent), fmt(r.deleted), fmt(r.total, 1), fmt(r.base, 1), fmt(r.wal, 1)]),
      ]),
    );
  }
  const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
  const checks = [];
  const server = { fresh: byName['server start, new data dir'], reopened: byName['server start, reopened'] };
  checks.push([`server: new ≤ ${TARGETS.newMs} ms (median)`, server.fresh.msMedian <= TARGETS.newMs]);
  checks.push([`server: new peak ≤ ${TARGETS.newPeakMb} MB (max)`, server.fresh.peakMax <= TARGETS.newPeakMb]);
  checks.push([`server: reopened ≤ ${TARGETS.reopenMs} ms (median)`, server.reopened.msMedian <= TARGETS.reopenMs]);
  checks.push([`server: reopened idle ≤ ${TARGETS.reopenIdleMb} MB (max)`, server.reopened.idleMax <= TARGETS.reopenIdleMb]);
  const dev = { fresh: byName['hookrelay dev, new data dir'], reopened: byName['hookrelay dev, reopened'] };
  if (dev.fresh) {
    checks.push([`dev: new ≤ ${TARGETS.devNewMs} ms (median)`, dev.fresh.msMedian <= TARGETS.devNewMs]);
    checks.push([`dev: reopened ≤ ${TARGETS.devReopenMs} ms (median)`, dev.reopened.msMedian <= TARGETS.devReopenMs]);
    // PSS: the two processes' RSS added up counts the node binary's pages, which they share, twice.
    checks.push([`dev: idle PSS (CLI + server) ≤ ${TARGETS.devIdleMb} MB (max of both cases)`, Math.max(dev.fresh.idlePssMax, dev.reopened.idlePssMax) <= TARGETS.devIdleMb]);
  }
  if (ingests.length > 0) checks.push([`after ${fmt(webhooks)} webhooks idle ≤ ${TARGETS.afterIdleMb} MB`, ingests[0].idle <= TARGETS.afterIdleMb]);
  process.stdout.write(`\n${checks.map(([what, met]) => `${met ? 'met    ' : 'NOT met'}  ${what}`).join('\n')}\n`);
} catch (error) {
  await fail(error instanceof Error ? error.message : String(error));
}
await cleanup();
