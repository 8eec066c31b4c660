import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { Receiver, settled, waitForMessage, type Handler, type Received } from '../helpers/receiver.js';

/**
 * Deliveries end to end: a worker in the test process delivers to a local HTTPS receiver whose
 * self-signed certificate is trusted through HOOKRELAY_TLS_CA_FILE. Retry delays are 0.3 s (±20 %)
 * and the per-attempt timeout 1 s, so every path settles in a second or two.
 */
const SCHEDULE = '0.3,0.3,0.3';
const REQUEST_TIMEOUT_MS = 1000;

let receiver: Receiver;
let t: TestApp;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: SCHEDULE },
    worker: { requestTimeoutMs: REQUEST_TIMEOUT_MS, pollIntervalMs: 1000, stopGraceMs: 5000 },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

async function endpoint(handler?: Handler, extra: Record<string, unknown> = {}) {
  const route = receiver.route(handler);
  const res = await t.request('POST', '/v1/endpoints', { body: { url: route.url, ...extra } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id as string, secret: res.body.data.signing_secret as string, path: route.path, url: route.url };
}

async function send(endpointId: string, body: Record<string, unknown> = { payload: { hello: 'world' } }): Promise<string> {
  const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, ...body } });
  expect(res.status, res.raw).toBe(202);
  return res.body.data.message_id;
}

const attempts = async (id: string) => (await t.request('GET', `/v1/messages/${id}/attempts`)).body.data as any[];
const headersOf = (r: Received) => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));

describe('a delivery', () => {
  it('is a signed POST that verifies with the standardwebhooks package, with every timing recorded', async () => {
    const ep = await endpoint(() => ({ status: 200, body: 'thanks' }), { headers: { 'X-Tenant': 'acme' } });
    const before = Date.now();
    const id = await send(ep.id, { payload: { hello: 'world', n: 1 }, event_type: 'user.created' });
    const m = await waitForMessage(t, id, settled);
    const [request] = receiver.received(ep.path);
    expect(request).toBeDefined();
    expect(request!.method).toBe('POST');
    expect(request!.body.toString()).toBe('{"hello":"world","n":1}');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['x-tenant']).toBe('acme');
    expect(request!.headers['hookrelay-event-type']).toBe('user.created');
    expect(request!.headers['webhook-id']).toBe(id);
    expect(Number(request!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    expect(new Webhook(ep.secret).verify(request!.body, headersOf(request!))).toEqual({ hello: 'world', n: 1 });

    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 200, last_error: null, failed_at: null });
    for (const field of ['response_latency_ms', 'processing_ms', 'queue_wait_ms', 'total_delivery_ms']) expect(m[field], field).toBeGreaterThanOrEqual(0);
    expect(m.total_delivery_ms).toBeGreaterThanOrEqual(m.queue_wait_ms);
    expect(Date.parse(m.first_attempt_at)).toBeLessThanOrEqual(Date.parse(m.delivered_at));
    expect(m).not.toHaveProperty('next_attempt_at');
    expect(await attempts(id)).toEqual([
      { id: expect.any(String), message_id: id, attempt_number: 1, started_at: m.first_attempt_at, response_status: 200, latency_ms: m.response_latency_ms, error: null, response_body: 'thanks' },
    ]);
    const [log] = (await t.request('GET', `/v1/logs?endpoint_id=${ep.id}`)).body.data;
    expect(log).toMatchObject({ message_id: id, status: 'succeeded', endpoint: ep.url, delivered_at: m.delivered_at });
    expect(await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ${id}`).toHaveLength(0);
  });

  it('is signed by both keys during a rotation, space-separated', async () => {
    const ep = await endpoint();
    const rotated = await t.request('POST', `/v1/endpoints/${ep.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const id = await send(ep.id, { payload: { rotated: true } });
    await waitForMessage(t, id, settled);
    const [request] = receiver.received(ep.path);
    const signatures = String(request!.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    expect(signatures.every((s) => s.startsWith('v1,'))).toBe(true);
    for (const secret of [ep.secret, rotated.body.data.signing_secret]) {
      expect(new Webhook(secret).verify(request!.body, headersOf(request!))).toEqual({ rotated: true });
    }
  });

  it('sends a text body verbatim, and never a forbidden custom header even if one is stored', async () => {
    const ep = await endpoint();
    await t.db.sql`UPDATE endpoints SET headers = ${{ Host: 'evil.example', 'webhook-id': 'forged', 'Proxy-Authorization': 'x', 'Transfer-Encoding': 'chunked', 'X-Ok': '1' }}::jsonb WHERE id = ${ep.id}`;
    const id = await send(ep.id, { body: 'plain text é', content_type: 'text/plain; charset=utf-8' });
    await waitForMessage(t, id, (m) => m.status === 'succeeded');
    const [request] = receiver.received(ep.path);
    expect(request!.body.toString()).toBe('plain text é');
    expect(request!.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(request!.headers.host).toBe(`127.0.0.1:${receiver.portNumber}`);
    expect(request!.headers['webhook-id']).toBe(id);
    expect(request!.headers['proxy-authorization']).toBeUndefined();
    expect(request!.headers['transfer-encoding']).toBeUndefined();
    expect(request!.headers['x-ok']).toBe('1');
    // Throws unless the signature verifies (it returns nothing for a body that is not JSON).
    expect(() => new Webhook(ep.secret).verify(request!.body, headersOf(request!), { jsonParse: false })).not.toThrow();
  });
});

describe('a payload holding NUL characters', () => {
  it('is delivered byte for byte: escaped inside a JSON payload, raw in a text body', async () => {
    const ep = await endpoint();
    const jsonId = await send(ep.id, { payload: { s: 'a\u0000b' } });
    const textId = await send(ep.id, { body: 'a\u0000b' });
    await waitForMessage(t, jsonId, (m) => m.status === 'succeeded');
    await waitForMessage(t, textId, (m) => m.status === 'succeeded');
    const byId = new Map(receiver.received(ep.path).map((r) => [r.headers['webhook-id'], r]));
    expect(byId.get(jsonId)!.body.toString()).toBe('{"s":"a\\u0000b"}');
    expect(new Webhook(ep.secret).verify(byId.get(jsonId)!.body, headersOf(byId.get(jsonId)!))).toEqual({ s: 'a\u0000b' });
    expect(byId.get(textId)!.body).toEqual(Buffer.from([0x61, 0x00, 0x62]));
  });
});

describe('retries', () => {
  it('500, 500, then 200: pending_retry in between, succeeded with three attempt rows', async () => {
    const ep = await endpoint((_r, n) => (n < 2 ? { status: 500, body: 'boom' } : { status: 200, body: 'ok' }));
    const id = await send(ep.id);
    const waiting = await waitForMessage(t, id, (m) => m.status === 'pending_retry');
    expect(waiting).toMatchObject({ attempt_count: 1, response_status: 500, last_error: 'HTTP 500', next_attempt_at: expect.any(String) });
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 3, response_status: 200, last_error: null });
    expect(m.queue_wait_ms).toBeLessThan(m.total_delivery_ms);
    const rows = await attempts(id);
    expect(rows.map((a) => [a.attempt_number, a.response_status, a.error, a.response_body])).toEqual([
      [1, 500, 'HTTP 500', 'boom'],
      [2, 500, 'HTTP 500', 'boom'],
      [3, 200, null, 'ok'],
    ]);
    const received = receiver.received(ep.path);
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([id, id, id]);
    // 0.3 s ± 20 % between attempts.
    for (let i = 1; i < received.length; i++) expect(received[i]!.at - received[i - 1]!.at).toBeGreaterThanOrEqual(230);
    for (const r of received) expect(() => new Webhook(ep.secret).verify(r.body, headersOf(r))).not.toThrow();
  });

  it('always 500: failed_permanent after the schedule\'s attempts (N delays, N + 1 attempts)', async () => {
    const ep = await endpoint(() => ({ status: 500 }));
    const id = await send(ep.id);
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'failed_permanent', attempt_count: 4, response_status: 500, last_error: 'HTTP 500', failed_at: expect.any(String) });
    expect(m).not.toHaveProperty('next_attempt_at');
    expect(m).not.toHaveProperty('delivered_at');
    expect(m.total_delivery_ms).toBeNull();
    expect((await attempts(id)).map((a) => a.response_status)).toEqual([500, 500, 500, 500]);
    expect(receiver.received(ep.path)).toHaveLength(4);
    expect(await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ${id}`).toHaveLength(0);
  });

  it('429 with Retry-After waits at least that long', async () => {
    const ep = await endpoint((_r, n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    const id = await send(ep.id);
    const waiting = await waitForMessage(t, id, (m) => m.status === 'pending_retry');
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    const [first, second] = receiver.received(ep.path);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
    expect(Date.parse(waiting.next_attempt_at) - Date.parse(waiting.first_attempt_at)).toBeGreaterThanOrEqual(1000);
  });

  it('503 with an HTTP-date Retry-After waits until then', async () => {
    const ep = await endpoint((_r, n) => (n === 0 ? { status: 503, headers: { 'retry-after': new Date(Date.now() + 2000).toUTCString() } } : { status: 204 }));
    const id = await send(ep.id);
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'succeeded', response_status: 204 });
    const [first, second] = receiver.received(ep.path);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(800);
  });

  it('a 3xx is a failure and is not followed', async () => {
    const target = receiver.route();
    const ep = await endpoint(() => ({ status: 302, headers: { location: target.url } }));
    const id = await send(ep.id);
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'failed_permanent', response_status: 302 });
    expect(m.last_error).toContain('redirects are not followed');
    expect(m.last_error).toContain(target.url);
    expect(receiver.received(target.path)).toHaveLength(0);
  });

  it('a receiver that never answers is cut at the request timeout; the retry succeeds', async () => {
    const ep = await endpoint((_r, n) => (n === 0 ? { hang: true } : { status: 200 }));
    const id = await send(ep.id);
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    const [timedOut] = await attempts(id);
    expect(timedOut).toMatchObject({ response_status: null, error: `timeout: no complete answer within ${REQUEST_TIMEOUT_MS} ms` });
    expect(timedOut.latency_ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(timedOut.latency_ms).toBeLessThan(REQUEST_TIMEOUT_MS + 2000);
  });

  it('a body that trickles past the timeout is bounded too', async () => {
    const ep = await endpoint(() => ({ status: 200, body: 'slow body', bodyDelayMs: 5000 }));
    const id = await send(ep.id);
    await waitForMessage(t, id, settled);
    const [attempt] = await attempts(id);
    expect(attempt.latency_ms).toBeLessThan(REQUEST_TIMEOUT_MS + 2000);
  });

  it('keeps at most 20 KB of the answer', async () => {
    const ep = await endpoint(() => ({ status: 200, body: 'x'.repeat(100 * 1024) }));
    const id = await send(ep.id);
    await waitForMessage(t, id, settled);
    const [attempt] = await attempts(id);
    expect(attempt.response_body).toHaveLength(20 * 1024);
  });

  it('a refused connection is an attempt with the reason', async () => {
    const ep = await endpoint();
    await t.db.sql`UPDATE endpoints SET url = 'https://127.0.0.1:1/refused' WHERE id = ${ep.id}`;
    const id = await send(ep.id);
    const m = await waitForMessage(t, id, (r) => r.attempt_count >= 1);
    expect(m.response_status).toBeNull();
    expect(m.last_error).toMatch(/ECONNREFUSED/);
  });
});

describe('manual retry and message deletes', () => {
  it('a failed message is delivered again with the whole schedule; a succeeded one is resent', async () => {
    let healthy = false;
    const ep = await endpoint(() => (healthy ? { status: 200 } : { status: 500 }));
    const id = await send(ep.id);
    await waitForMessage(t, id, settled);
    healthy = true;
    const retried = await t.request('POST', `/v1/messages/${id}/retry`);
    expect(retried.body.data).toEqual({ message_id: id, status: 'queued' });
    const m = await waitForMessage(t, id, (r) => r.status === 'succeeded');
    expect(m).toMatchObject({ attempt_count: 5, failed_at: null, last_error: null });
    expect((await t.request('POST', `/v1/messages/${id}/retry`)).status).toBe(200);
    await receiver.waitFor(ep.path, 6);
    const again = await waitForMessage(t, id, (r) => r.status === 'succeeded' && r.attempt_count === 6);
    expect(again.delivered_at).toBe(m.delivered_at);
  });

  it('a message deleted before its delivery is never delivered', async () => {
    const ep = await endpoint();
    await t.request('POST', `/v1/endpoints/${ep.id}/pause`);
    const id = await send(ep.id);
    await t.request('DELETE', `/v1/messages/${id}`);
    await t.request('POST', `/v1/endpoints/${ep.id}/resume`);
    const control = await send(ep.id);
    await waitForMessage(t, control, settled);
    expect(receiver.received(ep.path).map((r) => r.headers['webhook-id'])).toEqual([control]);
    expect((await t.request('GET', `/v1/messages/${id}`)).body.data).toMatchObject({ status: 'queued', deleted_at: expect.any(String) });
  });
});

describe('rate limit, pause and endpoint deletion', () => {
  /** Dispatch times (attempt started_at) of messages, sorted. */
  async function sentTimes(ids: string[]): Promise<number[]> {
    const times: number[] = [];
    for (const id of ids) {
      expect(await waitForMessage(t, id, settled)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
      times.push(Date.parse((await attempts(id))[0].started_at));
    }
    return times.sort((a, b) => a - b);
  }
  /** Most sends inside any window of `windowMs`. */
  const busiestWindow = (times: number[], windowMs: number) => Math.max(...times.map((start) => times.filter((x) => x >= start && x < start + windowMs).length));

  it('rps 5, burst 1: ten messages take at least 1.8 s, and waiting uses no attempt', async () => {
    const ep = await endpoint(undefined, { rate_limit_rps: 5, burst: 1 });
    const submitted = Date.now();
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => send(ep.id, { payload: { i } })));
    const received = await receiver.waitFor(ep.path, 10, 10_000);
    expect(Math.max(...received.map((r) => r.at)) - submitted).toBeGreaterThanOrEqual(1800);
    // Each send waits for its slot (never earlier); a send that runs late may bunch with the next one.
    const sent = await sentTimes(ids);
    expect(sent[9]! - submitted).toBeGreaterThanOrEqual(1800);
    expect(busiestWindow(sent, 1000)).toBeLessThanOrEqual(6);
  });

  it('burst 3 at rps 2: three at once, then one every 500 ms', async () => {
    const ep = await endpoint(undefined, { rate_limit_rps: 2, burst: 3 });
    const submitted = Date.now();
    const ids = await Promise.all(Array.from({ length: 5 }, (_, i) => send(ep.id, { payload: { i } })));
    const sent = await sentTimes(ids);
    // Burst 1 would put the third at ≥ 1000 ms after the first.
    expect(sent[2]! - sent[0]!).toBeLessThan(1000);
    expect(sent[3]! - submitted).toBeGreaterThanOrEqual(500);
    expect(sent[4]! - submitted).toBeGreaterThanOrEqual(1000);
  });

  it('a paused endpoint accepts messages and delivers none until resumed', async () => {
    const ep = await endpoint();
    await t.request('POST', `/v1/endpoints/${ep.id}/pause`);
    const ids = await Promise.all([1, 2, 3].map((i) => send(ep.id, { payload: { i } })));
    // The worker claims them, sees the pause and parks them until a resume.
    const parked = async () => (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM delivery_jobs WHERE destination = ${ep.id} AND run_at = 'infinity'`)[0]!.n;
    for (const deadline = Date.now() + 10_000; (await parked()) < 3 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    expect(await parked()).toBe(3);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received(ep.path)).toHaveLength(0);
    for (const id of ids) expect((await t.request('GET', `/v1/messages/${id}`)).body.data).toMatchObject({ status: 'queued', attempt_count: 0 });
    await t.request('POST', `/v1/endpoints/${ep.id}/resume`);
    for (const id of ids) expect(await waitForMessage(t, id, settled)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
  });

  it('a deleted endpoint\'s pending messages end failed_permanent with a clear error', async () => {
    const ep = await endpoint(() => ({ status: 500 }));
    await t.request('POST', `/v1/endpoints/${ep.id}/pause`);
    const parkedId = await send(ep.id);
    await t.request('POST', `/v1/endpoints/${ep.id}/resume`);
    const retrying = await send(ep.id);
    await waitForMessage(t, retrying, (m) => m.status === 'pending_retry');
    // Its next retry is far away: only the deletion can end it now.
    await t.db.sql`UPDATE delivery_jobs SET run_at = now() + interval '1 hour' WHERE message_id = ${retrying} AND locked_until IS NULL`;
    await t.request('POST', `/v1/endpoints/${ep.id}/pause`);
    const waiting = await send(ep.id);
    expect((await t.request('DELETE', `/v1/endpoints/${ep.id}`)).status).toBe(200);
    for (const id of [waiting, retrying]) {
      const m = await waitForMessage(t, id, settled);
      expect(m.status).toBe('failed_permanent');
      expect(m.last_error).toBe('endpoint deleted: no further delivery attempts');
      expect(m.failed_at).toEqual(expect.any(String));
    }
    expect(receiver.received(ep.path).map((r) => r.headers['webhook-id'])).not.toContain(waiting);
    expect((await t.request('GET', `/v1/messages/${parkedId}`)).body.data.status).toMatch(/failed_permanent/);
  });
});

describe('an endpoint deleted during an attempt', () => {
  it('the attempt is recorded and no retry follows', async () => {
    const ep = await endpoint(() => ({ status: 500, delayMs: 500 }));
    const id = await send(ep.id);
    await receiver.waitFor(ep.path, 1);
    expect((await t.request('DELETE', `/v1/endpoints/${ep.id}`)).status).toBe(200);
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'failed_permanent', attempt_count: 1, response_status: 500, last_error: 'HTTP 500; endpoint deleted: no further delivery attempts' });
    expect(receiver.received(ep.path)).toHaveLength(1);
    expect(await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ${id}`).toHaveLength(0);
  });
});

describe('forward-mode inbound endpoints', () => {
  async function inbound(handler?: Handler, extra: Record<string, unknown> = {}) {
    const route = receiver.route(handler);
    const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'forward', url: route.url, ...extra } });
    expect(res.status, res.raw).toBe(201);
    return { id: res.body.data.id as string, token: res.body.data.secret_token as string, secret: res.body.data.signing_secret as string | undefined, path: route.path };
  }
  const ingest = async (token: string, path: string, body: string, headers: Record<string, string>) => {
    const res = await t.app.inject({ method: 'POST', url: `/in/${token}${path}`, payload: body, headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data.message_id as string;
  };

  it('forwards the original request, signed with the endpoint\'s key, and records the same statuses and timings', async () => {
    const ep = await inbound(undefined, { signing_enabled: true });
    const body = '{"action":"opened"}';
    const id = await ingest(ep.token, '/github/push?x=1', body, { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'webhook-id': 'from-sender' });
    const m = await waitForMessage(t, id, settled, { inbound: true });
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 200, last_error: null });
    for (const field of ['response_latency_ms', 'queue_wait_ms', 'total_delivery_ms']) expect(m[field], field).toBeGreaterThanOrEqual(0);
    expect(m.delivered_at).toEqual(expect.any(String));
    const [request] = receiver.received(`${ep.path}/github/push`);
    expect(request!.url).toBe(`${ep.path}/github/push?x=1`);
    expect(request!.body.toString()).toBe(body);
    expect(request!.headers['x-github-event']).toBe('pull_request');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-id']).toBe(id);
    expect(new Webhook(ep.secret!).verify(request!.body, headersOf(request!))).toEqual({ action: 'opened' });
    const [log] = (await t.request('GET', `/v1/inbound-logs?inbound_endpoint_id=${ep.id}`)).body.data;
    expect(log).toMatchObject({ message_id: id, status: 'succeeded', attempt_count: 1, response_status: 200 });
  });

  it('without signing, forwards the sender\'s headers as they were; retries like outbound; replay makes a new delivery', async () => {
    const ep = await inbound((_r, n) => (n === 0 ? { status: 500 } : { status: 200 }));
    const id = await ingest(ep.token, '', 'a=1', { 'content-type': 'application/x-www-form-urlencoded', 'webhook-id': 'from-sender' });
    const retrying = await waitForMessage(t, id, (m) => m.status === 'pending_retry', { inbound: true });
    expect(retrying).toMatchObject({ attempt_count: 1, response_status: 500, last_error: 'HTTP 500', next_attempt_at: expect.any(String) });
    const m = await waitForMessage(t, id, settled, { inbound: true });
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    const [first] = receiver.received(ep.path);
    expect(first!.headers['webhook-id']).toBe('from-sender');
    expect(first!.headers['webhook-signature']).toBeUndefined();
    expect(first!.body.toString()).toBe('a=1');

    const replay = await t.request('POST', `/v1/inbound-messages/${id}/replay`);
    expect(replay.body.data).toMatchObject({ message_id: id, replay_count: 1, status: 'queued' });
    await receiver.waitFor(ep.path, 3);
    const replayed = await waitForMessage(t, id, (r) => r.status === 'succeeded' && r.attempt_count === 3, { inbound: true });
    expect(replayed.replay_count).toBe(1);
  });

  it('drops the headers the sender names in Connection; the bytes and the other headers pass on', async () => {
    const ep = await inbound();
    const body = Buffer.from([0x7b, 0x00, 0xff, 0x0d, 0x0a, 0x7d]);
    const res = await t.app.inject({
      method: 'POST',
      url: `/in/${ep.token}/hop`,
      payload: body,
      headers: { 'content-type': 'application/octet-stream', connection: 'X-Foo, keep-alive', 'x-foo': 'for-the-relay-only', 'keep-alive': 'timeout=5', 'x-other': 'kept' },
    });
    expect(res.statusCode, res.body).toBe(200);
    const id = res.json().data.message_id as string;
    expect((await waitForMessage(t, id, settled, { inbound: true })).status).toBe('succeeded');
    const [request] = receiver.received(`${ep.path}/hop`);
    expect(request!.body.equals(body)).toBe(true);
    expect(request!.headers['x-other']).toBe('kept');
    expect(request!.headers['content-type']).toBe('application/octet-stream');
    expect(request!.headers['x-foo']).toBeUndefined();
    expect(request!.headers['keep-alive']).toBeUndefined();
  });

  it('messages of a cli-mode endpoint are not delivered; a deleted inbound endpoint fails its pending ones', async () => {
    const cli = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'cli', mode: 'cli' } });
    const cliId = await ingest(cli.body.data.secret_token, '', '{}', { 'content-type': 'application/json' });
    expect(await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ${cliId}`).toHaveLength(0);

    const ep = await inbound(() => ({ status: 500 }));
    const id = await ingest(ep.token, '', '{}', { 'content-type': 'application/json' });
    await waitForMessage(t, id, (m) => m.status === 'pending_retry', { inbound: true });
    // The next retry is far away: only the deletion can end it now.
    await t.db.sql`UPDATE delivery_jobs SET run_at = now() + interval '1 hour' WHERE message_id = ${id} AND locked_until IS NULL`;
    expect((await t.request('DELETE', `/v1/inbound-endpoints/${ep.id}`)).status).toBe(200);
    const [row] = await t.db.sql<{ status: string; last_error: string }>`SELECT status, last_error FROM inbound_messages WHERE id = ${id}`;
    const deadline = Date.now() + 10_000;
    let current = row!;
    while (current.status !== 'failed_permanent' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      current = (await t.db.sql<{ status: string; last_error: string }>`SELECT status, last_error FROM inbound_messages WHERE id = ${id}`)[0]!;
    }
    expect(current).toEqual({ status: 'failed_permanent', last_error: 'inbound endpoint deleted: no further delivery attempts' });
  });
});

describe('graceful stop', () => {
  it('lets an in-flight delivery finish and releases the ones waiting for a rate-limit slot', async () => {
    const slow = await endpoint(() => ({ status: 200, delayMs: 600 }));
    const inFlight = await send(slow.id);
    await receiver.waitFor(slow.path, 1);
    const limited = await endpoint(undefined, { rate_limit_rps: 1, burst: 1 });
    const waiting = await Promise.all([1, 2, 3].map((i) => send(limited.id, { payload: { i } })));
    await receiver.waitFor(limited.path, 1);
    await t.worker!.stop();
    expect(t.worker!.state).toBe('stopped');
    expect((await t.request('GET', `/v1/messages/${inFlight}`)).body.data).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const delivered = new Set(receiver.received(limited.path).map((r) => String(r.headers['webhook-id'])));
    for (const id of waiting.filter((w) => !delivered.has(w))) {
      expect((await t.request('GET', `/v1/messages/${id}`)).body.data).toMatchObject({ status: 'queued', attempt_count: 0 });
    }
    const leased = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM delivery_jobs WHERE locked_until IS NOT NULL`;
    expect(leased[0]!.n).toBe(0);
  });
});
