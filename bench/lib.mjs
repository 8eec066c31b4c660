// Shared helpers of the benchmarks in bench/ (plain ESM, no build step): bounded waits, child
// processes that are always cleaned up, CPU accounting from /proc, a durable throwaway PostgreSQL,
// a migrated one for the benchmarks of single queries, the real server process, and a summary of
// V8 CPU profiles.
import { execFileSync, spawn } from 'node:child_process';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import https from 'node:https';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { startPgCluster } from '@hookrelay/server/testing';

export const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, '..');
export const serverDir = path.dirname(createRequire(import.meta.url).resolve('@hookrelay/server/package.json'));

/** The header comment of a benchmark script (its lines 2..`lines`), as its --help. */
export function usageText(scriptUrl, lines) {
  return (
    readFileSync(fileURLToPath(scriptUrl), 'utf8')
      .split('\n')
      .slice(1, lines)
      .map((l) => l.replace(/^\/\/ ?/, ''))
      .join('\n') + '\n'
  );
}

/**
 * The flags of a benchmark (node:util parseArgs `options`) with --no-build and --help added;
 * --help prints the script's header comment (its lines 2..`usageLines`) and exits.
 */
export function benchArgs(scriptUrl, usageLines, options) {
  const { values } = parseArgs({
    options: { ...options, 'no-build': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
  });
  if (values.help) {
    process.stdout.write(usageText(scriptUrl, usageLines));
    process.exit(0);
  }
  return values;
}

// ---------- cleanup and bounded waits ----------

/** Functions run (last registered first) by `cleanup`: children, clusters, temp dirs. */
export const cleanups = [];
let cleaningUp = false;
export async function cleanup() {
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
export async function fail(message) {
  process.stderr.write(`bench: ${message}\n`);
  await cleanup();
  process.exit(1);
}
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void fail(`interrupted by ${signal}`));

/**
 * Runs a benchmark's `main`: exit 0 when it resolves to nothing, else `fail` with what it resolved
 * to (its problems) or with the error it threw.
 */
export function runBench(main) {
  main().then(
    async (failure) => {
      if (failure) await fail(failure);
      process.exit(0);
    },
    async (error) => fail(error instanceof Error ? (error.stack ?? error.message) : String(error)),
  );
}

/** Bounds the whole run: `fail` after `seconds`. */
export function watchdog(seconds) {
  const timer = setTimeout(() => void fail(`run exceeded ${Math.round(seconds)}s`), seconds * 1000);
  timer.unref();
  return timer;
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

export const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `predicate` every `everyMs` until it holds (true) or `timeoutMs` passed (false). */
export async function waitUntil(predicate, timeoutMs, everyMs = 5) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() >= deadline) return false;
    await delay(everyMs);
  }
  return true;
}

// ---------- child processes ----------

/** Spawns a node child that is stopped by `cleanup`; its output is left to the caller. */
export function spawnNode(nodeArgs, env) {
  const child = spawn(process.execPath, nodeArgs, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  cleanups.push(() => stopChild(child, exited));
  return { child, exited, stop: () => stopChild(child, exited) };
}

/** Spawns a node child, resolves with its URL once it prints `... listening on http://...`. */
export async function startChild(name, nodeArgs, env) {
  const { child, exited, stop } = spawnNode(nodeArgs, env);
  let output = '';
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
  return { child, url, exited, stop };
}

/**
 * `--otel`: starts the OTLP sink (otlp-sink.mjs) and answers the server's environment for exporting
 * every span to it (http/protobuf, the default protocol; every trace sampled), and a reader of what
 * it received once stopped. Without `on`, nothing: the server runs without tracing.
 */
export async function startOtlpSink(on) {
  if (!on) return { env: {}, summary: async () => undefined };
  const sink = await startChild('otlp-sink', [path.join(here, 'otlp-sink.mjs')], process.env);
  let last = '';
  sink.child.stdout.on('data', (chunk) => (last += chunk));
  return {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SERVICE_NAME: 'hookrelay-bench' },
    /** After the server stopped (its last spans flushed): { exports, bytes }. */
    async summary() {
      await sink.stop();
      const line = last.trim().split('\n').pop() ?? '';
      try {
        return JSON.parse(line);
      } catch {
        return undefined;
      }
    },
  };
}

export async function stopChild(child, exited) {
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
export function procTimes(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK };
  } catch {
    return undefined;
  }
}
/** CPU ms of a process and all its descendants (PostgreSQL: the postmaster and its backends). */
export function treeCpuMs(rootPid) {
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
export const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();

/** The whole machine's CPU time so far (/proc/stat), in ms summed over all cores: busy and total. */
export function machineCpuMs() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1, 9).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  const busy = user + nice + system + irq + softirq + steal;
  return { busyMs: (busy * 1000) / CLK_TCK, totalMs: ((busy + idle + iowait) * 1000) / CLK_TCK };
}

// ---------- machine and tree ----------

export function machine() {
  const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  return { nproc: os.availableParallelism(), cpu, node: process.version, loadavg: loadavg() };
}

/** The commit, and whether the given paths have uncommitted changes. */
export function revision(paths = ['packages/server', 'packages/shared'], what = 'server') {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', timeout: 5000 }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', ...paths], { cwd: root, encoding: 'utf8', timeout: 5000 }).trim();
    return dirty ? `${commit} with uncommitted ${what} changes` : commit;
  } catch {
    return 'unknown revision';
  }
}

/** `tsc -b` of the given packages (incremental, quick when up to date): never measure a stale dist/. */
export function build(packages) {
  execFileSync(path.join(root, 'node_modules/.bin/tsc'), ['-b', ...packages], { cwd: root, stdio: 'inherit', timeout: 300_000 });
  // The server runs as its bundled program (dist/bin/hookrelay-server.js), made from tsc's output.
  if (packages.some((p) => p.replace(/\/+$/, '').endsWith('packages/server'))) {
    execFileSync(process.execPath, [path.join(root, 'packages/server/scripts/bundle-server.mjs')], { cwd: root, stdio: 'inherit', timeout: 300_000 });
  }
}

// ---------- PostgreSQL and the server ----------

/**
 * A throwaway PostgreSQL cluster with fsync and synchronous_commit on (checked), stopped and
 * removed by `cleanup`, plus one connection for statistics.
 */
export async function startDurablePg() {
  const pg = await startPgCluster(process.env, { durable: true });
  cleanups.push(() => pg.stop());
  const postmasterPid = Number(readFileSync(path.join(pg.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const stats = postgres(pg.url, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  cleanups.push(() => stats.end({ timeout: 5 }));
  const [settings] = await stats`SELECT version() AS version, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync, current_setting('full_page_writes') AS fpw`;
  if (settings.fsync !== 'on' || settings.sync !== 'on') throw new Error(`PostgreSQL is not durable: fsync=${settings.fsync} synchronous_commit=${settings.sync}`);
  const version = /PostgreSQL [\d.]+/.exec(settings.version)?.[0] ?? settings.version;
  return { pg, postmasterPid, stats, settings, version };
}

/** A module of the built packages, by its path from the repository root (`packages/server/dist/db/migrate.js`). */
export const loadBuilt = (file) => import(pathToFileURL(path.join(root, file)).href);

/**
 * The database of a benchmark of single queries (bench/inbound-list.mjs, bench/search.mjs): a
 * throwaway PostgreSQL cluster, migrated, its `sql` (a pool of 2) handed to `run`; both are closed
 * after it, and the process exits 1 when `run` throws or answers false (a wrong result), else 0.
 */
export async function onMigratedPostgres(run) {
  const { openPostgres } = await loadBuilt('packages/server/dist/db/database.js');
  const { migrate } = await loadBuilt('packages/server/dist/db/migrate.js');
  const cluster = await startPgCluster(process.env);
  const db = openPostgres({ url: cluster.url, poolSize: 2 });
  let ok = false;
  try {
    await migrate(db);
    ok = (await run(db.sql)) !== false;
  } catch (error) {
    process.stderr.write(`bench: ${error instanceof Error ? error.stack : error}\n`);
  } finally {
    await db.close();
    cluster.stop();
  }
  process.exit(ok ? 0 : 1);
}

/**
 * The project and the two cli-mode inbound endpoints that a benchmark of single queries fills with
 * messages (the second one so that the index holds more than the endpoint's own).
 */
export async function insertBenchEndpoints(sql) {
  const project = '01a20000-0000-7000-8000-000000000001';
  const endpoints = ['01a20000-0000-7000-8000-0000000000e1', '01a20000-0000-7000-8000-0000000000e2'];
  await sql`INSERT INTO projects (id, name) VALUES (${project}, 'bench')`;
  for (const endpoint of endpoints) {
    await sql`INSERT INTO inbound_endpoints (id, project_id, name, mode, secret_token_encrypted, secret_token_hash) VALUES (${endpoint}, ${project}, 'bench', 'cli', 'x', ${endpoint})`;
  }
  return { project, endpoints };
}

/** The mean milliseconds of `run` over `repeat` calls after one warm-up call, and what the last one answered. */
export async function meanOf(run, repeat) {
  await run();
  const t0 = performance.now();
  let result;
  for (let i = 0; i < repeat; i++) result = await run();
  return { ms: (performance.now() - t0) / repeat, result };
}

/** The cluster's URL over its Unix socket instead of TCP (libpq's `?host=<directory>`). */
export function pgSocketUrl(pg) {
  const url = new URL(pg.url);
  return `postgres://${url.username}@/${url.pathname.slice(1)}?host=${encodeURIComponent(pg.dir)}&port=${url.port}`;
}

/**
 * The real server process (`dist/bin/hookrelay-server.js start`) on 127.0.0.1, port 0, with a bootstrap
 * API key. Processes that share a database one after the other share `apiKey` and `encryptionKey`.
 */
export async function startServer({
  databaseUrl,
  dataDir,
  nodeArgs = [],
  env = {},
  name = 'hookrelay',
  apiKey = `hr_${randomBytes(20).toString('hex')}`,
  encryptionKey = randomBytes(32).toString('hex'),
}) {
  const server = await startChild(name, [...nodeArgs, path.join(serverDir, 'dist/bin/hookrelay-server.js'), 'start'], {
    ...process.env,
    HOOKRELAY_HOST: '127.0.0.1',
    HOOKRELAY_PORT: '0',
    DATABASE_URL: databaseUrl,
    HOOKRELAY_ENCRYPTION_KEY: encryptionKey,
    HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
    HOOKRELAY_DATA_DIR: dataDir,
    HOOKRELAY_LOG_LEVEL: 'warn',
    // The benchmarks measure the server at full speed with one key, not the per-key API limit.
    HOOKRELAY_API_RATE_LIMIT: '0',
    ...env,
  });
  return { ...server, apiKey };
}

/**
 * Calls `onLine` for each non-empty line of a child's output as it comes (NDJSON), so the pipe never
 * fills and blocks the child.
 */
export function forEachLine(stream, onLine) {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop();
    for (const line of lines) if (line !== '') onLine(line);
  });
}

/** POST /v1/inbound-endpoints; resolves to `{ id, token }`. */
export async function createInboundEndpoint(serverUrl, apiKey, mode) {
  const created = await withTimeout(
    fetch(`${serverUrl}/v1/inbound-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', mode }),
    }),
    10_000,
    'create inbound endpoint',
  );
  const body = await created.json();
  if (created.status !== 201 && created.status !== 200) throw new Error(`create inbound endpoint: ${created.status} ${JSON.stringify(body)}`);
  return { id: body.data.id, token: body.data.secret_token };
}

// ---------- figures ----------

/** A number for a report; a value that was not measured (NaN, ±Infinity) prints as a dash. */
export const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '–');

/** Right-aligned text table. */
export function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  return rows.map((row) => row.map((cell, i) => String(cell).padStart(widths[i])).join('  ')).join('\n') + '\n';
}

/** Self time per function (top `top`) and per package of a .cpuprofile. */
export function summarizeProfile(file, top = 25) {
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
  return `self time by area:\n${lines(byArea, 12)}\nself time by function (top ${top}):\n${lines(byFn, top)}\n`;
}

// ---------- messages of the listen and soak benchmarks ----------

const BODY_HEAD = '{"seq":"';
const SEQ_WIDTH = 10;
/**
 * 1 KiB of JSON, as a webhook provider would send it, carrying its sequence number first. Its event
 * type (`type`, as Stripe puts it) is `invoice.paid` for even numbers and `invoice.sent` for odd
 * ones, so that a filter can pass half of them.
 */
export const EVEN_EVENT_TYPE = 'invoice.paid';
export function bodyFor(seq) {
  const type = seq % 2 === 0 ? EVEN_EVENT_TYPE : 'invoice.sent';
  const head = `${BODY_HEAD}${String(seq).padStart(SEQ_WIDTH, '0')}","id":"evt_${seq}","type":"${type}","created":1767225600,"data":{"object":{"id":"in_${seq}","amount":4200,"currency":"eur","note":"`;
  const tail = '"}}}';
  return Buffer.from(head + 'x'.repeat(1024 - head.length - tail.length) + tail);
}
if (bodyFor(1).length !== 1024 || JSON.parse(bodyFor(123).toString()).seq !== '0000000123') throw new Error('bodies are not 1 KiB of JSON');

/** The sequence number a body of `bodyFor` carries, or -1. */
export function seqOf(body) {
  if (body.length < BODY_HEAD.length + SEQ_WIDTH || body.toString('latin1', 0, BODY_HEAD.length) !== BODY_HEAD) return -1;
  const seq = Number(body.toString('latin1', BODY_HEAD.length, BODY_HEAD.length + SEQ_WIDTH));
  return Number.isInteger(seq) ? seq : -1;
}

// ---------- local receivers (the app behind a CLI, an HTTPS delivery receiver) ----------

/**
 * Listens on 127.0.0.1 (a free port) and registers the cleanup that closes the server and destroys
 * its open keep-alive sockets. Resolves to the port.
 */
export function serveOnLoopback(server, what) {
  const sockets = new Set();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  cleanups.push(
    () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return withTimeout(
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(server.address().port));
    }),
    10_000,
    `${what} listen`,
  );
}

/** A self-signed P-256 certificate for 127.0.0.1 / localhost (openssl), as PEM files in `dir`. */
export function selfSignedCert(dir) {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'],
    { stdio: 'ignore', timeout: 10_000 },
  );
  return { key: readFileSync(key), cert: readFileSync(cert), certFile: cert };
}

// ---------- outbound deliveries: an HTTPS receiver and an API client ----------

/** 1 KiB of JSON (the `payload` value as serialized), the payload of the delivery benchmarks' messages and events. */
export const KIB_PAYLOAD = (() => {
  const base = { type: 'invoice.paid', data: { id: 'in_0001', amount: 4200, currency: 'eur', note: '' } };
  base.data.note = 'x'.repeat(1024 - JSON.stringify(base).length);
  if (Buffer.byteLength(JSON.stringify(base)) !== 1024) throw new Error('payload is not 1 KiB');
  return base;
})();

/**
 * An HTTPS receiver of outbound deliveries on 127.0.0.1 (a self-signed certificate in `dir`, trusted
 * by the server through HOOKRELAY_TLS_CA_FILE = `caFile`). It answers 200 to everything, counts
 * receipts per webhook-id (`receipts`: id → { n, at }, `at` the performance.now() of its headers),
 * and verifies the Standard Webhooks signature (HMAC-SHA256) of one delivery in `verifyEvery` with
 * the secret `addSecret` registered for its path.
 */
export async function startDeliveryReceiver(dir, { verifyEvery = 50 } = {}) {
  const { key, cert, certFile } = selfSignedCert(dir);
  const secrets = new Map(); // path → signing secret bytes
  const receiver = {
    caFile: certFile,
    port: 0,
    receipts: new Map(),
    /** Requests received, duplicates included. */
    total: 0,
    verified: 0,
    badSignatures: 0,
    verifyEvery,
    /** The `whsec_…` secret of the endpoint whose URL has this path. */
    addSecret: (urlPath, whsec) => secrets.set(urlPath, Buffer.from(whsec.replace(/^whsec_/, ''), 'base64')),
  };
  const verify = (req, body) => {
    const secret = secrets.get(req.url);
    if (!secret) return void receiver.badSignatures++;
    const id = req.headers['webhook-id'];
    const ts = req.headers['webhook-timestamp'];
    const expected = createHmac('sha256', secret).update(`${id}.${ts}.`).update(body).digest();
    const ok = String(req.headers['webhook-signature'] ?? '')
      .split(' ')
      .some((s) => {
        const [v, sig] = s.split(',');
        if (v !== 'v1' || !sig) return false;
        const got = Buffer.from(sig, 'base64');
        return got.length === expected.length && timingSafeEqual(got, expected);
      });
    if (ok && Math.abs(Date.now() / 1000 - Number(ts)) < 300) receiver.verified++;
    else receiver.badSignatures++;
  };
  const server = https.createServer({ key, cert, keepAliveTimeout: 30_000 }, (req, res) => {
    const at = performance.now();
    const id = req.headers['webhook-id'];
    const sample = receiver.total % verifyEvery === 0;
    receiver.total++;
    const r = receiver.receipts.get(id);
    if (r) r.n++;
    else receiver.receipts.set(id, { n: 1, at });
    const chunks = [];
    req.on('data', (c) => sample && chunks.push(c));
    req.on('end', () => {
      if (sample) verify(req, Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  });
  receiver.port = await serveOnLoopback(server, 'receiver');
  return receiver;
}

// undici is the server's own HTTP client; reuse its copy rather than adding a dependency.
const { Pool } = createRequire(path.join(serverDir, 'package.json'))('undici');

/** An undici pool of `connections` to the API at `url` with `apiKey`: `call(method, path, body)` → { status, body }. */
export function apiPool(url, apiKey, connections) {
  const pool = new Pool(url, { connections, pipelining: 1 });
  cleanups.push(() => pool.destroy());
  const call = async (method, p, body) => {
    const res = await pool.request({
      method,
      path: p,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
  };
  return { call, close: () => pool.close() };
}
