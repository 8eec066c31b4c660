import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { PORTAL_LINK_ENDED_CLOSE, PortalWatchFrame } from '@hookrelay/shared';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { Receiver, settled, waitForMessage } from '../helpers/receiver.js';

/**
 * The portal's live socket (GET /v1/portal/watch) and its test events: owner A's socket carries
 * A's endpoints, messages and attempts only; a revoked or expired link closes it; an API key, a
 * ticket of another kind and another owner's ids are refused.
 */

let t: TestApp;
let receiver: Receiver;
let baseUrl: string;
const A = 'cus_watch_a';
const B = 'cus_watch_b';

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '3600' },
    worker: { requestTimeoutMs: 2000, pollIntervalMs: 200, stopGraceMs: 2000 },
  });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  for (const [name, example] of [['order.shipped', { order: 'o_1', carrier: 'ups' }], ['order.noexample', null]] as const) {
    const res = await t.request('POST', '/v1/event-types', { body: { name, description: `the ${name} event`, ...(example ? { example } : {}) } });
    expect(res.status, res.raw).toBe(201);
  }
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

async function link(owner: string, extra: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/portal-links', { body: { owner_id: owner, ...extra } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}

async function endpoint(owner: string | null, status = 200): Promise<string> {
  const route = receiver.route(() => ({ status, body: status === 200 ? 'ok' : `refused for ${owner}` }));
  const res = await t.request('POST', '/v1/endpoints', { body: { url: route.url, owner_id: owner, event_types: ['order.*'] } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id;
}

async function ticket(token: string): Promise<string> {
  const res = await t.request('POST', '/v1/portal/stream-tickets', { apiKey: token });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.ticket;
}

/** Opens the portal socket; rejects with the HTTP status when the upgrade is refused. */
async function watch(withTicket: string) {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/portal/watch?ticket=${encodeURIComponent(withTicket)}`);
  const frames: PortalWatchFrame[] = [];
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  socket.on('message', (data) => frames.push(PortalWatchFrame.parse(JSON.parse(data.toString()))));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    socket.once('error', reject);
  });
  const until = async (predicate: () => boolean, what: string) => {
    const deadline = Date.now() + 10_000;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  await until(() => frames.some((f) => f.type === 'ready'), 'ready');
  return { socket, frames, until, closed };
}

const messageIds = (frames: PortalWatchFrame[]) => new Set(frames.flatMap((f) => (f.type === 'message' ? [f.message.message_id] : [])));
const attemptIds = (frames: PortalWatchFrame[]) => new Set(frames.flatMap((f) => (f.type === 'attempt' ? [f.attempt.message_id] : [])));

describe("owner A's portal socket", () => {
  it("carries A's endpoints, messages and attempts, never B's nor the operator's", async () => {
    const epA = await endpoint(A, 500);
    const epB = await endpoint(B);
    const epOp = await endpoint(null);
    const { token } = await link(A);
    const w = await watch(await ticket(token));
    // What existed before `ready` is not announced: the page reads it after `ready`.
    expect(w.frames.map((f) => f.type)).toEqual(['ready']);

    const event = async (owner: string) => {
      const res = await t.request('POST', '/v1/events', { body: { event_type: 'order.shipped', owner_id: owner, payload: { owner } } });
      expect(res.status, res.raw).toBe(202);
    };
    await event(A);
    await event(B);
    const direct = await t.request('POST', '/v1/messages', { body: { endpoint_id: epOp, payload: { operator: true } } });
    expect(direct.status, direct.raw).toBe(202);
    const [messageA] = (await t.request('GET', `/v1/logs?endpoint_id=${epA}`)).body.data as { message_id: string }[];
    const [messageB] = (await t.request('GET', `/v1/logs?endpoint_id=${epB}`)).body.data as { message_id: string }[];
    await waitForMessage(t, messageA!.message_id, (m) => m.attempt_count === 1);
    await waitForMessage(t, messageB!.message_id, settled);
    await waitForMessage(t, direct.body.data.message_id, settled);

    await w.until(() => attemptIds(w.frames).has(messageA!.message_id), "A's attempt");
    const attempt = w.frames.find((f) => f.type === 'attempt');
    expect(attempt).toMatchObject({ endpoint_id: epA, attempt: { attempt_number: 1, response_status: 500, response_body: 'refused for cus_watch_a' } });
    await w.until(() => w.frames.some((f) => f.type === 'message' && f.message.status === 'pending_retry'), "A's message after its attempt");
    // The message frame after the attempt carries what the list shows.
    const last = w.frames.filter((f) => f.type === 'message').at(-1)!;
    expect(last).toMatchObject({ endpoint_id: epA, message: { message_id: messageA!.message_id, attempt_count: 1, response_status: 500 } });

    // An endpoint A adds through the portal, and one the operator gives to B, are announced; B's is not.
    const added = await t.request('POST', '/v1/endpoints', { apiKey: token, body: { url: receiver.route().url, description: 'added in the portal' } });
    expect(added.status, added.raw).toBe(201);
    await w.until(() => w.frames.some((f) => f.type === 'endpoint' && f.endpoint.id === added.body.data.id), 'the new endpoint');
    const deleted = await t.request('DELETE', `/v1/endpoints/${added.body.data.id}`, { apiKey: token });
    expect(deleted.status, deleted.raw).toBe(200);
    await w.until(() => w.frames.some((f) => f.type === 'endpoint_removed' && f.endpoint_id === added.body.data.id), 'the endpoint removed');
    // A moment more for anything of B's or the operator's the socket would (wrongly) carry.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const text = JSON.stringify(w.frames);
    for (const foreign of [epB, epOp, messageB!.message_id, direct.body.data.message_id]) expect(text).not.toContain(foreign);
    expect(messageIds(w.frames)).toEqual(new Set([messageA!.message_id]));
    w.socket.close();
  });

  it('closes when the link is revoked, and when it expires; the token is refused at once', async () => {
    const revoked = await link(A);
    const w = await watch(await ticket(revoked.token));
    const res = await t.request('DELETE', `/v1/portal-links/${revoked.id}`);
    expect(res.status, res.raw).toBe(200);
    expect(await w.closed).toEqual({ code: PORTAL_LINK_ENDED_CLOSE.code, reason: PORTAL_LINK_ENDED_CLOSE.reason });
    expectError(await t.request('GET', '/v1/portal/session', { apiKey: revoked.token }), 401, 'UNAUTHORIZED', 'revoked');

    const expiring = await link(A, { expires_in_minutes: 1 });
    const e = await watch(await ticket(expiring.token));
    // The database's clock decides expiry: the periodic check of open sockets finds it.
    await t.db.sql`UPDATE portal_links SET expires_at = now() - interval '1 millisecond' WHERE id = ${expiring.id}::uuid`;
    expect(await e.closed).toEqual({ code: PORTAL_LINK_ENDED_CLOSE.code, reason: PORTAL_LINK_ENDED_CLOSE.reason });
    expectError(await t.request('POST', '/v1/portal/stream-tickets', { apiKey: expiring.token }), 401, 'UNAUTHORIZED', 'expired');
  });

  it('a ticket opens one socket; an API key and its tickets have no portal socket; a portal ticket opens nothing else', async () => {
    const { token } = await link(A);
    const once = await ticket(token);
    const w = await watch(once);
    await expect(watch(once)).rejects.toThrow('HTTP 401');
    w.socket.close();
    expectError(await t.request('POST', '/v1/portal/stream-tickets'), 404, 'NOT_FOUND', 'portal tokens');
    const keyTicket = (await t.request('POST', '/v1/stream-tickets')).body.data.ticket as string;
    await expect(watch(keyTicket)).rejects.toThrow('HTTP 404');
    // A portal ticket on the inspector's watch socket: that route does not exist for it.
    const inbound = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'operator only', mode: 'cli' } });
    const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${inbound.body.data.id}/watch?ticket=${encodeURIComponent(await ticket(token))}`);
    const status = await new Promise<number>((resolve) => socket.once('unexpected-response', (_req, res) => resolve(res.statusCode!)));
    expect(status).toBe(404);
    expectError(await t.request('GET', '/v1/portal/watch', { apiKey: token }), 400, 'INVALID_REQUEST', 'WebSocket');
  });
});

describe('test events and bulk retries through the portal', () => {
  it("sends a catalogue type's example to A's own endpoint only", async () => {
    const epA = await endpoint(A);
    const epB = await endpoint(B);
    const { token } = await link(A);
    const sent = await t.request('POST', '/v1/portal/test-events', { apiKey: token, body: { endpoint_id: epA, event_type: 'order.shipped' } });
    expect(sent.status, sent.raw).toBe(202);
    const message = await t.request('GET', `/v1/messages/${sent.body.data.message_id}`);
    expect(message.body.data).toMatchObject({ endpoint_id: epA, event_type: 'order.shipped', payload: { order: 'o_1', carrier: 'ups' } });
    expectError(await t.request('POST', '/v1/portal/test-events', { apiKey: token, body: { endpoint_id: epB, event_type: 'order.shipped' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', '/v1/portal/test-events', { apiKey: token, body: { endpoint_id: epA, event_type: 'order.noexample' } }), 400, 'INVALID_REQUEST', 'no example');
    expectError(await t.request('POST', '/v1/portal/test-events', { apiKey: token, body: { endpoint_id: epA, event_type: 'hookrelay.endpoint.paused' } }), 404, 'NOT_FOUND');
    expectError(await t.request('POST', '/v1/portal/test-events', { apiKey: token, body: { endpoint_id: epA, event_type: 'order.shipped', payload: { mine: 1 } } }), 400, 'INVALID_REQUEST', 'payload');
    const readOnly = await link(A, { read_only: true });
    expectError(await t.request('POST', '/v1/portal/test-events', { apiKey: readOnly.token, body: { endpoint_id: epA, event_type: 'order.shipped' } }), 403, 'FORBIDDEN');
    expectError(await t.request('POST', '/v1/portal/test-events', { body: { endpoint_id: epA, event_type: 'order.shipped' } }), 404, 'NOT_FOUND');
  });

  it("retries A's failed messages only, whatever the filter names, and reads only A's jobs", async () => {
    const epA = await endpoint(A, 500);
    const epB = await endpoint(B, 500);
    const since = new Date(Date.now() - 1000).toISOString();
    const ids: Record<string, string> = {};
    for (const [name, id] of [['a', epA], ['b', epB]] as const) {
      const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: id, payload: { n: name } } });
      ids[name] = res.body.data.message_id;
      await waitForMessage(t, ids[name]!, (m) => m.status === 'pending_retry');
    }
    const { token } = await link(A);
    const dry = await t.request('POST', '/v1/bulk-retries', { apiKey: token, body: { filter: { owner_id: B, created_after: since, status: ['pending_retry'] }, dry_run: true } });
    expect(dry.status, dry.raw).toBe(200);
    expect(dry.body.data.matched).toBe(1);
    const job = await t.request('POST', '/v1/bulk-retries', { apiKey: token, body: { filter: { owner_id: B, created_after: since, status: ['pending_retry'] } } });
    expect(job.status, job.raw).toBe(202);
    expect(job.body.data.filter.owner_id).toBe(A);
    expect(job.body.data.matched).toBe(1);
    expect((await t.request('GET', `/v1/bulk-retries/${job.body.data.id}`, { apiKey: token })).status).toBe(200);
    const theirs = await t.request('POST', '/v1/bulk-retries', { body: { filter: { owner_id: B, created_after: since } } });
    expectError(await t.request('GET', `/v1/bulk-retries/${theirs.body.data.id}`, { apiKey: token }), 404, 'NOT_FOUND');
    const readOnly = await link(A, { read_only: true });
    expectError(await t.request('POST', '/v1/bulk-retries', { apiKey: readOnly.token, body: { filter: { created_after: since } } }), 403, 'FORBIDDEN');
  });
});

describe('the portal page', () => {
  it('is served at /portal with its own script, and cannot be framed without configured origins', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/portal' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toMatch(/src="assets\/portal-[A-Z0-9]+\.js"/u);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    const script = /src="(assets\/[^"]+)"/u.exec(res.body)![1]!;
    expect((await t.app.inject({ method: 'GET', url: `/${script}` })).statusCode).toBe(200);
  });
});
