import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createPull, ingestPull } from '../helpers/pull.js';
import { builtCommit, serverPackageVersion } from '../helpers/build-info.js';
import { Receiver, settled, waitForMessage } from '../helpers/receiver.js';

/**
 * GET /metrics: counters move by exactly what the requests did, the queue gauges read the database
 * at scrape time, and the connected-CLI gauge follows the open streams. Every figure is a delta
 * between two scrapes, so the tests do not depend on one another.
 */
const MAX_BODY_BYTES = 4096;

let receiver: Receiver;
let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: {
      ...receiver.deliveryEnv(),
      // One retry, 0.3 s later: a failing receiver yields one `retrying` and then one `failed`.
      HOOKRELAY_RETRY_SCHEDULE: '0.3',
      HOOKRELAY_MAX_INGEST_BODY_BYTES: String(MAX_BODY_BYTES),
    },
  });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

type Samples = Map<string, number>;

/** Parses the text format into `name{a="x",b="y"}` → value (labels in the order written). */
function parse(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

async function scrape(app: TestApp = t, headers: Record<string, string> = {}): Promise<Samples> {
  const res = await app.app.inject({ method: 'GET', url: '/metrics', headers });
  expect(res.statusCode, res.body).toBe(200);
  return parse(res.body);
}

/** The value of one series; a series absent from the scrape counts as 0 (a counter not yet seen). */
function value(samples: Samples, series: string): number {
  return samples.get(series) ?? 0;
}

const delta = (before: Samples, after: Samples, series: string) => value(after, series) - value(before, series);

describe('GET /metrics', () => {
  it('answers the Prometheus text format without an API key, with process metrics and every hookrelay metric', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    for (const name of [
      'hookrelay_process_resident_memory_bytes',
      'hookrelay_nodejs_eventloop_lag_seconds',
      'hookrelay_ingest_requests_total',
      'hookrelay_ingest_duration_seconds',
      'hookrelay_verification_failures_total',
      'hookrelay_deliveries_total',
      'hookrelay_delivery_queue_depth',
      'hookrelay_delivery_queue_oldest_age_seconds',
      'hookrelay_connected_clis',
    ]) {
      expect(res.body, name).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    }
    // Every label combination exists from the start, so rate() sees the first increment.
    const samples = parse(res.body);
    expect(samples.get('hookrelay_ingest_requests_total{kind="pull",outcome="too_large"}')).toBe(0);
    expect(samples.get('hookrelay_deliveries_total{kind="inbound_forward",outcome="retrying"}')).toBe(0);
    // Each family appears once even though many apps (the test files') share this process.
    const types = res.body.split('\n').filter((l) => l.startsWith('# TYPE '));
    expect(new Set(types).size).toBe(types.length);

    const doc = (await t.request('GET', '/v1/openapi.json', { apiKey: null })).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).not.toContain('/metrics');
  });

  it('has hookrelay_build_info at 1 with the package version, the build commit and the Node.js version', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.body).toMatch(/^# TYPE hookrelay_build_info gauge$/m);
    const series = [...parse(res.body).entries()].filter(([name]) => name.startsWith('hookrelay_build_info{'));
    expect(series).toEqual([[`hookrelay_build_info{version="${serverPackageVersion()}",commit="${builtCommit()}",node="${process.version}"}`, 1]]);
  });

  it('counts ingest requests by outcome, verification failures by check, and times accepted ones', async () => {
    const created = await t.request('POST', '/v1/inbound-endpoints', {
      body: { name: 'metrics', mode: 'cli', verify_static_token: true, static_token_header_name: 'X-Token', static_token: 'let-me-in', idempotency_header_names: ['Idempotency-Key'] },
    });
    expect(created.status, created.raw).toBe(201);
    const token = created.body.data.secret_token as string;
    const ingest = (headers: Record<string, string>, url = `/in/${token}`, payload = '{"n":1}') =>
      t.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers } });

    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await ingest({ 'x-token': 'let-me-in' })).statusCode).toBe(200);
    expect((await ingest({ 'x-token': 'wrong' })).statusCode).toBe(401);
    expect((await ingest({ 'x-token': 'let-me-in' }, `/in/${'0'.repeat(32)}`)).statusCode).toBe(404);
    // A duplicate is answered 200 too, but is not a new message.
    expect((await ingest({ 'x-token': 'let-me-in', 'idempotency-key': 'k' })).statusCode).toBe(200);
    const again = await ingest({ 'x-token': 'let-me-in', 'idempotency-key': 'k' });
    expect(again.headers['hookrelay-duplicate']).toBe('true');
    expect((await ingest({ 'x-token': 'let-me-in' }, `/in/${token}`, 'x'.repeat(MAX_BODY_BYTES + 1))).statusCode).toBe(413);
    // Probes are not ingests.
    expect((await t.app.inject({ method: 'HEAD', url: `/in/${token}` })).statusCode).toBe(200);
    const after = await scrape();

    const inbound = (outcome: string) => delta(before, after, `hookrelay_ingest_requests_total{kind="inbound",outcome="${outcome}"}`);
    expect(inbound('accepted')).toBe(4);
    expect(inbound('duplicate')).toBe(1);
    expect(inbound('rejected_verification')).toBe(1);
    expect(inbound('not_found')).toBe(1);
    expect(inbound('too_large')).toBe(1);
    expect(inbound('gone') + inbound('paused') + inbound('error')).toBe(0);
    expect(delta(before, after, 'hookrelay_verification_failures_total{reason="static_token"}')).toBe(1);
    expect(delta(before, after, 'hookrelay_ingest_duration_seconds_count{kind="inbound"}')).toBe(4);
    expect(delta(before, after, 'hookrelay_ingest_duration_seconds_bucket{le="+Inf",kind="inbound"}')).toBe(4);
    const seconds = delta(before, after, 'hookrelay_ingest_duration_seconds_sum{kind="inbound"}');
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(20);
    expect(delta(before, after, 'hookrelay_ingest_requests_total{kind="pull",outcome="accepted"}')).toBe(0);
  });

  it('counts pull ingests apart, a paused endpoint as paused and a deleted one as gone', async () => {
    const pull = await createPull(t);
    const before = await scrape();
    expect((await ingestPull(t, pull)).statusCode).toBe(200);
    expect((await t.request('POST', `/v1/pull-endpoints/${pull.id}/pause`)).status).toBe(200);
    expect((await ingestPull(t, pull)).statusCode).toBe(503);
    expect((await t.request('DELETE', `/v1/pull-endpoints/${pull.id}`)).status).toBeLessThan(300);
    expect((await ingestPull(t, pull)).statusCode).toBe(410);
    const after = await scrape();
    const outcome = (o: string) => delta(before, after, `hookrelay_ingest_requests_total{kind="pull",outcome="${o}"}`);
    expect([outcome('accepted'), outcome('paused'), outcome('gone'), outcome('error')]).toEqual([1, 1, 1, 0]);
    expect(delta(before, after, 'hookrelay_ingest_duration_seconds_count{kind="pull"}')).toBe(1);
    expect(delta(before, after, 'hookrelay_ingest_requests_total{kind="inbound",outcome="accepted"}')).toBe(0);
  });
});

describe('delivery metrics', () => {
  it('reads the queue at scrape time, then counts each recorded attempt by its outcome', async () => {
    const ok = receiver.route(() => ({ status: 204 }));
    const failing = receiver.route(() => ({ status: 500 }));
    const endpoint = async (url: string) => {
      const res = await t.request('POST', '/v1/endpoints', { body: { url } });
      expect(res.status, res.raw).toBe(201);
      return res.body.data.id as string;
    };
    const send = async (endpointId: string) => {
      const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { hello: 'metrics' } } });
      expect(res.status, res.raw).toBe(202);
      return res.body.data.message_id as string;
    };
    const delivered = await send(await endpoint(ok.url));
    const failed = await send(await endpoint(failing.url));

    // No worker runs in this app yet: both wait, and the older has been due for a while.
    await new Promise((r) => setTimeout(r, 50));
    const queued = await scrape();
    expect(value(queued, 'hookrelay_delivery_queue_depth')).toBe(2);
    expect(value(queued, 'hookrelay_delivery_queue_oldest_age_seconds')).toBeGreaterThanOrEqual(0.04);
    expect(value(queued, 'hookrelay_delivery_queue_oldest_age_seconds')).toBeLessThan(60);

    const worker = new DeliveryWorker({ ...t.app.services, log: t.app.log }, { requestTimeoutMs: 1000, pollIntervalMs: 500, stopGraceMs: 2000 });
    await worker.start();
    try {
      expect((await waitForMessage(t, delivered, settled)).status).toBe('succeeded');
      expect((await waitForMessage(t, failed, settled)).status).toBe('failed_permanent');
    } finally {
      await worker.stop();
    }
    const after = await scrape();
    const outbound = (o: string) => delta(queued, after, `hookrelay_deliveries_total{kind="outbound",outcome="${o}"}`);
    expect([outbound('succeeded'), outbound('retrying'), outbound('failed'), outbound('requeued')]).toEqual([1, 1, 1, 0]);
    expect(delta(queued, after, 'hookrelay_deliveries_total{kind="inbound_forward",outcome="succeeded"}')).toBe(0);
    expect(value(after, 'hookrelay_delivery_queue_depth')).toBe(0);
    expect(value(after, 'hookrelay_delivery_queue_oldest_age_seconds')).toBe(0);
  });
});

describe('CLI metrics', () => {
  async function cliEndpoint(): Promise<{ id: string; token: string }> {
    const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'metrics cli', mode: 'cli' } });
    expect(res.status, res.raw).toBe(201);
    return { id: res.body.data.id, token: res.body.data.secret_token };
  }

  async function connectedClis(): Promise<number> {
    return value(await scrape(), 'hookrelay_connected_clis');
  }

  /** Polls (bounded) until `read` returns `expected`; returns the last value read. */
  async function eventually(read: () => Promise<number>, expected: number): Promise<number> {
    const deadline = Date.now() + 5000;
    let last = await read();
    while (last !== expected && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      last = await read();
    }
    return last;
  }

  it('shows an open WebSocket stream as a connected CLI, and none once it is closed; counts its result frames', async () => {
    const { id, token } = await cliEndpoint();
    expect(await connectedClis()).toBe(0);
    const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${id}/stream`, { headers: { authorization: `Bearer ${t.main.apiKey}` } });
    const frames: { type: string; message?: { message_id: string } }[] = [];
    const ready = new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        frames.push(JSON.parse(data.toString()) as { type: string });
        if (frames.at(-1)!.type === 'ready') resolve();
      });
      socket.once('error', reject);
      socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    try {
      await ready;
      expect(await connectedClis()).toBe(1);

      const before = await scrape();
      const sent = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: '{}', headers: { 'content-type': 'application/json' } });
      expect(sent.statusCode).toBe(200);
      const messageId = sent.json().data.message_id as string;
      const deadline = Date.now() + 5000;
      while (!frames.some((f) => f.message?.message_id === messageId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      socket.send(JSON.stringify({ type: 'result', message_id: messageId, status: 200, latency_ms: 4, error: null }));
      const succeeded = 'hookrelay_deliveries_total{kind="cli",outcome="succeeded"}';
      expect(await eventually(async () => delta(before, await scrape(), succeeded), 1)).toBe(1);
    } finally {
      socket.close();
    }
    // The server sees the close a moment later.
    expect(await eventually(connectedClis, 0)).toBe(0);
  });

  it('counts the results a CLI reports as cli deliveries', async () => {
    const { token } = await cliEndpoint();
    const message = async () => {
      const res = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: '{}', headers: { 'content-type': 'application/json' } });
      expect(res.statusCode).toBe(200);
      return res.json().data.message_id as string;
    };
    const report = async (id: string, status: number) => {
      const res = await t.request('POST', `/v1/inbound-messages/${id}/result`, { body: { message_id: id, status, latency_ms: 3, error: null } });
      expect(res.status, res.raw).toBe(200);
    };
    const before = await scrape();
    await report(await message(), 200);
    await report(await message(), 502);
    const after = await scrape();
    expect(delta(before, after, 'hookrelay_deliveries_total{kind="cli",outcome="succeeded"}')).toBe(1);
    expect(delta(before, after, 'hookrelay_deliveries_total{kind="cli",outcome="failed"}')).toBe(1);
  });
});

describe('HOOKRELAY_METRICS_TOKEN', () => {
  let guarded: TestApp;
  const token = 'metrics-scrape-token-0123456789';
  beforeAll(async () => {
    // An ingest-only process serves /metrics too.
    guarded = await createTestApp({ env: { HOOKRELAY_METRICS_TOKEN: token, HOOKRELAY_ROLES: 'ingest' } });
  });
  afterAll(async () => {
    await guarded?.close();
  });

  it('requires Authorization: Bearer <token> when set', async () => {
    const request = (authorization?: string) =>
      guarded.request('GET', '/metrics', { apiKey: null, ...(authorization ? { headers: { authorization } } : {}) });
    expectError(await request(), 401, 'UNAUTHORIZED');
    expectError(await request(`Bearer ${token}x`), 401, 'UNAUTHORIZED');
    expectError(await request(`Bearer ${guarded.main.apiKey}`), 401, 'UNAUTHORIZED');
    const ok = await guarded.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${token}` } });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toMatch(/^hookrelay_ingest_requests_total\{kind="inbound",outcome="accepted"\} 0$/m);
    // The API is not served by this process: the metrics route does not depend on it.
    expect((await guarded.app.inject({ method: 'GET', url: '/v1/whoami' })).statusCode).toBe(404);
  });
});
