#!/usr/bin/env node
// Delivery benchmark: signed deliveries per second from the real hookrelay server
// process(es) on a throwaway, durable PostgreSQL (fsync and synchronous_commit on) to an HTTPS
// receiver in this process (self-signed certificate made with openssl, trusted through
// HOOKRELAY_TLS_CA_FILE), and the enqueue → first attempt latency.
//
//   pnpm bench:delivery [--messages 20000] [--concurrency 50] [--rate 100] [--latency-seconds 10]
//                       [--scenarios 1,2] [--delivery-concurrency N] [--pool-size N] [--no-build]
//
// Scenarios: "1" = one process with every role; "2" = one api,ingest process + two worker processes.
// Phases of each scenario, each on its own endpoint:
//   drain    — N messages are enqueued while no worker runs (POST /v1/messages, --concurrency requests
//              in flight), then the worker(s) start; deliveries/s from first to last receipt.
//   steady   — N messages submitted as fast as possible while the worker(s) run; deliveries/s from
//              first to last receipt, which includes the submission.
//   latency  — --rate messages/s for --latency-seconds; receipt time − send time of the POST (same
//              process clock), p50/p90/p99, and its parts: send → the server's created_at, created_at →
//              202 received, 202 received → first_attempt_at, first_attempt_at → receipt (server
//              stamps are wall-clock milliseconds of the same machine).
// Every message must be received exactly once (counted by webhook-id) and end `succeeded`; one
// delivery in 50 has its Standard Webhooks signature verified (HMAC-SHA256) here.
// Exit code: 1 on loss, duplicates, a non-succeeded message, a bad signature or a timeout.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  build,
  cleanup,
  cleanups,
  delay,
  fmt,
  loadavg,
  machine,
  machineCpuMs,
  revision,
  runBench,
  selfCpuMs,
  serverDir,
  startChild,
  startDurablePg,
  table,
  treeCpuMs,
  waitUntil,
  watchdog,
  withTimeout,
  apiPool,
  benchArgs,
  KIB_PAYLOAD,
  startDeliveryReceiver,
} from './lib.mjs';

const TARGET_RPS = 2000;
const TARGET_P50_MS = 10;

const args = benchArgs(import.meta.url, 20, {
  messages: { type: 'string', default: '20000' },
  concurrency: { type: 'string', default: '50' },
  rate: { type: 'string', default: '100' },
  'latency-seconds': { type: 'string', default: '10' },
  scenarios: { type: 'string', default: '1,2' },
  'delivery-concurrency': { type: 'string' },
  'pool-size': { type: 'string' },
});
const N = Number(args.messages);
const CONC = Number(args.concurrency);
const RATE = Number(args.rate);
const LAT_S = Number(args['latency-seconds']);
const scenarios = args.scenarios.split(',').map(Number);
if (![N, CONC, RATE, LAT_S].every((n) => Number.isInteger(n) && n > 0) || scenarios.some((s) => s !== 1 && s !== 2)) {
  process.stderr.write('usage: --messages N --concurrency N --rate N --latency-seconds N (positive integers) --scenarios 1,2\n');
  process.exit(2);
}
// Bounded: enqueue and delivery at ≥ 100/s worst case, plus starts and the latency phases.
watchdog(scenarios.length * ((4 * N) / 100 + LAT_S + 120) + 120);


// ---------- the HTTPS receiver ----------

/** The receiver of lib.mjs (receipts per webhook-id, 1 signature in 50 verified), started by main. */
let receiver;

// ---------- the server processes ----------

const ENCRYPTION_KEY = randomBytes(32).toString('hex');
const API_KEY = `hr_${randomBytes(20).toString('hex')}`;

async function startProcess(name, roles, common) {
  const proc = await startChild(name, [path.join(serverDir, 'dist/bin/hookrelay-server.js'), 'start'], {
    ...process.env,
    HOOKRELAY_HOST: '127.0.0.1',
    HOOKRELAY_PORT: '0',
    DATABASE_URL: common.databaseUrl,
    HOOKRELAY_ENCRYPTION_KEY: ENCRYPTION_KEY,
    HOOKRELAY_BOOTSTRAP_API_KEY: API_KEY,
    HOOKRELAY_DATA_DIR: common.dataDir,
    HOOKRELAY_LOG_LEVEL: 'warn',
    HOOKRELAY_ROLES: roles,
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
    HOOKRELAY_TLS_CA_FILE: common.caFile,
    // One key submits as fast as the server accepts: the per-key API limit would be measured instead.
    HOOKRELAY_API_RATE_LIMIT: '0',
    ...(args['delivery-concurrency'] ? { HOOKRELAY_DELIVERY_CONCURRENCY: args['delivery-concurrency'] } : {}),
    ...(args['pool-size'] ? { HOOKRELAY_DB_POOL_SIZE: args['pool-size'] } : {}),
  });
  return { name, ...proc };
}

/** An undici pool to the API process, CONC connections. */
const apiClient = (url) => apiPool(url, API_KEY, CONC);

async function createEndpoint(api, receiverPort, phase) {
  const p = `/hook-${phase}`;
  const res = await withTimeout(api.call('POST', '/v1/endpoints', { url: `https://127.0.0.1:${receiverPort}${p}`, description: `bench ${phase}` }), 10_000, 'create endpoint');
  if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${JSON.stringify(res.body)}`);
  const { id, signing_secret: secret } = res.body.data;
  receiver.addSecret(p, secret);
  return id;
}

/** POST /v1/messages; returns the message id, the send time and the answer's time (performance.now()). */
async function submit(api, endpointId) {
  const sentAt = performance.now();
  const res = await api.call('POST', '/v1/messages', { endpoint_id: endpointId, payload: KIB_PAYLOAD });
  const answeredAt = performance.now();
  if (res.status !== 202) throw new Error(`POST /v1/messages: ${res.status} ${JSON.stringify(res.body)}`);
  const data = res.body.data ?? res.body;
  return { id: data.message_id, sentAt, answeredAt };
}

/** Submits `count` messages with CONC requests in flight; resolves to { ids, seconds }. */
async function submitMany(api, endpointId, count) {
  const ids = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (next < count) {
        next++;
        ids.push((await submit(api, endpointId)).id);
      }
    }),
  );
  return { ids, seconds: (performance.now() - t0) / 1000 };
}

// ---------- accounting ----------

function cpuSnapshot(procs, postmasterPid) {
  const snap = { procs: procs.map((p) => treeCpuMs(p.child.pid)), pg: treeCpuMs(postmasterPid), self: selfCpuMs(), machine: machineCpuMs(), wall: performance.now() };
  return snap;
}
function cpuDelta(procs, before, after, deliveries) {
  const per = (ms) => (ms / deliveries) * 1000; // CPU ms per 1,000 deliveries
  const busy = after.machine.busyMs - before.machine.busyMs;
  const total = after.machine.totalMs - before.machine.totalMs;
  const ours = procs.reduce((sum, _, i) => sum + after.procs[i] - before.procs[i], 0) + (after.pg - before.pg) + (after.self - before.self);
  return {
    // Cores used by other processes on the machine meanwhile (/proc/stat busy minus ours).
    othersCores: (busy - ours) / (after.wall - before.wall),
    procs: procs.map((p, i) => `${p.name} ${fmt(per(after.procs[i] - before.procs[i]))}`),
    pg: per(after.pg - before.pg),
    self: per(after.self - before.self),
    machineBusy: total > 0 ? busy / total : 0,
  };
}

/** Waits until every id is received; then checks exactly-once and the stored statuses. */
async function settle(stats, ids, endpointId, timeoutMs) {
  const got = await waitUntil(() => ids.every((id) => receiver.receipts.has(id)), timeoutMs, 20);
  // Let late duplicates and the result writer's group commits land.
  const statusesDone = async () => {
    const rows = await stats`SELECT status, count(*)::int AS n FROM outbound_messages WHERE endpoint_id = ${endpointId} GROUP BY status`;
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  };
  let statuses = await statusesDone();
  const deadline = Date.now() + 15_000;
  while ((statuses.succeeded ?? 0) < ids.length && Date.now() < deadline) {
    await delay(100);
    statuses = await statusesDone();
  }
  await delay(300);
  const missing = ids.filter((id) => !receiver.receipts.has(id)).length;
  const duplicates = ids.filter((id) => (receiver.receipts.get(id)?.n ?? 0) > 1).length;
  const [{ jobs }] = await stats`SELECT count(*)::int AS jobs FROM delivery_jobs WHERE destination = ${endpointId}`;
  const problems = [];
  if (!got || missing > 0) problems.push(`${missing} of ${ids.length} messages not received`);
  if (duplicates > 0) problems.push(`${duplicates} messages received more than once`);
  if ((statuses.succeeded ?? 0) !== ids.length) problems.push(`statuses ${JSON.stringify(statuses)}, expected ${ids.length} succeeded`);
  if (jobs > 0) problems.push(`${jobs} delivery jobs left`);
  return { statuses, missing, duplicates, problems };
}

/** Receipt times of `ids`: first, last, deliveries/s between them. */
function receiptWindow(ids) {
  let first = Infinity;
  let last = 0;
  for (const id of ids) {
    const r = receiver.receipts.get(id);
    if (!r) continue;
    first = Math.min(first, r.at);
    last = Math.max(last, r.at);
  }
  const seconds = (last - first) / 1000;
  return { first, last, seconds, rps: seconds > 0 ? (ids.length - 1) / seconds : 0 };
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];

// ---------- a scenario ----------

async function runScenario(workers, common, stats, postmasterPid) {
  const label = workers === 1 ? '1 worker (one process, all roles)' : '2 workers (api,ingest + 2 × worker)';
  process.stdout.write(`\n== scenario: ${label} ==\n`);
  const result = { workers, label, phases: {} };
  const problems = [];

  // --- drain: enqueue a backlog with no worker running, then start the worker(s) ---
  const front = await startProcess(workers === 1 ? 'enqueue' : 'api', 'api,ingest', common);
  let api = apiClient(front.url);
  const drainEndpoint = await createEndpoint(api, common.receiverPort, `s${workers}-drain`);
  process.stdout.write(`drain: enqueueing ${fmt(N)} messages (no worker running) ...`);
  const backlog = await withTimeout(submitMany(api, drainEndpoint, N), (N / 50 + 60) * 1000, 'enqueue backlog');
  process.stdout.write(` ${fmt(N / backlog.seconds)} msg/s accepted\n`);
  let procs;
  if (workers === 1) {
    await api.close();
    await front.stop();
    const all = await startProcess('all-roles', 'api,ingest,worker', common);
    procs = [all];
    api = apiClient(all.url);
  } else {
    procs = [front];
    const started = await Promise.all([startProcess('worker-1', 'worker', common), startProcess('worker-2', 'worker', common)]);
    procs.push(...started);
  }
  // Workers start claiming as soon as they listen; CPU is counted from here.
  let before = cpuSnapshot(procs, postmasterPid);
  const loadBefore = loadavg();
  let check = await settle(stats, backlog.ids, drainEndpoint, (N / 100 + 60) * 1000);
  let after = cpuSnapshot(procs, postmasterPid);
  let win = receiptWindow(backlog.ids);
  problems.push(...check.problems.map((p) => `drain: ${p}`));
  result.phases.drain = { rps: win.rps, seconds: win.seconds, enqueueRps: N / backlog.seconds, cpu: cpuDelta(procs, before, after, N), statuses: check.statuses, loadBefore, loadAfter: loadavg() };
  process.stdout.write(`drain: ${fmt(N)} delivered in ${fmt(win.seconds, 2)} s → ${fmt(win.rps)} deliveries/s; ${JSON.stringify(check.statuses)}\n`);

  // --- steady: submit as fast as possible while the worker(s) run ---
  const steadyEndpoint = await createEndpoint(api, common.receiverPort, `s${workers}-steady`);
  process.stdout.write(`steady: submitting ${fmt(N)} messages while delivering ...`);
  before = cpuSnapshot(procs, postmasterPid);
  const t0 = performance.now();
  const steady = await withTimeout(submitMany(api, steadyEndpoint, N), (N / 50 + 60) * 1000, 'steady submission');
  check = await settle(stats, steady.ids, steadyEndpoint, (N / 100 + 60) * 1000);
  after = cpuSnapshot(procs, postmasterPid);
  win = receiptWindow(steady.ids);
  problems.push(...check.problems.map((p) => `steady: ${p}`));
  const endToEnd = (win.last - t0) / 1000;
  result.phases.steady = {
    rps: win.rps,
    seconds: win.seconds,
    submitRps: N / steady.seconds,
    endToEndRps: N / endToEnd,
    backlogAtSubmitEnd: steady.ids.filter((id) => !receiver.receipts.has(id) || receiver.receipts.get(id).at > t0 + steady.seconds * 1000).length,
    cpu: cpuDelta(procs, before, after, N),
    statuses: check.statuses,
  };
  process.stdout.write(
    ` submitted at ${fmt(N / steady.seconds)} msg/s; delivered ${fmt(win.rps)} deliveries/s (first → last receipt), ` +
      `${fmt(N / endToEnd)}/s first send → last receipt; ${JSON.stringify(check.statuses)}\n`,
  );

  // --- latency: a modest steady rate ---
  const latEndpoint = await createEndpoint(api, common.receiverPort, `s${workers}-latency`);
  const total = RATE * LAT_S;
  process.stdout.write(`latency: ${RATE} msg/s for ${LAT_S} s ...`);
  before = cpuSnapshot(procs, postmasterPid);
  const sends = [];
  const start = performance.now();
  const inflight = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await delay(wait);
    inflight.push(submit(api, latEndpoint).then((s) => sends.push(s)));
  }
  await withTimeout(Promise.all(inflight), 60_000, 'latency submissions');
  const latIds = sends.map((s) => s.id);
  check = await settle(stats, latIds, latEndpoint, 60_000);
  after = cpuSnapshot(procs, postmasterPid);
  problems.push(...check.problems.map((p) => `latency: ${p}`));
  const lat = sends.filter((s) => receiver.receipts.has(s.id)).map((s) => receiver.receipts.get(s.id).at - s.sentAt).sort((a, b) => a - b);
  const [db] = await stats`
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM first_attempt_at - created_at) * 1000) AS p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM first_attempt_at - created_at) * 1000) AS p99
    FROM outbound_messages WHERE endpoint_id = ${latEndpoint}`;
  // Where the time goes, per message: the server's created_at (taken when the request reaches the
  // enqueue) and first_attempt_at (just before the request is sent) are wall-clock milliseconds of
  // the same machine, set against this process's clock (performance.timeOrigin + now()).
  const stamps = new Map(
    (await stats`SELECT id, (extract(epoch FROM created_at) * 1000)::float8 AS created, (extract(epoch FROM first_attempt_at) * 1000)::float8 AS attempted
                 FROM outbound_messages WHERE endpoint_id = ${latEndpoint}`).map((r) => [r.id, r]),
  );
  const wall = (t) => performance.timeOrigin + t;
  const parts = { toEnqueue: [], enqueueToAnswer: [], answerToAttempt: [], attemptToReceipt: [], post: [] };
  for (const s of sends) {
    const st = stamps.get(s.id);
    const receipt = receiver.receipts.get(s.id);
    if (!st || st.attempted === null || !receipt) continue;
    parts.post.push(s.answeredAt - s.sentAt);
    parts.toEnqueue.push(st.created - wall(s.sentAt));
    parts.enqueueToAnswer.push(wall(s.answeredAt) - st.created);
    parts.answerToAttempt.push(st.attempted - wall(s.answeredAt));
    parts.attemptToReceipt.push(wall(receipt.at) - st.attempted);
  }
  for (const list of Object.values(parts)) list.sort((a, b) => a - b);
  const breakdown = Object.fromEntries(Object.entries(parts).map(([k, list]) => [k, { p50: pct(list, 0.5), p90: pct(list, 0.9) }]));
  result.phases.latency = {
    breakdown,
    p50: pct(lat, 0.5),
    p90: pct(lat, 0.9),
    p99: pct(lat, 0.99),
    max: lat.at(-1),
    dbP50: Number(db.p50),
    dbP99: Number(db.p99),
    cpu: cpuDelta(procs, before, after, total),
    statuses: check.statuses,
  };
  const L = result.phases.latency;
  process.stdout.write(
    ` send → receipt p50 ${fmt(L.p50, 1)} ms, p90 ${fmt(L.p90, 1)}, p99 ${fmt(L.p99, 1)}, max ${fmt(L.max, 1)}; ` +
      `server's created_at → first_attempt_at p50 ${fmt(L.dbP50, 1)} / p99 ${fmt(L.dbP99, 1)} ms\n`,
  );
  const B = L.breakdown;
  const part = (b) => `${fmt(b.p50, 1)} / ${fmt(b.p90, 1)}`;
  process.stdout.write(
    `latency parts, p50 / p90 ms (server stamps have ms resolution): POST round trip ${part(B.post)}; send → enqueue ${part(B.toEnqueue)}, ` +
      `enqueue → 202 received ${part(B.enqueueToAnswer)}, 202 received → first attempt ${part(B.answerToAttempt)}, first attempt → receipt ${part(B.attemptToReceipt)}\n`,
  );

  await api.close();
  for (const p of procs) await p.stop();
  result.problems = problems;
  return result;
}

// ---------- the run ----------

async function main() {
  if (!args['no-build']) build(['packages/shared', 'packages/server']);
  const m = machine();
  process.stdout.write(`machine: ${m.nproc} cores, ${m.cpu}, node ${m.node}, loadavg ${m.loadavg}\n`);
  process.stdout.write(
    `hookrelay: ${revision()}; delivery concurrency ${args['delivery-concurrency'] ?? 'default'}, pool ${args['pool-size'] ?? 'default'}; ` +
      `${fmt(N)} messages per throughput phase, ${CONC} requests in flight, 1 KiB JSON payload\n`,
  );
  const { pg, postmasterPid, stats, settings, version } = await startDurablePg();
  process.stdout.write(`database: ${version}, fsync=${settings.fsync}, synchronous_commit=${settings.sync}\n`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-delivery-'));
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  receiver = await startDeliveryReceiver(tmp);
  const common = { databaseUrl: pg.url, dataDir: path.join(tmp, 'data'), caFile: receiver.caFile, receiverPort: receiver.port };

  const results = [];
  for (const s of scenarios) results.push(await runScenario(s, common, stats, postmasterPid));

  // ---------- report ----------
  process.stdout.write('\n');
  process.stdout.write(
    table([
      ['scenario', 'drain deliv/s', 'steady deliv/s', 'steady submit/s', 'latency p50 / p90 / p99 ms', 'server p50 / p99 ms'],
      ...results.map((r) => [
        `${r.workers} worker${r.workers > 1 ? 's' : ''}`,
        fmt(r.phases.drain.rps),
        fmt(r.phases.steady.rps),
        fmt(r.phases.steady.submitRps),
        `${fmt(r.phases.latency.p50, 1)} / ${fmt(r.phases.latency.p90, 1)} / ${fmt(r.phases.latency.p99, 1)}`,
        `${fmt(r.phases.latency.dbP50, 1)} / ${fmt(r.phases.latency.dbP99, 1)}`,
      ]),
    ]),
  );
  process.stdout.write('\nCPU ms per 1,000 deliveries (each process incl. children; PostgreSQL = postmaster + backends; bench = receiver + client), machine busy %:\n');
  for (const r of results) {
    for (const [phase, p] of Object.entries(r.phases)) {
      process.stdout.write(`  ${r.workers}w ${phase.padEnd(7)} ${p.cpu.procs.join(', ')}, PostgreSQL ${fmt(p.cpu.pg)}, bench ${fmt(p.cpu.self)}; machine ${fmt(p.cpu.machineBusy * 100)} % busy, other processes ${fmt(Math.max(0, p.cpu.othersCores), 2)} cores\n`);
    }
    process.stdout.write(`  ${r.workers}w drain loadavg before ${r.phases.drain.loadBefore} / after ${r.phases.drain.loadAfter}\n`);
  }
  process.stdout.write(`\nsignatures verified: ${fmt(receiver.verified)} (1 in 50), bad: ${receiver.badSignatures}; receipts: ${fmt(receiver.total)} for ${fmt(receiver.receipts.size)} webhook-ids\n`);
  const bestRps = Math.max(...results.flatMap((r) => [r.phases.drain.rps, r.phases.steady.rps]));
  const worstP50 = Math.max(...results.map((r) => r.phases.latency.p50));
  process.stdout.write(`target ≥ ${fmt(TARGET_RPS)} deliveries/s: ${results.map((r) => `${r.workers}w drain ${r.phases.drain.rps >= TARGET_RPS ? 'met' : 'NOT met'}, steady ${r.phases.steady.rps >= TARGET_RPS ? 'met' : 'NOT met'}`).join('; ')} (best ${fmt(bestRps)})\n`);
  process.stdout.write(`target p50 enqueue → attempt ≤ ${TARGET_P50_MS} ms: ${worstP50 <= TARGET_P50_MS ? 'met' : 'NOT met'} (worst p50 ${fmt(worstP50, 1)} ms)\n`);
  process.stdout.write(`loadavg at the end: ${loadavg()}\n`);

  await cleanup();
  const problems = results.flatMap((r) => r.problems.map((p) => `${r.workers}w ${p}`));
  if (receiver.badSignatures > 0) problems.push(`${receiver.badSignatures} bad signatures`);
  if (receiver.total !== receiver.receipts.size) problems.push(`${receiver.total - receiver.receipts.size} duplicate receipts in total`);
  return problems.length > 0 ? problems.join('; ') : undefined;
}

runBench(main);
