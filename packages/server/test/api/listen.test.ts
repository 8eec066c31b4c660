import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { StreamServerFrame } from '@hookrelay/shared';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp({ env: { HOOKRELAY_STREAM_HEARTBEAT_SECONDS: '1' } });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

async function createCli(): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'listen', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function send(token: string, body: string | Buffer, contentType = 'application/json', path = ''): Promise<string> {
  const res = await fetch(`${baseUrl}/in/${token}${path}`, { method: 'POST', body, headers: { 'content-type': contentType } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { message_id: string } }).data.message_id;
}

interface Frame {
  type: string;
  replay?: boolean;
  cursor?: string | null;
  message?: { message_id: string; body?: string; body_encoding?: string; payload_sha256: string; path: string };
}

/** A stream client that collects frames; `next(n)` waits (bounded) for n more message frames. */
async function openStream(endpointId: string, options: { after?: string; apiKey?: string } = {}) {
  const url = `${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream${options.after ? `?after=${options.after}` : ''}`;
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${options.apiKey ?? t.main.apiKey}` } });
  const frames: Frame[] = [];
  const waiters: (() => void)[] = [];
  socket.on('message', (data) => {
    const frame: unknown = JSON.parse(data.toString());
    StreamServerFrame.parse(frame); // every frame the server sends is one of the shared protocol's
    frames.push(frame as Frame);
    waiters.splice(0).forEach((w) => w());
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    // The request is left as it is: the server must close a refused upgrade's socket itself
    // (otherwise closing the app in afterAll would hang).
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    socket.once('error', reject);
  });
  const until = async (predicate: () => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out; frames: ${JSON.stringify(frames.map((f) => f.type))}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  };
  await until(() => frames.some((f) => f.type === 'ready'));
  return {
    socket,
    frames,
    messages: () => frames.filter((f) => f.type === 'message').map((f) => f.message!),
    until,
    close: () => socket.close(),
  };
}

describe('GET /v1/inbound-endpoints/{id}/listen', () => {
  it('pages in id order, at most 50, with next_cursor; null on an empty page', async () => {
    const { id, token } = await createCli();
    const sent: string[] = [];
    for (let i = 0; i < 55; i++) sent.push(await send(token, `{"n":${i}}`));
    const first = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(50);
    expect(first.body.data.map((m: { message_id: string }) => m.message_id)).toEqual(sent.slice(0, 50));
    expect(first.body.meta.next_cursor).toBe(sent[49]);
    expect(first.body.data[0].body).toEqual({ n: 0 });
    const second = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?after=${first.body.meta.next_cursor}`);
    expect(second.body.data.map((m: { message_id: string }) => m.message_id)).toEqual(sent.slice(50));
    const empty = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?after=${second.body.meta.next_cursor}`);
    expect(empty.body.data).toEqual([]);
    expect(empty.body.meta.next_cursor).toBeNull();
  });

  it('returns base64 for non-JSON bodies, or for every body when asked, with the CLI fields', async () => {
    const { id, token } = await createCli();
    const binary = Buffer.from([0, 1, 2, 250, 255]);
    await send(token, binary, 'application/octet-stream', '/sub/path?q=1');
    await send(token, '{"a": 1}');
    const page = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    const [bin, json] = page.body.data;
    expect(bin).toMatchObject({
      content_type: 'application/octet-stream',
      size_bytes: 5,
      body_encoding: 'base64',
      method: 'POST',
      path: '/sub/path',
      query: 'q=1',
      payload_sha256: createHash('sha256').update(binary).digest('hex'),
    });
    expect(Buffer.from(bin.body, 'base64')).toEqual(binary);
    expect(bin.headers['content-type']).toBe('application/octet-stream');
    expect(bin.raw_headers).toContainEqual(['content-type', 'application/octet-stream']);
    expect(json.body).toEqual({ a: 1 });
    expect(json.body_encoding).toBeUndefined();
    const forced = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?body_encoding=base64`);
    expect(Buffer.from(forced.body.data[1].body, 'base64').toString()).toBe('{"a": 1}');
  });

  it('accepts any UUIDv7 as after (a point in time)', async () => {
    const { id, token } = await createCli();
    const early = await send(token, '{}');
    await new Promise((r) => setTimeout(r, 5));
    const cut = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    const late = await send(token, '{}');
    const h = cut.toString(16).padStart(12, '0');
    const at = `${h.slice(0, 8)}-${h.slice(8)}-7000-8000-000000000000`;
    const page = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?after=${at}`);
    expect(page.body.data.map((m: { message_id: string }) => m.message_id)).toEqual([late]);
    expect(page.body.data.map((m: { message_id: string }) => m.message_id)).not.toContain(early);
  });

  it('answers 400 on a forward-mode endpoint, 404 for another project, skips deleted messages', async () => {
    const forward = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'fwd', url: 'https://example.com/forward-listen' } });
    const res = await t.request('GET', `/v1/inbound-endpoints/${forward.body.data.id}/listen`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    const { id, token } = await createCli();
    const a = await send(token, '{}');
    const b = await send(token, '{}');
    await t.request('DELETE', `/v1/inbound-messages/${a}`);
    const page = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    expect(page.body.data.map((m: { message_id: string }) => m.message_id)).toEqual([b]);
    const other = await t.createProject();
    expect((await t.request('GET', `/v1/inbound-endpoints/${id}/listen`, { apiKey: other.apiKey })).body.error.code).toBe('ENDPOINT_NOT_FOUND');
  });
});

describe('WebSocket stream', () => {
  it('without after: ready with the current cursor, then only new messages, body always base64', async () => {
    const { id, token } = await createCli();
    const old = await send(token, '{"old":true}');
    const stream = await openStream(id);
    try {
      expect(stream.frames[0]).toEqual({ type: 'ready', cursor: old, latest_message_id: old, result_acks: true });
      const fresh = await send(token, '{"new":true}');
      await stream.until(() => stream.messages().length === 1);
      const [message] = stream.messages();
      expect(message!.message_id).toBe(fresh);
      expect(message!.body_encoding).toBe('base64');
      expect(Buffer.from(message!.body!, 'base64').toString()).toBe('{"new":true}');
    } finally {
      stream.close();
    }
  });

  it('with after: the backlog in order, then live messages, no gap, no duplicate', async () => {
    const { id, token } = await createCli();
    const backlog: string[] = [];
    for (let i = 0; i < 120; i++) backlog.push(await send(token, `{"i":${i}}`));
    const stream = await openStream(id, { after: backlog[9]! });
    try {
      // Live posts race with the backlog read.
      const live = await Promise.all(Array.from({ length: 30 }, (_, i) => send(token, `{"live":${i}}`)));
      await stream.until(() => stream.messages().length >= 140);
      await new Promise((r) => setTimeout(r, 200));
      const seen = stream.messages().map((m) => m.message_id);
      expect(seen).toHaveLength(140);
      expect(new Set(seen).size).toBe(140);
      expect(seen.slice(0, 110)).toEqual(backlog.slice(10));
      expect(new Set(seen.slice(110))).toEqual(new Set(live));
      expect([...seen].sort()).toEqual(seen);
    } finally {
      stream.close();
    }
  });

  it('fans every message out to every connected stream', async () => {
    const { id, token } = await createCli();
    const one = await openStream(id);
    const two = await openStream(id);
    try {
      const ids = [await send(token, '{}'), await send(token, '{}')];
      await one.until(() => one.messages().length === 2);
      await two.until(() => two.messages().length === 2);
      expect(one.messages().map((m) => m.message_id)).toEqual(ids);
      expect(two.messages().map((m) => m.message_id)).toEqual(ids);
    } finally {
      one.close();
      two.close();
    }
  });

  it('records result frames as attempts and sets the status; replay pushes the message again', async () => {
    const { id, token } = await createCli();
    const stream = await openStream(id);
    try {
      const messageId = await send(token, '{}');
      await stream.until(() => stream.messages().length === 1);
      stream.socket.send(JSON.stringify({ type: 'result', message_id: messageId, status: 500, latency_ms: 12, error: null }));
      const deadline = Date.now() + 5000;
      let message = (await t.request('GET', `/v1/inbound-messages/${messageId}`)).body.data;
      while (message.attempt_count < 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        message = (await t.request('GET', `/v1/inbound-messages/${messageId}`)).body.data;
      }
      expect(message).toMatchObject({ status: 'failed_permanent', attempt_count: 1, response_status: 500, response_latency_ms: 12, last_error: 'HTTP 500' });

      const replay = await t.request('POST', `/v1/inbound-messages/${messageId}/replay`);
      expect(replay.body.data).toMatchObject({ replay_count: 1, status: 'queued' });
      await stream.until(() => stream.messages().length === 2);
      expect(stream.messages()[1]!.message_id).toBe(messageId);
      const frames = stream.frames.filter((f) => f.type === 'message');
      expect(frames[0]!.replay).toBeUndefined();
      expect(frames[1]!.replay).toBe(true);
    } finally {
      stream.close();
    }
  });

  it('refuses the upgrade with an HTTP error for a bad key, an unknown endpoint and a forward-mode endpoint', async () => {
    const { id } = await createCli();
    await expect(openStream(id, { apiKey: `hr_${'0'.repeat(40)}` })).rejects.toThrow('HTTP 401');
    await expect(openStream('01900000-0000-7000-8000-000000000000')).rejects.toThrow('HTTP 404');
    const forward = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'fwd2', url: 'https://example.com/forward-stream' } });
    await expect(openStream(forward.body.data.id)).rejects.toThrow('HTTP 400');
  });
});

describe('POST /v1/inbound-messages/{id}/result', () => {
  it('records an attempt; a 2xx makes the message succeeded with delivery timings', async () => {
    const { token } = await createCli();
    const messageId = await send(token, '{}');
    const res = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, {
      body: { message_id: messageId, status: 204, latency_ms: 3, error: null },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 204, response_latency_ms: 3, last_error: null });
    expect(res.body.data.delivered_at).toEqual(expect.any(String));
    expect(res.body.data.total_delivery_ms).toBeGreaterThanOrEqual(0);
    const attempts = await t.db.sql<{ attempt_number: number; response_status: number; latency_ms: number }>`
      SELECT attempt_number, response_status, latency_ms FROM delivery_attempts WHERE message_id = ${messageId}`;
    expect(attempts).toEqual([{ attempt_number: 1, response_status: 204, latency_ms: 3 }]);
    const failed = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, {
      body: { message_id: messageId, status: null, latency_ms: 0, error: 'connect ECONNREFUSED' },
    });
    expect(failed.body.data).toMatchObject({ status: 'failed_permanent', attempt_count: 2, last_error: 'connect ECONNREFUSED' });
  });

  it('refuses results for a forward-mode message (the delivery engine owns those)', async () => {
    const forward = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'fwd3', url: 'https://example.com/forward-result' } });
    const res = await fetch(`${baseUrl}/in/${forward.body.data.secret_token}`, { method: 'POST', body: '{}' });
    const messageId = ((await res.json()) as { data: { message_id: string } }).data.message_id;
    const refused = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { message_id: messageId, status: 200, latency_ms: 1, error: null } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('INVALID_REQUEST');
    const [row] = await t.db.sql<{ attempt_count: number }>`SELECT attempt_count FROM inbound_messages WHERE id = ${messageId}`;
    expect(row!.attempt_count).toBe(0);
  });

  it('validates the body and the id', async () => {
    const { token } = await createCli();
    const messageId = await send(token, '{}');
    const mismatch = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, {
      body: { message_id: '01900000-0000-7000-8000-000000000000', status: 200, latency_ms: 1, error: null },
    });
    expect(mismatch.status).toBe(400);
    const bad = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { message_id: messageId, status: 'ok', latency_ms: -1, error: null } });
    expect(bad.status).toBe(400);
    const unknown = '01900000-0000-7000-8000-000000000000';
    const missing = await t.request('POST', `/v1/inbound-messages/${unknown}/result`, { body: { message_id: unknown, status: 200, latency_ms: 1, error: null } });
    expect(missing.status).toBe(404);
  });
});

describe('refused requests on the stream', () => {
  it('come as rejection frames beside the messages, as they are stored, moving no cursor', async () => {
    const res = await t.request('POST', '/v1/inbound-endpoints', {
      body: { name: 'refusals', mode: 'cli', verify_static_token: true, static_token_header_name: 'x-token', static_token: 'tok' },
    });
    const { id, secret_token: token } = res.body.data;
    const s = await openStream(id);
    const refused = await fetch(`${baseUrl}/in/${token}/gh?a=1`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'x-token': 'wrong' } });
    expect(refused.status).toBe(401);
    await s.until(() => s.frames.some((f) => f.type === 'rejection'));
    const frame = s.frames.find((f) => f.type === 'rejection') as unknown as { rejection: { endpoint_id: string; raw_headers: [string, string][] } };
    expect(frame.rejection).toMatchObject({ endpoint_id: id, reason: 'token_mismatch', status: 401, method: 'POST', path: '/gh', query: 'a=1' });
    expect(frame.rejection.raw_headers).toContainEqual(['x-token', '[redacted]']);
    const accepted = await fetch(`${baseUrl}/in/${token}`, { method: 'POST', body: '{"n":1}', headers: { 'content-type': 'application/json', 'x-token': 'tok' } });
    expect(accepted.status).toBe(200);
    await s.until(() => s.messages().length === 1);
    expect(s.frames.map((f) => f.type)).toEqual(['ready', 'rejection', 'message']);
    s.close();
  });
});
