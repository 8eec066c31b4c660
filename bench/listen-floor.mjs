#!/usr/bin/env node
// The floor under bench/listen.mjs: the same sender, local app, durable throwaway PostgreSQL and
// phases, through the least code that does the durable part of the path instead of hookrelay
// (bench/floor/relay.mjs: one INSERT per webhook in its own commit, then the raw body to every
// WebSocket client; bench/floor/client.mjs: each body POSTed to the app). What it measures is what
// this machine costs for sender → durable commit → push → local app, with nothing else.
//
//   node bench/listen-floor.mjs [--duration 10] [--rates 50,500] [--warmup 3] [--connections 128]
//
// Per phase: sent, received, lost, latency p50/p90/p99/max (ms, sender POST → app received).
// Exit 1 when a message is lost or a wait times out.
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  bodyFor, cleanup, delay, fail, fmt, here, loadavg, machine, root, seqOf, serveOnLoopback, startChild, startDurablePg, table, usageText, watchdog,
} from './lib.mjs';

const { Pool } = createRequire(path.join(root, 'packages/cli/package.json'))('undici');

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    rates: { type: 'string', default: '50,500' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '128' },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  process.stdout.write(usageText(import.meta.url, 12));
  process.exit(0);
}
const seconds = Number(args.duration);
const rates = args.rates.split(',').filter(Boolean).map(Number);
watchdog(120 + (rates.length + 1) * (seconds + 10));

const sendAt = [];
const receivedAt = [];
let duplicates = 0;
let nextSeq = 0;

async function phase(pool, rate, phaseSeconds) {
  const n = Math.round(rate * phaseSeconds);
  const first = nextSeq;
  nextSeq += n;
  const t0 = performance.now() + 5;
  for (let i = 0; i < n; i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait >= 1) await delay(Math.floor(wait));
    const seq = first + i;
    sendAt[seq] = performance.now();
    pool.request({ path: '/in', method: 'POST', headers: { 'content-type': 'application/json' }, body: bodyFor(seq) }).then(
      (answer) => answer.body.dump(),
      () => {},
    );
  }
  const deadline = performance.now() + 5_000;
  const done = () => receivedAt.slice(first, first + n).filter((t) => t !== undefined).length === n;
  while (!done() && performance.now() < deadline) await delay(20);
  const latencies = [];
  for (let seq = first; seq < first + n; seq++) if (receivedAt[seq] !== undefined) latencies.push(receivedAt[seq] - sendAt[seq]);
  latencies.sort((a, b) => a - b);
  const at = (p) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)] ?? NaN;
  return { rate, sent: n, received: latencies.length, lost: n - latencies.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
}

async function main() {
  const m = machine();
  const log = (text) => process.stdout.write(`${text}\n`);
  log(`machine: ${m.nproc} cores, ${m.cpu}, node ${m.node}, loadavg ${m.loadavg}`);
  const { pg, settings, version } = await startDurablePg();
  log(`database: ${version}, fsync=${settings.fsync}, synchronous_commit=${settings.sync}, full_page_writes=${settings.fpw}`);
  const relay = await startChild('relay', [path.join(here, 'floor/relay.mjs')], { ...process.env, DATABASE_URL: pg.url });
  const app = createServer((request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', () => {
      const seq = seqOf(Buffer.concat(chunks));
      if (receivedAt[seq] !== undefined) duplicates += 1;
      else receivedAt[seq] = performance.now();
      response.end('ok');
    });
  });
  const appPort = await serveOnLoopback(app, 'local app');
  await startChild('client', [path.join(here, 'floor/client.mjs')], { ...process.env, APP_URL: `http://127.0.0.1:${appPort}`, RELAY_URL: relay.url });
  const pool = new Pool(relay.url, { connections: Number(args.connections), pipelining: 1 });
  log(`warming up at 200 msg/s for ${args.warmup}s ...`);
  await phase(pool, 200, Number(args.warmup));
  const rows = [];
  for (const rate of rates) {
    const result = await phase(pool, rate, seconds);
    rows.push(result);
    log(`floor ${rate} msg/s: sent ${result.sent}, received ${result.received}, lost ${result.lost}; latency ms p50 ${fmt(result.p50, 2)} p90 ${fmt(result.p90, 2)} p99 ${fmt(result.p99, 2)} max ${fmt(result.max, 1)}`);
  }
  await pool.close();
  log('');
  log(table([
    ['msg/s', 'sent', 'received', 'lost', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
    ...rows.map((r) => [fmt(r.rate), fmt(r.sent), fmt(r.received), fmt(r.lost), fmt(r.p50, 2), fmt(r.p90, 2), fmt(r.p99, 2), fmt(r.max, 1)]),
  ]));
  log(`duplicates: ${duplicates}; loadavg at the end: ${loadavg()}`);
  return rows.some((r) => r.lost > 0) ? 1 : 0;
}

main().then(
  async (code) => {
    await cleanup();
    process.exit(code);
  },
  (error) => fail(error instanceof Error ? error.stack ?? error.message : String(error)),
);
