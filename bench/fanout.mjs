#!/usr/bin/env node
// Event fan-out benchmark: POST /v1/events on the real hookrelay server on a throwaway, durable
// PostgreSQL (fsync and synchronous_commit on), delivered to an HTTPS receiver in this process (the
// receiver of lib.mjs: counts per webhook-id, 1 signature in 50 verified).
//
//   pnpm bench:fanout [--endpoints 1000] [--other-endpoints 1000] [--events 20] [--baseline 10000]
//                     [--rate 1000] [--rate-seconds 10] [--concurrency 50] [--no-build]
//
// Phases, on one server process with every role (after the baseline's enqueue process):
//   baseline — the delivery benchmark's drain (bench/delivery.mjs, scenario 1), in this run: --baseline
//              messages enqueued to one endpoint while no worker runs, then a process with every role
//              starts; deliveries/s from first to last receipt.
//   fan-out  — --endpoints endpoints of one owner subscribed to `invoice.*`, beside --other-endpoints
//              of 100 other owners that take every type; --events events of `invoice.paid` for that
//              owner, one at a time (the next once every delivery of the last has succeeded): the time
//              to accept each (POST round trip, p50 over the events), and the rate at which its
//              deliveries reach the receiver (first to last receipt, and 202 to last receipt).
//   held     — --rate events/s for --rate-seconds, each to the 3 endpoints of a third owner: the rate
//              accepted, POST round trip p50/p99, deliveries/s, and how long the last deliveries took.
// Every message must be received exactly once and end `succeeded`.
// Exit code: 1 on loss, duplicates, a message not succeeded, a bad signature, a wrong fan-out or a timeout.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  apiPool,
  benchArgs,
  KIB_PAYLOAD,
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
  startDeliveryReceiver,
  startDurablePg,
  startServer,
  table,
  waitUntil,
  watchdog,
  withTimeout,
} from './lib.mjs';

const TARGET_ACCEPT_P50_MS = 50;
/** The held phase holds its rate when it accepts at least this share of it. */
const HELD_SHARE = 0.98;

const args = benchArgs(import.meta.url, 21, {
  endpoints: { type: 'string', default: '1000' },
  'other-endpoints': { type: 'string', default: '1000' },
  events: { type: 'string', default: '20' },
  baseline: { type: 'string', default: '10000' },
  rate: { type: 'string', default: '1000' },
  'rate-seconds': { type: 'string', default: '10' },
  concurrency: { type: 'string', default: '50' },
});
const FAN = Number(args.endpoints);
const OTHERS = Number(args['other-endpoints']);
const EVENTS = Number(args.events);
const BASELINE = Number(args.baseline);
const RATE = Number(args.rate);
const RATE_S = Number(args['rate-seconds']);
const CONC = Number(args.concurrency);
if (![FAN, EVENTS, BASELINE, RATE, RATE_S, CONC].every((n) => Number.isInteger(n) && n > 0) || !(Number.isInteger(OTHERS) && OTHERS >= 0)) {
  process.stderr.write('usage: --endpoints N --events N --baseline N --rate N --rate-seconds N --concurrency N (positive integers) --other-endpoints N (≥ 0)\n');
  process.exit(2);
}
const HELD_ENDPOINTS = 3;
// Bounded: everything at ≥ 100 deliveries/s worst case, plus starts.
watchdog((FAN + OTHERS + BASELINE + FAN * EVENTS + RATE * RATE_S * (HELD_ENDPOINTS + 1)) / 100 + 300);


const FAN_OWNER = 'fanout-owner';
const HELD_OWNER = 'held-owner';
const API_KEY = `hr_${randomBytes(20).toString('hex')}`;
const ENCRYPTION_KEY = randomBytes(32).toString('hex');

let receiver;

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
const median = (values) => pct([...values].sort((a, b) => a - b), 0.5);

function startProcess(name, roles, common) {
  return startServer({
    name,
    databaseUrl: common.databaseUrl,
    dataDir: common.dataDir,
    apiKey: API_KEY,
    encryptionKey: ENCRYPTION_KEY,
    env: { HOOKRELAY_ROLES: roles, HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: common.caFile },
  });
}

async function post(api, p, body, expected) {
  const res = await api.call('POST', p, body);
  if (res.status !== expected) throw new Error(`POST ${p}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** `count` endpoints, CONC creations at once; `subscription(i)` gives each its owner and event types. */
async function createEndpoints(api, count, name, subscription) {
  const ids = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONC, count) }, async () => {
      while (next < count) {
        const i = next++;
        const p = `/${name}/${i}`;
        const data = await post(api, '/v1/endpoints', { url: `https://127.0.0.1:${receiver.port}${p}`, description: `bench ${name}`, ...subscription(i) }, 201);
        receiver.addSecret(p, data.signing_secret);
        ids[i] = data.id;
      }
    }),
  );
  return ids;
}

/** Runs `fn` for 0..count-1 with CONC in flight; the results in order. */
async function inFlight(count, fn) {
  const results = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONC, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await fn(i);
      }
    }),
  );
  return results;
}

/** Receipt times of `ids`: first, last and how many arrived. */
function receiptWindow(ids) {
  let first = Infinity;
  let last = 0;
  let received = 0;
  for (const id of ids) {
    const r = receiver.receipts.get(id);
    if (!r) continue;
    received++;
    first = Math.min(first, r.at);
    last = Math.max(last, r.at);
  }
  return { first, last, received };
}

/** Until every id is received and stored `succeeded` (the result writer's commits), or `timeoutMs`. */
async function settle(stats, ids, where, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  await waitUntil(() => ids.every((id) => receiver.receipts.has(id)), timeoutMs, 5);
  let done = 0;
  while (Date.now() < deadline) {
    [{ done }] = await where(stats);
    if (done >= ids.length) break;
    await delay(20);
  }
  const { received } = receiptWindow(ids);
  const problems = [];
  if (received < ids.length) problems.push(`${ids.length - received} of ${ids.length} messages not received`);
  if (done < ids.length) problems.push(`${ids.length - done} of ${ids.length} messages not succeeded`);
  return problems;
}

function busySince(before) {
  const after = machineCpuMs();
  const total = after.totalMs - before.totalMs;
  return total > 0 ? (after.busyMs - before.busyMs) / total : 0;
}

// ---------- phases ----------

/** The delivery benchmark's drain: a backlog enqueued with no worker, then drained by the all-roles process. */
async function baselinePhase(common, stats) {
  const front = await startProcess('enqueue', 'api,ingest', common);
  const api = apiPool(front.url, API_KEY, CONC);
  const [endpoint] = await createEndpoints(api, 1, 'baseline', () => ({}));
  process.stdout.write(`baseline: enqueueing ${fmt(BASELINE)} messages to one endpoint (no worker running) ...`);
  const t0 = performance.now();
  const ids = await withTimeout(
    inFlight(BASELINE, async () => (await post(api, '/v1/messages', { endpoint_id: endpoint, payload: KIB_PAYLOAD }, 202)).message_id),
    (BASELINE / 50 + 60) * 1000,
    'enqueue backlog',
  );
  process.stdout.write(` ${fmt(BASELINE / ((performance.now() - t0) / 1000))} msg/s accepted\n`);
  // Creating the fan-out's endpoints here keeps their cost out of the measured process's start.
  const fanEndpoints = await createEndpoints(api, FAN, 'fan', () => ({ owner_id: FAN_OWNER, event_types: ['invoice.*'] }));
  await createEndpoints(api, OTHERS, 'other', (i) => ({ owner_id: `other-owner-${i % 100}` }));
  const heldEndpoints = await createEndpoints(api, HELD_ENDPOINTS, 'held', () => ({ owner_id: HELD_OWNER, event_types: ['order.*'] }));
  await api.close();
  await front.stop();

  const all = await startProcess('all-roles', 'api,ingest,worker', common);
  const machineBefore = machineCpuMs();
  const problems = await settle(
    stats,
    ids,
    (sql) => sql`SELECT count(*)::int AS done FROM outbound_messages WHERE endpoint_id = ${endpoint} AND status = 'succeeded'`,
    (BASELINE / 100 + 60) * 1000,
  );
  const win = receiptWindow(ids);
  const seconds = (win.last - win.first) / 1000;
  const rps = seconds > 0 ? (ids.length - 1) / seconds : 0;
  process.stdout.write(`baseline: ${fmt(BASELINE)} delivered in ${fmt(seconds, 2)} s → ${fmt(rps)} deliveries/s; machine ${fmt(busySince(machineBefore) * 100)} % busy\n`);
  return { all, rps, fanEndpoints, heldEndpoints, problems: problems.map((p) => `baseline: ${p}`) };
}

/** One event to the FAN endpoints of one owner, EVENTS times, each after the last one's deliveries succeeded. */
async function fanOutPhase(api, stats, fanEndpoints) {
  process.stdout.write(`fan-out: ${EVENTS} events, each to ${fmt(FAN)} endpoints of one owner (${fmt(OTHERS)} endpoints of other owners beside them) ...\n`);
  const expected = [...fanEndpoints].sort();
  const runs = [];
  const problems = [];
  const loadBefore = loadavg();
  const machineBefore = machineCpuMs();
  for (let e = 0; e < EVENTS; e++) {
    const sentAt = performance.now();
    const event = await post(api, '/v1/events', { event_type: 'invoice.paid', owner_id: FAN_OWNER, payload: KIB_PAYLOAD }, 202);
    const answeredAt = performance.now();
    const got = event.messages.map((m) => m.endpoint_id).sort();
    if (got.length !== expected.length || got.some((id, i) => id !== expected[i])) {
      problems.push(`fan-out: event ${e} went to ${got.length} endpoints, not the owner's ${expected.length}`);
    }
    const ids = event.messages.map((m) => m.message_id);
    problems.push(
      ...(await settle(
        stats,
        ids,
        (sql) => sql`SELECT count(*)::int AS done FROM outbound_messages WHERE event_id = ${event.event_id} AND status = 'succeeded'`,
        (FAN / 100 + 30) * 1000,
      )).map((p) => `fan-out: event ${e}: ${p}`),
    );
    const win = receiptWindow(ids);
    runs.push({
      acceptMs: answeredAt - sentAt,
      firstToLastRps: win.last > win.first ? (ids.length - 1) / ((win.last - win.first) / 1000) : 0,
      answerToLastRps: win.last > answeredAt ? ids.length / ((win.last - answeredAt) / 1000) : 0,
      answerToFirstMs: win.first - answeredAt,
    });
  }
  const accept = runs.map((r) => r.acceptMs).sort((a, b) => a - b);
  const result = {
    acceptP50: pct(accept, 0.5),
    acceptP90: pct(accept, 0.9),
    acceptMax: accept.at(-1),
    rps: median(runs.map((r) => r.firstToLastRps)),
    endToEndRps: median(runs.map((r) => r.answerToLastRps)),
    firstDeliveryMs: median(runs.map((r) => r.answerToFirstMs)),
    busy: busySince(machineBefore),
    loadBefore,
    loadAfter: loadavg(),
    problems,
  };
  process.stdout.write(
    `fan-out: accept p50 ${fmt(result.acceptP50, 1)} ms, p90 ${fmt(result.acceptP90, 1)}, max ${fmt(result.acceptMax, 1)}; ` +
      `deliveries/s (median over events) ${fmt(result.rps)} first → last receipt, ${fmt(result.endToEndRps)} 202 → last receipt; ` +
      `202 → first receipt ${fmt(result.firstDeliveryMs, 1)} ms; machine ${fmt(result.busy * 100)} % busy\n`,
  );
  return result;
}

/** RATE events/s for RATE_S seconds, each to the HELD_ENDPOINTS endpoints of one owner. */
async function heldPhase(api, stats, heldEndpoints) {
  const total = RATE * RATE_S;
  process.stdout.write(`held: ${fmt(RATE)} events/s for ${RATE_S} s, each to ${HELD_ENDPOINTS} endpoints ...`);
  const loadBefore = loadavg();
  const machineBefore = machineCpuMs();
  const sends = [];
  const pending = [];
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await delay(wait);
    const sentAt = performance.now();
    pending.push(
      post(api, '/v1/events', { event_type: 'order.created', owner_id: HELD_OWNER, payload: KIB_PAYLOAD }, 202).then((event) =>
        sends.push({ sentAt, answeredAt: performance.now(), event }),
      ),
    );
  }
  const lastScheduled = performance.now();
  await withTimeout(Promise.all(pending), 120_000, 'held submissions');
  const lastAnswer = Math.max(...sends.map((s) => s.answeredAt));
  const ids = sends.flatMap((s) => s.event.messages.map((m) => m.message_id));
  const problems = [];
  const wrong = sends.filter((s) => s.event.messages.length !== HELD_ENDPOINTS).length;
  if (wrong > 0) problems.push(`held: ${wrong} events did not go to the owner's ${HELD_ENDPOINTS} endpoints`);
  problems.push(
    ...(await settle(
      stats,
      ids,
      (sql) => sql`SELECT count(*)::int AS done FROM outbound_messages WHERE endpoint_id IN ${sql(heldEndpoints)} AND status = 'succeeded'`,
      (ids.length / 100 + 60) * 1000,
    )).map((p) => `held: ${p}`),
  );
  const accept = sends.map((s) => s.answeredAt - s.sentAt).sort((a, b) => a - b);
  const win = receiptWindow(ids);
  const acceptedRate = total / ((lastAnswer - start) / 1000);
  const result = {
    scheduledRate: total / ((lastScheduled - start) / 1000),
    acceptedRate,
    held: acceptedRate >= RATE * HELD_SHARE && problems.length === 0,
    acceptP50: pct(accept, 0.5),
    acceptP99: pct(accept, 0.99),
    acceptMax: accept.at(-1),
    deliveryRps: win.last > win.first ? (ids.length - 1) / ((win.last - win.first) / 1000) : 0,
    tailMs: win.last - lastAnswer,
    busy: busySince(machineBefore),
    loadBefore,
    loadAfter: loadavg(),
    problems,
  };
  process.stdout.write(
    ` accepted ${fmt(result.acceptedRate)} events/s (sent ${fmt(result.scheduledRate)}/s); POST p50 ${fmt(result.acceptP50, 1)} ms, p99 ${fmt(result.acceptP99, 1)}, max ${fmt(result.acceptMax, 1)}; ` +
      `${fmt(result.deliveryRps)} deliveries/s; last delivery ${fmt(result.tailMs)} ms after the last 202; machine ${fmt(result.busy * 100)} % busy\n`,
  );
  return result;
}

// ---------- the run ----------

async function main() {
  if (!args['no-build']) build(['packages/shared', 'packages/server']);
  const m = machine();
  process.stdout.write(`machine: ${m.nproc} cores, ${m.cpu}, node ${m.node}, loadavg ${m.loadavg}\n`);
  process.stdout.write(
    `hookrelay: ${revision()}; ${fmt(FAN)} endpoints per fan-out (${fmt(OTHERS)} of other owners), ${EVENTS} events, baseline ${fmt(BASELINE)} messages, ` +
      `held ${fmt(RATE)} events/s × ${RATE_S} s to ${HELD_ENDPOINTS} endpoints, ${CONC} requests in flight, 1 KiB JSON payload\n`,
  );
  const { pg, stats, settings, version } = await startDurablePg();
  process.stdout.write(`database: ${version}, fsync=${settings.fsync}, synchronous_commit=${settings.sync}\n`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bench-fanout-'));
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  receiver = await startDeliveryReceiver(tmp);
  const common = { databaseUrl: pg.url, dataDir: path.join(tmp, 'data'), caFile: receiver.caFile };

  const baseline = await baselinePhase(common, stats);
  const api = apiPool(baseline.all.url, API_KEY, CONC);
  const fan = await fanOutPhase(api, stats, baseline.fanEndpoints);
  const held = await heldPhase(api, stats, baseline.heldEndpoints);
  await api.close();
  await baseline.all.stop();

  const [{ notSucceeded }] = await stats`SELECT count(*)::int AS "notSucceeded" FROM outbound_messages WHERE status <> 'succeeded'`;
  const [{ jobs }] = await stats`SELECT count(*)::int AS jobs FROM delivery_jobs`;

  // ---------- report ----------
  process.stdout.write('\n');
  process.stdout.write(
    table([
      ['phase', 'accept p50 / p90|p99 / max ms', 'deliveries/s', 'other', 'loadavg before → after'],
      ['baseline (delivery drain)', '–', fmt(baseline.rps), `${fmt(BASELINE)} messages, one endpoint`, '–'],
      [
        `fan-out ×${fmt(FAN)}`,
        `${fmt(fan.acceptP50, 1)} / ${fmt(fan.acceptP90, 1)} / ${fmt(fan.acceptMax, 1)}`,
        fmt(fan.rps),
        `202 → last ${fmt(fan.endToEndRps)}/s, → first ${fmt(fan.firstDeliveryMs, 1)} ms`,
        `${fan.loadBefore.split(' ')[0]} → ${fan.loadAfter.split(' ')[0]}`,
      ],
      [
        `held ${fmt(RATE)}/s ×${HELD_ENDPOINTS}`,
        `${fmt(held.acceptP50, 1)} / ${fmt(held.acceptP99, 1)} / ${fmt(held.acceptMax, 1)}`,
        fmt(held.deliveryRps),
        `accepted ${fmt(held.acceptedRate)} events/s, tail ${fmt(held.tailMs)} ms`,
        `${held.loadBefore.split(' ')[0]} → ${held.loadAfter.split(' ')[0]}`,
      ],
    ]),
  );
  process.stdout.write(`\nsignatures verified: ${fmt(receiver.verified)} (1 in ${receiver.verifyEvery}), bad: ${receiver.badSignatures}; receipts: ${fmt(receiver.total)} for ${fmt(receiver.receipts.size)} webhook-ids\n`);
  process.stdout.write(`target accept p50 ≤ ${TARGET_ACCEPT_P50_MS} ms: ${fan.acceptP50 <= TARGET_ACCEPT_P50_MS ? 'met' : 'NOT met'} (${fmt(fan.acceptP50, 1)} ms)\n`);
  process.stdout.write(`target fan-out deliveries/s ≥ the delivery drain's in this run: ${fan.rps >= baseline.rps ? 'met' : 'NOT met'} (${fmt(fan.rps)} against ${fmt(baseline.rps)})\n`);
  process.stdout.write(`target ${fmt(RATE)} events/s held (≥ ${HELD_SHARE * 100} % accepted, every delivery made): ${held.held ? 'met' : 'NOT met'} (${fmt(held.acceptedRate)} events/s, accept p99 ${fmt(held.acceptP99, 1)} ms)\n`);
  process.stdout.write(`loadavg at the end: ${loadavg()}\n`);

  await cleanup();
  const problems = [...baseline.problems, ...fan.problems, ...held.problems];
  if (notSucceeded > 0) problems.push(`${notSucceeded} messages not succeeded`);
  if (jobs > 0) problems.push(`${jobs} delivery jobs left`);
  if (receiver.badSignatures > 0) problems.push(`${receiver.badSignatures} bad signatures`);
  if (receiver.total !== receiver.receipts.size) problems.push(`${receiver.total - receiver.receipts.size} duplicate receipts`);
  return problems.length > 0 ? problems.join('; ') : undefined;
}

runBench(main);
