#!/usr/bin/env node
// Large-body benchmark, on the embedded database (PGlite) and on PostgreSQL (a durable throwaway
// cluster), with webhooks of --size bytes (default 25 MiB, the default ingest limit).
//
//   pnpm bench:bigbody [--webhooks 10] [--size 26214400] [--backend both|pglite|postgres]
//                      [--mode cli|forward] [--singles 5] [--settle 60] [--no-build]
//
// Per backend: one server process (the bundled program) and a cli-mode inbound endpoint (or, with
// --mode forward, a forward-mode one whose worker delivers to a local HTTPS app). First --singles
// webhooks one after another: the p50 of the time until the sender has its 200, and, while they
// are stored, the slowest answer to a 1 KiB webhook of another endpoint and to GET /v1/whoami
// (each asked every 50 ms). Then --webhooks webhooks at once, each from its own loopback address
// (127.0.0.2, .3, …: a provider's senders are many addresses, and one address gets a share of the
// ingest budget): the server's RSS at rest before them, its peak RSS while they were stored (and,
// in forward mode, delivered; sampled from /proc every 20 ms), the time until every sender had its
// answer, whether each was answered 200, and the RSS --settle seconds after the last one. In cli
// mode, last, --singles webhooks one after another through the real CLI (`hookrelay listen
// --forward-to`, a child process) to a local app: the p50 of the time from the sender's first byte
// until the app has the whole body, checked byte for byte.
// Builds first (tsc -b and the bundle) unless --no-build. Exit code 1 when a webhook is not answered
// 200 or, in forward mode, not delivered whole.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { build, cleanup, cleanups, delay, fail, fmt, machine, revision, root, selfSignedCert, serveOnLoopback, spawnNode, startDurablePg, startServer, table, usageText, waitUntil, watchdog } from './lib.mjs';

const { values: args } = parseArgs({
  options: {
    webhooks: { type: 'string', default: '10' },
    size: { type: 'string', default: String(25 * 1024 * 1024) },
    backend: { type: 'string', default: 'both' },
    mode: { type: 'string', default: 'cli' },
    singles: { type: 'string', default: '5' },
    settle: { type: 'string', default: '60' },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 18));
  process.exit(0);
}
const WEBHOOKS = Number(args.webhooks);
const SINGLES = Number(args.singles);
const SETTLE_S = Number(args.settle);
const SIZE = Number(args.size);
const backends = args.backend === 'both' ? ['pglite', 'postgres'] : [args.backend];
if (!Number.isInteger(WEBHOOKS) || WEBHOOKS < 1 || !Number.isInteger(SIZE) || SIZE < 1) await fail('--webhooks and --size must be positive integers');
if (backends.some((b) => b !== 'pglite' && b !== 'postgres')) await fail('--backend must be both, pglite or postgres');
if (args.mode !== 'cli' && args.mode !== 'forward') await fail('--mode must be cli or forward');
watchdog(1800);

/** VmRSS and VmHWM of a process, in MB. */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** POSTs `body` from `localAddress`; resolves to the answer's status and text and how long it took. */
function post(url, body, localAddress = '127.0.0.1', headers = {}) {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/octet-stream', 'content-length': body.length, ...headers }, timeout: 600_000 }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(parts).toString(), ms: performance.now() - started }));
    });
    req.on('error', (error) => resolve({ status: 0, text: String(error), ms: performance.now() - started }));
    req.end(body);
  });
}

/** Asks `ask` every 50 ms until `stop()` is true; resolves to the slowest answer in ms. */
async function slowestWhile(ask, stop) {
  let slowest = 0;
  while (!stop()) {
    const started = performance.now();
    await ask();
    slowest = Math.max(slowest, performance.now() - started);
    await delay(50);
  }
  return slowest;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];

/** The body of webhook `n`: distinct bytes per webhook, so each is stored and checked on its own. */
function bodyOf(n) {
  const body = Buffer.allocUnsafe(SIZE);
  const seed = randomBytes(4096);
  for (let i = 0; i < SIZE; i += seed.length) seed.copy(body, i, 0, Math.min(seed.length, SIZE - i));
  body.writeUInt32BE(n, 0);
  return body;
}

/** A request handler that records each body's size, SHA-256 and arrival time in `received`, then answers 200. */
function recordingHandler(received) {
  return (req, res) => {
    const hash = createHash('sha256');
    let size = 0;
    req.on('data', (chunk) => {
      hash.update(chunk);
      size += chunk.length;
    });
    req.on('end', () => {
      received.push({ size, sha256: hash.digest('hex'), at: performance.now() });
      res.writeHead(200).end('ok');
    });
  };
}

async function startReceiver(dir) {
  const { key, cert, certFile } = selfSignedCert(dir);
  const received = [];
  const port = await serveOnLoopback(https.createServer({ key, cert }, recordingHandler(received)), 'receiver');
  return { url: `https://127.0.0.1:${port}`, caFile: certFile, received };
}

/** A plain HTTP app on loopback that records each body as it completes. */
async function startApp() {
  const received = [];
  const server = http.createServer(recordingHandler(received));
  const port = await serveOnLoopback(server, 'app');
  return { port, received };
}

/**
 * `hookrelay listen` of the endpoint forwarding to a local app, then --singles webhooks one after
 * another: the p50 of sender's first byte → the whole body at the app (its hash checked).
 */
async function throughListen(server, endpointId, token, dataDir) {
  const app = await startApp();
  const cli = spawnNode([path.join(root, 'packages/cli/bin/run.js'), 'listen', endpointId, '--forward-to', String(app.port), '--json'], {
    ...process.env,
    HOOKRELAY_API_URL: server.url,
    HOOKRELAY_API_KEY: server.apiKey,
    HOOKRELAY_CONFIG_DIR: path.join(dataDir, 'cli-config'),
    HOOKRELAY_PROFILE: '',
    NO_COLOR: '1',
  });
  cli.child.stdout.resume();
  cli.child.stderr.resume();
  // A first run starts from now: small webhooks until one reaches the app say the listener is on.
  const deadline = Date.now() + 30_000;
  while (app.received.length === 0) {
    if (Date.now() >= deadline) await fail('the listener forwarded nothing within 30 s');
    await post(`${server.url}/in/${token}`, Buffer.from('{"warm":true}'));
    await delay(200);
  }
  const times = [];
  for (let n = 0; n < SINGLES; n++) {
    const body = bodyOf(2000 + n);
    const sha256 = createHash('sha256').update(body).digest('hex');
    const started = performance.now();
    const answer = await post(`${server.url}/in/${token}`, body);
    if (answer.status !== 200) await fail(`webhook through listen answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    const arrived = await waitUntil(() => app.received.some((r) => r.sha256 === sha256), 120_000, 10);
    if (!arrived) await fail('a 25 MiB webhook did not reach the app whole through listen within 120 s');
    times.push(app.received.find((r) => r.sha256 === sha256).at - started);
  }
  await cli.stop();
  return median(times);
}

async function run(backend) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-bigbody-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = {};
  let receiver;
  if (args.mode === 'forward') {
    receiver = await startReceiver(dataDir);
    Object.assign(env, { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile });
  }
  const databaseUrl = backend === 'postgres' ? (await startDurablePg()).pg.url : undefined;
  const server = await startServer({ databaseUrl, dataDir, env, name: `server-${backend}` });
  const created = await fetch(`${server.url}/v1/inbound-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(args.mode === 'forward' ? { name: 'bigbody', url: `${receiver.url}/hooks` } : { name: 'bigbody', mode: 'cli' }),
  });
  if (created.status !== 201) await fail(`create endpoint: ${created.status} ${await created.text()}`);
  const { id: endpointId, secret_token: token } = (await created.json()).data;
  const other = await fetch(`${server.url}/v1/inbound-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'small', mode: 'cli' }),
  });
  const { secret_token: smallToken } = (await other.json()).data;
  const small = Buffer.from(JSON.stringify({ type: 'ping', pad: 'x'.repeat(1000) }));

  // One at a time: what a sender waits for, and what everyone else waits for meanwhile.
  const singleMs = [];
  let slowSmall = 0;
  let slowWhoami = 0;
  for (let n = 0; n < SINGLES; n++) {
    // Made before the probes start: building it holds this process's own event loop.
    const body = bodyOf(1000 + n);
    let done = false;
    const probes = [
      slowestWhile(() => post(`${server.url}/in/${smallToken}`, small), () => done),
      slowestWhile(() => fetch(`${server.url}/v1/whoami`, { headers: { authorization: `Bearer ${server.apiKey}` } }).then((r) => r.text()), () => done),
    ];
    const answer = await post(`${server.url}/in/${token}`, body);
    done = true;
    const [s1, s2] = await Promise.all(probes);
    slowSmall = Math.max(slowSmall, s1);
    slowWhoami = Math.max(slowWhoami, s2);
    if (answer.status !== 200) await fail(`single webhook answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    singleMs.push(answer.ms);
  }
  if (receiver) {
    const deadline = Date.now() + 600_000;
    while (receiver.received.length < SINGLES && Date.now() < deadline) await delay(50);
    receiver.received.length = 0;
  }

  const bodies = Array.from({ length: WEBHOOKS }, (_, n) => bodyOf(n));
  const hashes = bodies.map((b) => createHash('sha256').update(b).digest('hex'));
  await delay(1000);
  const atRest = memoryOf(server.child.pid);
  let peakRss = atRest.rss;
  const sampler = setInterval(() => {
    try {
      peakRss = Math.max(peakRss, memoryOf(server.child.pid).rss);
    } catch {
      // The process is gone: the run fails below.
    }
  }, 20);
  const started = performance.now();
  const answers = await Promise.all(bodies.map((body, n) => post(`${server.url}/in/${token}`, body, `127.0.0.${2 + (n % 250)}`)));
  const answeredMs = performance.now() - started;
  let deliveredMs = NaN;
  if (receiver) {
    const deadline = Date.now() + 600_000;
    while (receiver.received.length < WEBHOOKS && Date.now() < deadline) await delay(50);
    deliveredMs = performance.now() - started;
  }
  clearInterval(sampler);
  const end = memoryOf(server.child.pid);
  await delay(SETTLE_S * 1000);
  const settled = memoryOf(server.child.pid);
  const refused = answers.filter((a) => a.status !== 200);
  const lost = receiver ? hashes.filter((h) => !receiver.received.some((r) => r.sha256 === h)).length : 0;
  const listenP50 = receiver ? NaN : await throughListen(server, endpointId, token, dataDir);
  await server.stop();
  return { backend, singleP50: median(singleMs), slowSmall, slowWhoami, atRest: atRest.rss, peak: Math.max(peakRss, end.rss), hwm: end.hwm, answeredMs, deliveredMs, settled: settled.rss, refused, lost, listenP50 };
}

if (!args['no-build']) build(['packages/shared', 'packages/server']);
const results = [];
try {
  for (const backend of backends) results.push(await run(backend));
} finally {
  await cleanup();
}

process.stdout.write(
  `bigbody: webhooks of ${fmt(SIZE)} bytes, ${SINGLES} one at a time, then ${WEBHOOKS} at once; ${args.mode} mode; ${revision()}; ${machine().nproc} cores, ${machine().cpu}, node ${machine().node}\n\n` +
    table([
      ['backend', 'one: 200 p50 ms', 'meanwhile: small webhook max ms', 'whoami max ms', 'RSS at rest MB', 'peak RSS MB', 'VmHWM MB', 'all answered ms', ...(args.mode === 'forward' ? ['all delivered ms'] : []), `RSS ${SETTLE_S} s later MB`, ...(args.mode === 'cli' ? ['one through listen p50 ms'] : []), 'not 200'],
      ...results.map((r) => [
        r.backend,
        fmt(r.singleP50),
        fmt(r.slowSmall),
        fmt(r.slowWhoami),
        fmt(r.atRest),
        fmt(r.peak),
        fmt(r.hwm),
        fmt(r.answeredMs),
        ...(args.mode === 'forward' ? [fmt(r.deliveredMs)] : []),
        fmt(r.settled),
        ...(args.mode === 'cli' ? [fmt(r.listenP50)] : []),
        String(r.refused.length),
      ]),
    ]),
);
for (const r of results) {
  for (const a of r.refused.slice(0, 3)) process.stderr.write(`${r.backend}: answered ${a.status}: ${a.text.slice(0, 300)}\n`);
  if (r.lost > 0) process.stderr.write(`${r.backend}: ${r.lost} webhooks not delivered whole\n`);
}
process.exit(results.some((r) => r.refused.length > 0 || r.lost > 0) ? 1 : 0);
