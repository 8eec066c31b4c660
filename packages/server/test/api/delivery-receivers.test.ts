import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESPONSE_BODY_LIMIT_BYTES } from '../../src/delivery/sender.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { waitForMessage } from '../helpers/receiver.js';

/**
 * Receivers that misbehave: one that accepts and never answers, one that answers 200 with a 10 MB
 * body, one that trickles its body a byte every 100 ms. Each attempt ends within the per-attempt
 * deadline (docs/api.md, How a delivery is sent; 1.5 s here) with the documented outcome, the
 * worker reads no more than the 20 KB it keeps (docs/api.md), and it drops the connection instead
 * of draining it.
 */
const REQUEST_TIMEOUT_MS = 1500;
/** Scheduling on 2 shared cores: how late an attempt may end past its deadline. */
const SLACK_MS = 1000;
const HUGE_BODY_BYTES = 10 * 1024 * 1024;

/** What one misbehaving answer saw of the worker, on the receiver's side. */
interface Exchange {
  startedAt: number;
  /** When the worker closed the connection (or the answer finished). */
  closedAt: number | null;
  bytesWritten: number;
  finished: boolean;
}

let t: TestApp;
let server: https.Server;
let base: string;
let certDir: string;
const sockets = new Set<Socket>();
const exchanges = new Map<string, Exchange>();
const timers = new Set<NodeJS.Timeout>();

beforeAll(async () => {
  certDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bad-receiver-'));
  const key = path.join(certDir, 'key.pem');
  const cert = path.join(certDir, 'cert.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=hookrelay-bad-receiver',
    '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { stdio: 'ignore' });
  server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const exchange: Exchange = { startedAt: Date.now(), closedAt: null, bytesWritten: 0, finished: false };
      exchanges.set(req.url ?? '', exchange);
      res.on('finish', () => (exchange.finished = true));
      res.on('close', () => (exchange.closedAt ??= Date.now()));
      if (req.url === '/hang') return; // accepted, never answered
      if (req.url === '/huge') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(HUGE_BODY_BYTES) });
        const chunk = Buffer.alloc(64 * 1024, 'x');
        const pump = () => {
          while (!res.destroyed && exchange.bytesWritten < HUGE_BODY_BYTES) {
            exchange.bytesWritten += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          if (!res.destroyed) res.end();
        };
        pump();
        return;
      }
      if (req.url === '/trickle') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => {
          // Bounded: 30 s of trickling at most, far past any deadline under test.
          if (res.destroyed || Date.now() - exchange.startedAt > 30_000) {
            clearInterval(timer);
            if (!res.destroyed) res.end();
            return;
          }
          exchange.bytesWritten += 1;
          res.write('x');
        }, 100);
        timers.add(timer);
        return;
      }
      res.writeHead(404).end();
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t = await createTestApp({
    // One attempt per message within the test: the retry comes a minute later.
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: cert, HOOKRELAY_RETRY_SCHEDULE: '60' },
    worker: { requestTimeoutMs: REQUEST_TIMEOUT_MS, pollIntervalMs: 1000, stopGraceMs: 2000 },
  });
});

afterAll(async () => {
  await t?.close();
  for (const timer of timers) clearInterval(timer);
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

/** Sends one message to `path` on the bad receiver; resolves to its message and first attempt once it has one. */
async function attemptAt(receiverPath: string): Promise<{ message: any; attempt: any }> {
  const created = await t.request('POST', '/v1/endpoints', { body: { url: `${base}${receiverPath}` } });
  expect(created.status, created.raw).toBe(201);
  const sent = await t.request('POST', '/v1/messages', { body: { endpoint_id: created.body.data.id, payload: { to: receiverPath } } });
  expect(sent.status, sent.raw).toBe(202);
  const id: string = sent.body.data.message_id;
  const message = await waitForMessage(t, id, (m) => m.attempt_count >= 1 && m.status !== 'delivering', { timeoutMs: 15_000 });
  const attempts = await t.request('GET', `/v1/messages/${id}/attempts`);
  expect(attempts.body.data, attempts.raw).toHaveLength(1);
  return { message, attempt: attempts.body.data[0] };
}

async function closedByWorker(receiverPath: string): Promise<Exchange> {
  const deadline = Date.now() + 5000;
  while (exchanges.get(receiverPath)?.closedAt == null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return exchanges.get(receiverPath)!;
}

describe('a receiver that misbehaves', () => {
  it('accepts and never answers: the attempt is a timeout at the deadline, and a retry is scheduled', async () => {
    const { message, attempt } = await attemptAt('/hang');
    expect(attempt).toMatchObject({ response_status: null, error: `timeout: no complete answer within ${REQUEST_TIMEOUT_MS} ms` });
    expect(attempt.latency_ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(attempt.latency_ms).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    expect(message).toMatchObject({ status: 'pending_retry', attempt_count: 1 });
    const exchange = await closedByWorker('/hang');
    expect(exchange.closedAt! - exchange.startedAt).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
  });

  it('answers 200 with a 10 MB body: succeeded, 20 KB of it kept, and the rest never read', async () => {
    const { message, attempt } = await attemptAt('/huge');
    expect(message).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 200 });
    expect(attempt.response_status).toBe(200);
    expect(attempt.error ?? null).toBeNull();
    expect(attempt.response_body).toBe('x'.repeat(RESPONSE_BODY_LIMIT_BYTES));
    expect(RESPONSE_BODY_LIMIT_BYTES).toBe(20 * 1024);
    expect(attempt.latency_ms).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    // The worker dropped the connection after its 20 KB: the receiver could not send the 10 MB.
    const exchange = await closedByWorker('/huge');
    expect(exchange.finished).toBe(false);
    expect(exchange.bytesWritten).toBeLessThan(HUGE_BODY_BYTES);
  });

  it('trickles a byte every 100 ms: cut at the deadline; the 200 that arrived counts, with the bytes read so far', async () => {
    const { message, attempt } = await attemptAt('/trickle');
    // The status came in time; a body still arriving at the deadline is cut, not waited for.
    expect(message).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 200 });
    expect(attempt.latency_ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(attempt.latency_ms).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    expect(attempt.response_body).toMatch(/^x{5,25}$/);
    const exchange = await closedByWorker('/trickle');
    expect(exchange.finished).toBe(false);
    expect(exchange.closedAt! - exchange.startedAt).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
  });
});
