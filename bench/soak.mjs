#!/usr/bin/env node
// Soak benchmark: a steady ingestion rate for minutes across two real server processes on
// one durable throwaway PostgreSQL (fsync and synchronous_commit on), with consumers attached:
//   - two `hookrelay listen --json` CLIs (the real CLI, child processes), each on its own cli-mode
//     inbound endpoint and connected to a different server process, forwarding to a local app;
//   - one forward-mode inbound endpoint delivering (the servers' workers) to an HTTPS receiver.
// The sender and every sink run in this process, so send → receive latency uses one clock.
//
//   pnpm bench:soak [--rate 200] [--duration 300] [--report-every 30] [--idle-wait 10] [--drain 120]
//                   [--connections 32] [--enforce] [--no-build]
//
// Open-loop sender (undici): message i (1 KiB JSON carrying its sequence number) is sent at
// t0 + i/rate to endpoint i mod 3 (cli-1, cli-2, forward) through server process i mod 2, so each
// consumer gets messages ingested by both processes. Every --report-every s: sent, accepted,
// received per sink, send → receive p50/p99 of that interval, messages still on their way, the RSS
// of each server process and each CLI, /proc/loadavg. At the end: totals, lost (accepted, never
// received: must be 0), duplicates, misrouted or damaged bodies, p50/p99/max overall, and the idle
// RSS of each server process --idle-wait s after its start (nothing happening) and again
// --idle-wait s after the load stopped and was drained (target ≤ 150 MB on PostgreSQL).
// Exit 1 on a lost, misrouted or damaged message, a rejected ingest request, a process that died,
// or a timeout; with --enforce also when an idle RSS is over the target.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import https from 'node:https';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  build,
  cleanup,
  cleanups,
  delay,
  fail,
  fmt,
  loadavg,
  machine,
  revision,
  root,
  serverDir,
  spawnNode,
  startChild,
  startDurablePg,
  table,
  usageText,
  waitUntil,
  watchdog,
  withTimeout,
  bodyFor,
  seqOf,
  serveOnLoopback,
  selfSignedCert,
  forEachLine,
} from './lib.mjs';

// undici is a dependency of the CLI; the benchmark borrows it (as bench/listen.mjs does).
const { Pool } = createRequire(path.join(root, 'packages/cli/package.json'))('undici');

const IDLE_RSS_TARGET_MB = 150;

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    duration: { type: 'string', default: '300' },
    'report-every': { type: 'string', default: '30' },
    'idle-wait': { type: 'string', default: '10' },
    drain: { type: 'string', default: '120' },
    connections: { type: 'string', default: '32' },
    enforce: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 21));
  process.exit(0);
}
const RATE = Number(args.rate);
const DURATION = Number(args.duration);
const REPORT_EVERY = Number(args['report-every']);
const IDLE_WAIT = Number(args['idle-wait']);
const DRAIN = Number(args.drain);
const CONNECTIONS = Number(args.connections);
if (!(RATE > 0) || !(DURATION > 0) || !(REPORT_EVERY > 0) || !(IDLE_WAIT >= 0) || !(DRAIN > 0) || !(Number.isInteger(CONNECTIONS) && CONNECTIONS > 0)) {
  process.stderr.write('usage: --rate N (>0) --duration S (>0) --report-every S (>0) --idle-wait S (>=0) --drain S (>0) --connections N\n');
  process.exit(2);
}
// Starts, probes, the two idle waits, the load, the drain and the stops, each bounded on its own.
watchdog(DURATION + DRAIN + 2 * IDLE_WAIT + 420);

// ---------- messages ----------


const SINKS = ['cli-1', 'cli-2', 'forward'];
/** Probes (before the load) use sequence numbers from 0; the load starts at LOAD_FIRST. */
const LOAD_FIRST = 10_000;
const loadCount = Math.round(RATE * DURATION);
const capacity = LOAD_FIRST + loadCount;
const sendAt = new Float64Array(capacity);
const answeredAt = new Float64Array(capacity);
const recvAt = new Float64Array(capacity);
const recvCount = new Uint8Array(capacity);
/** 1 = accepted (200), 2 = refused or failed. */
const outcome = new Uint8Array(capacity);
/** [seq, at] of every first receipt, in arrival order (the interval reports read their slice). */
const arrivals = [];
const damage = { corrupt: 0, misrouted: 0 };
let probeSeq = 0;
let sentLoad = 0;
const sinkFor = (seq) => (seq < LOAD_FIRST ? probeSinks[seq] : (seq - LOAD_FIRST) % 3);
/** Which sink each probe was sent to. */
const probeSinks = new Uint8Array(LOAD_FIRST);
const perSink = SINKS.map(() => ({ received: 0, duplicates: 0 }));

function receive(sink, body) {
  const t = performance.now();
  const seq = seqOf(body);
  if (seq < 0 || seq >= capacity || (seq >= LOAD_FIRST && seq >= LOAD_FIRST + sentLoad) || (seq < LOAD_FIRST && seq >= probeSeq) || !body.equals(bodyFor(seq))) {
    damage.corrupt += 1;
    return;
  }
  if (sinkFor(seq) !== sink) {
    damage.misrouted += 1;
    return;
  }
  if (recvCount[seq] === 0) {
    recvAt[seq] = t;
    if (seq >= LOAD_FIRST) {
      arrivals.push(seq);
      perSink[sink].received += 1;
    }
  } else if (seq >= LOAD_FIRST) perSink[sink].duplicates += 1;
  if (recvCount[seq] < 255) recvCount[seq] += 1;
}

// ---------- sinks: two local apps (HTTP, behind the CLIs) and the forward receiver (HTTPS) ----------

function handler(sink) {
  return (req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      receive(sink, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
    });
  };
}

async function startApp(sink) {
  const server = createServer(handler(sink));
  server.keepAliveTimeout = 60_000;
  return serveOnLoopback(server, 'local app');
}

async function startForwardReceiver(dir) {
  const { key, cert, certFile } = selfSignedCert(dir);
  const server = https.createServer({ key, cert, keepAliveTimeout: 60_000 }, handler(2));
  return { port: await serveOnLoopback(server, 'forward receiver'), caFile: certFile };
}

// ---------- processes ----------

const ENCRYPTION_KEY = randomBytes(32).toString('hex');
const API_KEY = `hr_${randomBytes(20).toString('hex')}`;

/** A server process with every role, as an operator runs it (the default API rate limit included). */
async function startServerProcess(name, common) {
  const proc = await startChild(name, [path.join(serverDir, 'dist/bin/hookrelay-server.js'), 'start'], {
    ...process.env,
    HOOKRELAY_HOST: '127.0.0.1',
    HOOKRELAY_PORT: '0',
    DATABASE_URL: common.databaseUrl,
    HOOKRELAY_ENCRYPTION_KEY: ENCRYPTION_KEY,
    HOOKRELAY_BOOTSTRAP_API_KEY: API_KEY,
    HOOKRELAY_DATA_DIR: path.join(common.tmp, `data-${name}`),
    HOOKRELAY_LOG_LEVEL: 'warn',
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
    HOOKRELAY_TLS_CA_FILE: common.caFile,
  });
  const startedAt = performance.now();
  let died;
  void proc.exited.then(({ code, signal }) => (died = `${code ?? signal}`));
  return { name, ...proc, startedAt, died: () => died };
}

function startCli(name, serverUrl, endpointId, appPort, tmp) {
  const handle = spawnNode(
    [path.join(root, 'packages/cli/bin/run.js'), 'listen', endpointId, '--forward-to', `http://127.0.0.1:${appPort}`, '--json'],
    {
      ...process.env,
      HOOKRELAY_API_URL: serverUrl,
      HOOKRELAY_API_KEY: API_KEY,
      HOOKRELAY_CONFIG_DIR: path.join(tmp, `config-${name}`),
      HOOKRELAY_PROFILE: '',
      NO_COLOR: '1',
    },
  );
  // One NDJSON line per delivery: read (and counted) as it comes, so the pipe never blocks the CLI.
  const out = { lines: 0, notOk: 0, stderr: '' };
  forEachLine(handle.child.stdout, (line) => {
    out.lines += 1;
    try {
      const record = JSON.parse(line);
      if (record.status !== 200 || record.error !== null) out.notOk += 1;
    } catch {
      out.notOk += 1;
    }
  });
  handle.child.stderr.setEncoding('utf8');
  handle.child.stderr.on('data', (chunk) => {
    out.stderr = (out.stderr + chunk).slice(-8192);
    process.stderr.write(`[${name}] ${chunk}`);
  });
  let died;
  void handle.exited.then(({ code, signal }) => (died = `${code ?? signal}`));
  return { name, ...handle, out, died: () => died };
}

async function api(serverUrl, method, urlPath, body) {
  const res = await withTimeout(
    fetch(`${serverUrl}${urlPath}`, {
      method,
      headers: { authorization: `Bearer ${API_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    10_000,
    `${method} ${urlPath}`,
  );
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${urlPath}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text).data;
}

/** Resident set size from /proc/<pid>/status, in MB (10^6 bytes); NaN once the process is gone. */
function rssMb(pid) {
  try {
    const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return (kb * 1024) / 1e6;
  } catch {
    return NaN;
  }
}

// ---------- the sender (undici, open loop) ----------

const sender = { inFlight: 0, refused: 0, errors: 0, firstError: undefined };

function send(pool, ingestPath, seq) {
  sendAt[seq] = performance.now();
  sender.inFlight += 1;
  pool
    .request({ path: ingestPath, method: 'POST', headers: { 'content-type': 'application/json' }, body: bodyFor(seq), headersTimeout: 30_000, bodyTimeout: 30_000 })
    .then(async (res) => {
      const text = await res.body.text();
      answeredAt[seq] = performance.now();
      if (res.statusCode === 200) outcome[seq] = 1;
      else {
        outcome[seq] = 2;
        sender.refused += 1;
        sender.firstError ??= `HTTP ${res.statusCode}: ${text.slice(0, 200)}`;
      }
    })
    .catch((error) => {
      outcome[seq] = 2;
      sender.errors += 1;
      sender.firstError ??= error instanceof Error ? error.message : String(error);
    })
    .finally(() => (sender.inFlight -= 1));
}

// ---------- statistics ----------

function percentiles(values) {
  if (values.length === 0) return { p50: NaN, p99: NaN, max: NaN };
  const sorted = Float64Array.from(values).sort();
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] };
}
const mb = (n) => (Number.isFinite(n) ? fmt(n, 1) : 'gone');

async function main() {
  if (!args['no-build']) build(['packages/shared', 'packages/server', 'packages/cli']);
  const m = machine();
  const log = (text) => process.stdout.write(`${text}\n`);
  log(`machine: ${m.nproc} cores, ${m.cpu}, node ${m.node}, loadavg ${m.loadavg}`);
  log(`hookrelay: ${revision(['packages/server', 'packages/shared', 'packages/cli'], 'server/CLI')}; 2 server processes (all roles, default settings), 2 CLIs, 1 forward receiver`);
  log(`load: ${fmt(RATE)} msg/s for ${fmt(DURATION)} s (${fmt(loadCount)} messages of 1 KiB), alternating between the 2 processes, round-robin over ${SINKS.join(', ')}`);

  const { pg, settings, version } = await startDurablePg();
  log(`database: ${version}, fsync=${settings.fsync}, synchronous_commit=${settings.sync}`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-soak-'));
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  const receiver = await startForwardReceiver(tmp);
  const common = { databaseUrl: pg.url, tmp, caFile: receiver.caFile };

  // One after the other: the first one migrates and bootstraps the empty database.
  const servers = [await startServerProcess('server-1', common)];
  servers.push(await startServerProcess('server-2', common));
  const idleWaitEnd = servers[1].startedAt + IDLE_WAIT * 1000;
  await delay(Math.max(0, idleWaitEnd - performance.now()));
  const idleBefore = servers.map((s) => rssMb(s.child.pid));
  log(`idle RSS ${IDLE_WAIT} s after start (nothing happening): ${servers.map((s, i) => `${s.name} ${mb(idleBefore[i])} MB`).join(', ')}`);

  // Endpoints: two cli-mode ones, one forward-mode one (to the HTTPS receiver).
  const cliEndpoints = [];
  for (const name of ['cli-1', 'cli-2']) cliEndpoints.push(await api(servers[0].url, 'POST', '/v1/inbound-endpoints', { name: `soak ${name}`, mode: 'cli' }));
  const forwardEndpoint = await api(servers[0].url, 'POST', '/v1/inbound-endpoints', { name: 'soak forward', mode: 'forward', url: `https://127.0.0.1:${receiver.port}/soak` });
  const tokens = [...cliEndpoints, forwardEndpoint].map((e) => e.secret_token);

  const appPorts = [await startApp(0), await startApp(1)];
  const clis = [0, 1].map((i) => startCli(`cli-${i + 1}`, servers[i].url, cliEndpoints[i].id, appPorts[i], tmp));

  const pools = servers.map((s) => {
    const pool = new Pool(s.url, { connections: CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000, connect: { timeout: 10_000 } });
    cleanups.push(() => pool.destroy());
    return pool;
  });
  const sendTo = (seq, sink, server) => send(pools[server], `/in/${tokens[sink]}`, seq);

  // Each CLI starts from "now" (its stream's ready cursor): probe every sink, through both processes,
  // until one message gets through to it.
  const probeDeadline = Date.now() + 60_000;
  for (let sink = 0; sink < SINKS.length; sink++) {
    const firstProbe = probeSeq;
    for (let attempt = 0; ; attempt++) {
      const died = [...servers, ...clis].find((p) => p.died() !== undefined);
      if (died) throw new Error(`${died.name} exited (${died.died()}) before the load:\n${clis.map((c) => c.out.stderr).join('\n')}`);
      if (Date.now() > probeDeadline) throw new Error(`no probe reached ${SINKS[sink]} within 60 s (${sender.firstError ?? 'no sender error'})`);
      const seq = probeSeq++;
      probeSinks[seq] = sink;
      sendTo(seq, sink, attempt % 2);
      if (await waitUntil(() => recvCount.subarray(firstProbe, probeSeq).some((c) => c > 0), 250)) break;
    }
  }
  await waitUntil(() => sender.inFlight === 0, 10_000);
  log(`all sinks reached (${probeSeq} probes); loadavg ${loadavg()}`);

  // ---------- the load, with a report every REPORT_EVERY s ----------

  const intervals = [];
  let lastReport = { at: performance.now(), sent: 0, accepted: 0, refused: 0, arrivals: 0, perSink: perSink.map((s) => s.received) };
  const report = (final = false) => {
    const now = performance.now();
    let accepted = 0;
    let refused = 0;
    for (let seq = LOAD_FIRST; seq < LOAD_FIRST + sentLoad; seq++) {
      if (outcome[seq] === 1) accepted += 1;
      else if (outcome[seq] === 2) refused += 1;
    }
    const latencies = [];
    for (let i = lastReport.arrivals; i < arrivals.length; i++) latencies.push(recvAt[arrivals[i]] - sendAt[arrivals[i]]);
    const lat = percentiles(latencies);
    let received = 0;
    for (const s of perSink) received += s.received;
    const row = {
      t: (now - loadStart) / 1000,
      sent: sentLoad - lastReport.sent,
      accepted: accepted - lastReport.accepted,
      refused: refused - lastReport.refused,
      perSink: perSink.map((s, i) => s.received - lastReport.perSink[i]),
      pending: accepted - received,
      p50: lat.p50,
      p99: lat.p99,
      rss: [...servers, ...clis].map((p) => rssMb(p.child.pid)),
      loadavg: loadavg().split(' ')[0],
      final,
    };
    intervals.push(row);
    lastReport = { at: now, sent: sentLoad, accepted, refused, arrivals: arrivals.length, perSink: perSink.map((s) => s.received) };
    log(
      `${final ? 'drained' : `t=${fmt(row.t)}s`}: sent ${fmt(row.sent)}, accepted ${fmt(row.accepted)}${row.refused ? `, REFUSED ${row.refused} (${sender.firstError})` : ''}, ` +
        `received ${SINKS.map((s, i) => `${s} ${fmt(row.perSink[i])}`).join(' / ')}, on their way ${fmt(row.pending)}; ` +
        `send → receive p50 ${fmt(row.p50, 1)} ms, p99 ${fmt(row.p99, 1)} ms; RSS MB ${[...servers, ...clis].map((p, i) => `${p.name} ${mb(row.rss[i])}`).join(', ')}; load ${row.loadavg}`,
    );
  };

  const interval = 1000 / RATE;
  const loadStart = performance.now() + 5;
  let nextReport = loadStart + REPORT_EVERY * 1000;
  let maxLagMs = 0;
  while (sentLoad < loadCount) {
    const now = performance.now();
    while (sentLoad < loadCount && loadStart + sentLoad * interval <= now) {
      maxLagMs = Math.max(maxLagMs, now - (loadStart + sentLoad * interval));
      const i = sentLoad;
      sentLoad += 1;
      sendTo(LOAD_FIRST + i, i % 3, i % 2);
    }
    if (now >= nextReport) {
      report();
      nextReport += REPORT_EVERY * 1000;
      const died = [...servers, ...clis].find((p) => p.died() !== undefined);
      if (died) throw new Error(`${died.name} exited (${died.died()}) during the load`);
    }
    if (sentLoad < loadCount) await delay(Math.max(0, Math.min(nextReport, loadStart + sentLoad * interval) - performance.now()));
  }
  const loadEnd = loadStart + loadCount * interval;
  // The last interval (the load seldom ends exactly on a report tick).
  if (sentLoad > lastReport.sent) report();

  // Drain: every accepted message at its sink (bounded).
  const allIn = () => {
    if (sender.inFlight > 0) return false;
    for (let seq = LOAD_FIRST; seq < LOAD_FIRST + loadCount; seq++) if (outcome[seq] === 1 && recvCount[seq] === 0) return false;
    return true;
  };
  const drained = await waitUntil(allIn, DRAIN * 1000, 20);
  const drainedAt = performance.now();
  report(true);

  // Idle again: RSS IDLE_WAIT s after the last message arrived (the CLIs stay connected). Duplicates
  // that come late (a redelivery after a lease) have had this long to arrive too.
  await delay(Math.max(0, drainedAt + IDLE_WAIT * 1000 - performance.now()));
  const idleAfter = servers.map((s) => rssMb(s.child.pid));
  const cliRssAfter = clis.map((c) => rssMb(c.child.pid));
  log(
    `idle RSS ${fmt((performance.now() - drainedAt) / 1000, 1)} s after the load was drained: ${servers.map((s, i) => `${s.name} ${mb(idleAfter[i])} MB`).join(', ')}; ` +
      `${clis.map((c, i) => `${c.name} ${mb(cliRssAfter[i])} MB`).join(', ')}`,
  );
  const died = [...servers, ...clis].filter((p) => p.died() !== undefined).map((p) => `${p.name} (${p.died()})`);

  // ---------- totals ----------
  let accepted = 0;
  let refused = 0;
  let lost = 0;
  let receivedUnaccepted = 0;
  let duplicates = 0;
  const latencies = [];
  const ingestMs = [];
  const sinkLat = SINKS.map(() => []);
  for (let seq = LOAD_FIRST; seq < LOAD_FIRST + loadCount; seq++) {
    if (outcome[seq] === 1) {
      accepted += 1;
      ingestMs.push(answeredAt[seq] - sendAt[seq]);
    } else refused += 1;
    if (recvCount[seq] === 0) {
      if (outcome[seq] === 1) lost += 1;
      continue;
    }
    if (outcome[seq] !== 1) receivedUnaccepted += 1;
    duplicates += recvCount[seq] - 1;
    const ms = recvAt[seq] - sendAt[seq];
    latencies.push(ms);
    sinkLat[sinkFor(seq)].push(ms);
  }
  const overall = percentiles(latencies);
  const ingest = percentiles(ingestMs);

  const procNames = [...servers, ...clis].map((p) => p.name);
  log('');
  log('RSS over time (MB) and send → receive latency per interval:');
  log(
    table([
      ['t (s)', 'sent', 'accepted', ...SINKS.map((s) => `recv ${s}`), 'on their way', 'p50 ms', 'p99 ms', ...procNames, 'load 1m'],
      ...intervals.map((r) => [
        r.final ? 'drained' : fmt(r.t),
        fmt(r.sent),
        fmt(r.accepted),
        ...r.perSink.map((n) => fmt(n)),
        fmt(r.pending),
        fmt(r.p50, 1),
        fmt(r.p99, 1),
        ...r.rss.map(mb),
        r.loadavg,
      ]),
    ]),
  );
  log(
    table([
      ['sink', 'received', 'duplicates', 'p50 ms', 'p99 ms', 'max ms'],
      ...SINKS.map((s, i) => {
        const p = percentiles(sinkLat[i]);
        return [s, fmt(perSink[i].received), fmt(perSink[i].duplicates), fmt(p.p50, 1), fmt(p.p99, 1), fmt(p.max, 1)];
      }),
    ]),
  );
  log(
    `totals: sent ${fmt(loadCount)} in ${fmt(DURATION)} s (${fmt(RATE)} msg/s, sender lag max ${fmt(maxLagMs, 1)} ms), accepted ${fmt(accepted)}, refused or failed ${fmt(refused)}` +
      `${sender.firstError ? ` (first: ${sender.firstError})` : ''}; received ${fmt(latencies.length)}, LOST ${fmt(lost)}, duplicates ${fmt(duplicates)}, ` +
      `received though not accepted ${receivedUnaccepted}, damaged ${damage.corrupt}, misrouted ${damage.misrouted}; ` +
      `${drained ? `drained ${fmt(Math.max(0, drainedAt - loadEnd))} ms after the last send` : `NOT drained within ${DRAIN} s`}`,
  );
  log(`throughput: ${fmt(accepted / DURATION, 1)} msg/s accepted, ${fmt(latencies.length / DURATION, 1)} msg/s received`);
  log(`latency send → receive overall: p50 ${fmt(overall.p50, 1)} ms, p99 ${fmt(overall.p99, 1)} ms, max ${fmt(overall.max, 1)} ms; ingest POST p50 ${fmt(ingest.p50, 1)} ms, p99 ${fmt(ingest.p99, 1)} ms`);
  log(`CLI NDJSON lines: ${clis.map((c) => `${c.name} ${fmt(c.out.lines)}${c.out.notOk ? ` (${c.out.notOk} not 200)` : ''}`).join(', ')}`);
  const rssMet = [...idleBefore, ...idleAfter].every((r) => r <= IDLE_RSS_TARGET_MB);
  log(
    `idle RSS (target ≤ ${IDLE_RSS_TARGET_MB} MB each): after start ${idleBefore.map(mb).join(' / ')} MB, after the load ${idleAfter.map(mb).join(' / ')} MB → ${rssMet ? 'met' : 'NOT met'}`,
  );
  log(`loadavg at the end: ${loadavg()}`);

  for (const c of clis) await withTimeout(c.stop(), 40_000, `${c.name} stop`);
  for (const s of servers) await withTimeout(s.stop(), 40_000, `${s.name} stop`);
  await cleanup();

  const problems = [];
  if (lost > 0) problems.push(`${lost} messages lost`);
  if (refused > 0) problems.push(`${refused} ingest requests refused or failed`);
  if (damage.corrupt + damage.misrouted > 0) problems.push(`${damage.corrupt} damaged and ${damage.misrouted} misrouted bodies`);
  if (!drained) problems.push(`not drained within ${DRAIN} s`);
  if (died.length > 0) problems.push(`exited during the run: ${died.join(', ')}`);
  if (args.enforce && !rssMet) problems.push('idle RSS over the target');
  return problems.length > 0 ? problems.join('; ') : undefined;
}

main().then(
  async (failure) => {
    if (failure) await fail(failure);
    process.exit(0);
  },
  async (error) => fail(error instanceof Error ? (error.stack ?? error.message) : String(error)),
);
