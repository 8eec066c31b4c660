import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookrelayApiError, HookrelayClient } from '@hookrelay/shared';
import { deletedOutboundPayloadsSweeper } from '../../src/delivery/sweepers.js';
import { runSweeperOnce } from '../../src/sweepers/runner.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

/** The message API without a worker: nothing is delivered, every message stays queued. */
let t: TestApp;
let endpointId: string;

beforeAll(async () => {
  t = await createTestApp();
  endpointId = await createEndpoint();
});
afterAll(async () => {
  await t?.close();
});

let urlCounter = 0;
async function createEndpoint(apiKey?: string): Promise<string> {
  const res = await t.request('POST', '/v1/endpoints', { body: { url: `https://hooks.example.com/m/${++urlCounter}` }, ...(apiKey ? { apiKey } : {}) });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id;
}

async function submit(body: Record<string, unknown>, headers?: Record<string, string>) {
  return t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, ...body }, ...(headers ? { headers } : {}) });
}

async function submitOk(body: Record<string, unknown> = { payload: { n: 1 } }, headers?: Record<string, string>): Promise<string> {
  const res = await submit(body, headers);
  expect(res.status, res.raw).toBe(202);
  return res.body.data.message_id;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('POST /v1/messages', () => {
  it('answers 202 { message_id, status, created_at } and stores the payload bytes in the payload store', async () => {
    const res = await submit({ payload: { hello: 'world', n: [1, 2] }, event_type: 'user.created' });
    expect(res.status, res.raw).toBe(202);
    expect(res.body.data).toEqual({ message_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'queued', created_at: expect.any(String) });
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
    const id = res.body.data.message_id;
    const [payload] = await t.db.sql<{ data: Uint8Array }>`SELECT p.data FROM payloads p JOIN outbound_messages m ON m.payload_key = p.key WHERE m.id = ${id}`;
    expect(Buffer.from(payload!.data).toString()).toBe('{"hello":"world","n":[1,2]}');
    const [job] = await t.db.sql<{ kind: string; destination: string }>`SELECT kind, destination FROM delivery_jobs WHERE message_id = ${id}`;
    expect(job).toEqual({ kind: 'outbound', destination: endpointId });
  });

  it('GET returns the full record with the payload as submitted', async () => {
    const id = await submitOk({ payload: { a: 1 }, event_type: 'order.paid' });
    const res = await t.request('GET', `/v1/messages/${id}`);
    expect(res.status).toBe(200);
    const m = res.body.data;
    expect(m).toMatchObject({
      message_id: id,
      endpoint_id: endpointId,
      endpoint: expect.stringMatching(/^https:\/\/hooks\.example\.com\/m\//),
      status: 'queued',
      attempt_count: 0,
      event_type: 'order.paid',
      idempotency_key: null,
      content_type: 'application/json',
      size_bytes: 7,
      payload_sha256: sha256('{"a":1}'),
      first_attempt_at: null,
      response_status: null,
      response_latency_ms: null,
      processing_ms: null,
      total_delivery_ms: null,
      queue_wait_ms: null,
      last_error: null,
      failed_at: null,
      payload: { a: 1 },
    });
    for (const absent of ['delivered_at', 'next_attempt_at', 'deleted_at', 'deleted_by_api_key_id', 'body', 'body_error']) expect(m).not.toHaveProperty(absent);
  });

  it('keeps a string body verbatim, with its content type (text/plain by default)', async () => {
    const id = await submitOk({ body: 'a=1&b=é', content_type: 'application/x-www-form-urlencoded' });
    const m = (await t.request('GET', `/v1/messages/${id}`)).body.data;
    expect(m.body).toBe('a=1&b=é');
    expect(m.content_type).toBe('application/x-www-form-urlencoded');
    expect(m.size_bytes).toBe(Buffer.byteLength('a=1&b=é'));
    expect(m).not.toHaveProperty('payload');
    const plain = (await t.request('GET', `/v1/messages/${await submitOk({ body: '' })}`)).body.data;
    expect(plain.content_type).toBe('text/plain; charset=utf-8');
    expect(plain.body).toBe('');
    const cloud = (await t.request('GET', `/v1/messages/${await submitOk({ payload: [1], content_type: 'application/cloudevents+json' })}`)).body.data;
    expect(cloud).toMatchObject({ content_type: 'application/cloudevents+json', payload: [1] });
  });

  it('validates the body, naming the field', async () => {
    expectError(await t.request('POST', '/v1/messages', { body: { payload: {} } }), 400, 'INVALID_REQUEST', 'endpoint_id');
    expectError(await submit({}), 400, 'INVALID_REQUEST', 'payload');
    expectError(await submit({ payload: 1, body: 'x' }), 400, 'INVALID_REQUEST', 'body');
    expectError(await submit({ payload: 1, content_type: 'not a type' }), 400, 'INVALID_REQUEST', 'content_type');
    expectError(await submit({ payload: 1, extra: true }), 400, 'INVALID_REQUEST', 'extra');
    expectError(await t.request('POST', '/v1/messages', { body: { endpoint_id: 'ep_nope', payload: 1 } }), 400, 'INVALID_REQUEST', 'endpoint_id');
    expectError(await submit({ payload: 1 }, { 'idempotency-key': 'x'.repeat(256) }), 400, 'INVALID_REQUEST', 'idempotency-key');
  });

  it('answers 404 ENDPOINT_NOT_FOUND for an unknown, deleted or other project\'s endpoint, and accepts a paused one', async () => {
    expectError(await t.request('POST', '/v1/messages', { body: { endpoint_id: `ep_${'0'.repeat(32)}`, payload: 1 } }), 404, 'ENDPOINT_NOT_FOUND');
    const other = await t.createProject();
    const foreign = await createEndpoint(other.apiKey);
    expectError(await t.request('POST', '/v1/messages', { body: { endpoint_id: foreign, payload: 1 } }), 404, 'ENDPOINT_NOT_FOUND');
    const gone = await createEndpoint();
    await t.request('DELETE', `/v1/endpoints/${gone}`);
    expectError(await t.request('POST', '/v1/messages', { body: { endpoint_id: gone, payload: 1 } }), 404, 'ENDPOINT_NOT_FOUND');
    const paused = await createEndpoint();
    await t.request('POST', `/v1/endpoints/${paused}/pause`);
    expect((await t.request('POST', '/v1/messages', { body: { endpoint_id: paused, payload: 1 } })).status).toBe(202);
  });
});

describe('idempotency', () => {
  it('a repeat with the same key and request returns the first message (202); another request is 409', async () => {
    const first = await submit({ payload: { x: 1 } }, { 'idempotency-key': 'key-1' });
    expect(first.status).toBe(202);
    const again = await submit({ payload: { x: 1 } }, { 'idempotency-key': 'key-1' });
    expect(again.status).toBe(202);
    expect(again.body.data).toEqual(first.body.data);
    expectError(await submit({ payload: { x: 2 } }, { 'idempotency-key': 'key-1' }), 409, 'IDEMPOTENCY_CONFLICT');
    expectError(await submit({ payload: { x: 1 }, event_type: 'other' }, { 'idempotency-key': 'key-1' }), 409, 'IDEMPOTENCY_CONFLICT');
    const rows = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM outbound_messages WHERE idempotency_key = 'key-1'`;
    expect(rows[0]!.n).toBe(1);
    expect((await t.request('GET', `/v1/messages/${first.body.data.message_id}`)).body.data.idempotency_key).toBe('key-1');
  });

  it('the body field works like the header; both together must agree', async () => {
    const a = await submitOk({ payload: 1, idempotency_key: 'key-2' });
    expect(await submitOk({ payload: 1 }, { 'idempotency-key': 'key-2' })).toBe(a);
    expect(await submitOk({ payload: 1, idempotency_key: 'key-2' }, { 'idempotency-key': 'key-2' })).toBe(a);
    expectError(await submit({ payload: 1, idempotency_key: 'key-2' }, { 'idempotency-key': 'key-3' }), 400, 'INVALID_REQUEST', 'idempotency-key');
  });

  it('concurrent submissions with one key make one message', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => submit({ payload: { c: 1 } }, { 'idempotency-key': 'key-concurrent' })));
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(202));
    expect(new Set(results.map((r) => r.body.data.message_id)).size).toBe(1);
  });

  it('keys are per project and last 24 hours', async () => {
    const other = await t.createProject();
    const otherEndpoint = await createEndpoint(other.apiKey);
    const mine = await submitOk({ payload: 1 }, { 'idempotency-key': 'key-4' });
    const theirs = await t.request('POST', '/v1/messages', { apiKey: other.apiKey, body: { endpoint_id: otherEndpoint, payload: 2 }, headers: { 'idempotency-key': 'key-4' } });
    expect(theirs.status).toBe(202);
    expect(theirs.body.data.message_id).not.toBe(mine);
    await t.db.sql`UPDATE outbound_messages SET created_at = now() - interval '25 hours' WHERE id = ${mine}`;
    const fresh = await submitOk({ payload: 3 }, { 'idempotency-key': 'key-4' });
    expect(fresh).not.toBe(mine);
  });
});

describe('GET /v1/messages/{id} and /attempts', () => {
  it('is 404 NOT_FOUND for unknown ids and other projects, 400 for malformed ids', async () => {
    const id = await submitOk();
    expectError(await t.request('GET', '/v1/messages/01900000-0000-7000-8000-000000000000'), 404, 'NOT_FOUND');
    const other = await t.createProject();
    expectError(await t.request('GET', `/v1/messages/${id}`, { apiKey: other.apiKey }), 404, 'NOT_FOUND');
    expectError(await t.request('GET', `/v1/messages/${id}/attempts`, { apiKey: other.apiKey }), 404, 'NOT_FOUND');
    expectError(await t.request('GET', '/v1/messages/nope'), 400, 'INVALID_REQUEST');
  });

  it('lists attempts oldest first (none before the first attempt)', async () => {
    const id = await submitOk();
    expect((await t.request('GET', `/v1/messages/${id}/attempts`)).body.data).toEqual([]);
    await t.db.sql`
      INSERT INTO delivery_attempts (id, message_id, attempt_number, started_at, response_status, latency_ms, error, response_body)
      VALUES ('01900000-0000-7000-8000-0000000000a2', ${id}, 2, now(), 200, 12, NULL, 'ok'),
             ('01900000-0000-7000-8000-0000000000a1', ${id}, 1, now() - interval '5 seconds', NULL, 5000, 'timeout', NULL)`;
    const res = await t.request('GET', `/v1/messages/${id}/attempts`);
    expect(res.body.data).toEqual([
      { id: '01900000-0000-7000-8000-0000000000a1', message_id: id, attempt_number: 1, started_at: expect.any(String), response_status: null, latency_ms: 5000, error: 'timeout' },
      { id: '01900000-0000-7000-8000-0000000000a2', message_id: id, attempt_number: 2, started_at: expect.any(String), response_status: 200, latency_ms: 12, error: null, response_body: 'ok' },
    ]);
  });
});

describe('POST /v1/messages/{id}/retry', () => {
  it('queues the message again; a message with no job left gets a new one with a fresh schedule', async () => {
    const id = await submitOk();
    expect((await t.request('POST', `/v1/messages/${id}/retry`)).body.data).toEqual({ message_id: id, status: 'queued' });
    await t.db.sql`DELETE FROM delivery_jobs WHERE message_id = ${id}`;
    await t.db.sql`UPDATE outbound_messages SET status = 'failed_permanent', attempt_count = 8, failed_at = now() WHERE id = ${id}`;
    const res = await t.request('POST', `/v1/messages/${id}/retry`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ message_id: id, status: 'queued' });
    const [job] = await t.db.sql<{ attempt_base: number; due: boolean }>`SELECT attempt_base, run_at <= now() AS due FROM delivery_jobs WHERE message_id = ${id}`;
    expect(job).toEqual({ attempt_base: 8, due: true });
    const m = (await t.request('GET', `/v1/messages/${id}`)).body.data;
    expect(m).toMatchObject({ status: 'queued', failed_at: null, attempt_count: 8 });
  });

  it('is 404 for unknown, deleted and other projects\' messages', async () => {
    expectError(await t.request('POST', '/v1/messages/01900000-0000-7000-8000-000000000000/retry'), 404, 'NOT_FOUND');
    const id = await submitOk();
    const other = await t.createProject();
    expectError(await t.request('POST', `/v1/messages/${id}/retry`, { apiKey: other.apiKey }), 404, 'NOT_FOUND');
    await t.request('DELETE', `/v1/messages/${id}`);
    expectError(await t.request('POST', `/v1/messages/${id}/retry`), 404, 'NOT_FOUND');
  });
});

describe('deletes', () => {
  it('soft-deletes: idempotent with the first deleted_at, status kept, payload unreachable, history kept, job gone', async () => {
    const id = await submitOk({ payload: { secret: true } });
    await t.db.sql`UPDATE outbound_messages SET status = 'pending_retry', attempt_count = 1 WHERE id = ${id}`;
    await t.db.sql`
      INSERT INTO delivery_attempts (id, message_id, attempt_number, started_at, response_status, latency_ms, error)
      VALUES ('01900000-0000-7000-8000-0000000000b1', ${id}, 1, now(), 500, 3, 'HTTP 500')`;
    const first = await t.request('DELETE', `/v1/messages/${id}`);
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ message_id: id, deleted_at: expect.any(String), already_deleted: false });
    const again = await t.request('DELETE', `/v1/messages/${id}`);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ message_id: id, deleted_at: first.body.data.deleted_at, already_deleted: true });
    const m = (await t.request('GET', `/v1/messages/${id}`)).body.data;
    expect(m).toMatchObject({ status: 'pending_retry', deleted_at: first.body.data.deleted_at, deleted_by_api_key_id: t.main.apiKeyId, deleted_by_user_id: null });
    expect(m).not.toHaveProperty('payload');
    expect(m).not.toHaveProperty('body_error');
    expect((await t.request('GET', `/v1/messages/${id}/attempts`)).body.data).toHaveLength(1);
    expect(await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ${id}`).toHaveLength(0);
    expectError(await t.request('DELETE', '/v1/messages/01900000-0000-7000-8000-000000000000'), 404, 'NOT_FOUND');
    const other = await t.createProject();
    expectError(await t.request('DELETE', `/v1/messages/${await submitOk()}`, { apiKey: other.apiKey }), 404, 'NOT_FOUND');
  });

  it('delete-batch reports one outcome per id and the three counts', async () => {
    const a = await submitOk();
    const b = await submitOk();
    await t.request('DELETE', `/v1/messages/${b}`);
    const missing = '01900000-0000-7000-8000-00000000abcd';
    const res = await t.request('POST', '/v1/messages/delete-batch', { body: { message_ids: [a, b, missing, a.toUpperCase()] } });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      results: [
        { message_id: a, outcome: 'deleted', deleted_at: expect.any(String) },
        { message_id: b, outcome: 'already_deleted', deleted_at: expect.any(String) },
        { message_id: missing, outcome: 'not_found' },
      ],
      deleted_count: 1,
      already_deleted_count: 1,
      not_found_count: 1,
    });
    const tooMany = Array.from({ length: 101 }, (_, i) => `01900000-0000-7000-8000-${String(i).padStart(12, '0')}`);
    expectError(await t.request('POST', '/v1/messages/delete-batch', { body: { message_ids: tooMany } }), 400, 'INVALID_REQUEST', 'message_ids');
    expectError(await t.request('POST', '/v1/messages/delete-batch', { body: { message_ids: [] } }), 400, 'INVALID_REQUEST', 'message_ids');
    expectError(await t.request('POST', '/v1/messages/delete-batch', { body: { message_ids: ['x'] } }), 400, 'INVALID_REQUEST');
  });

  it('the sweeper removes payloads of deleted messages from the store', async () => {
    const id = await submitOk({ payload: { bytes: 'to remove' } });
    await t.request('DELETE', `/v1/messages/${id}`);
    let swept = 0;
    for (;;) {
      const n = await runSweeperOnce(t.db, deletedOutboundPayloadsSweeper, t.app.services);
      if (!n) break;
      swept += n;
    }
    expect(swept).toBeGreaterThanOrEqual(1);
    expect(await t.db.sql`SELECT 1 FROM payloads WHERE key = ${`outbound/${id}`}`).toHaveLength(0);
    const [row] = await t.db.sql<{ payload_key: string | null }>`SELECT payload_key FROM outbound_messages WHERE id = ${id}`;
    expect(row!.payload_key).toBeNull();
  });
});

describe('GET /v1/logs', () => {
  let logEndpoint: string;
  const ids: string[] = [];
  beforeAll(async () => {
    logEndpoint = await createEndpoint();
    for (let i = 0; i < 5; i++) {
      const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: logEndpoint, payload: { i } } });
      ids.push(res.body.data.message_id);
    }
    // Fixed creation times, one minute apart: 10:00 … 10:04.
    for (let i = 0; i < 5; i++) await t.db.sql`UPDATE outbound_messages SET created_at = ${`2026-01-01T10:0${i}:00Z`}::timestamptz WHERE id = ${ids[i]!}`;
    await t.db.sql`UPDATE outbound_messages SET status = 'succeeded', attempt_count = 1, delivered_at = now() WHERE id = ${ids[1]!}`;
    await t.request('DELETE', `/v1/messages/${ids[3]!}`);
  });
  const logs = (query: string) => t.request('GET', `/v1/logs?endpoint_id=${logEndpoint}&${query}`);

  it('lists log records newest first; deleted rows carry deleted_at', async () => {
    const res = await logs('');
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.map((r: any) => r.message_id)).toEqual([...ids].reverse());
    expect(res.body.meta).toEqual({ request_id: res.headers['x-request-id'], has_more: false, next_cursor: null });
    const record = res.body.data.find((r: any) => r.message_id === ids[1]);
    expect(Object.keys(record).sort()).toEqual(
      ['attempt_count', 'created_at', 'delivered_at', 'endpoint', 'first_attempt_at', 'last_error', 'message_id', 'processing_ms', 'queue_wait_ms', 'response_latency_ms', 'response_status', 'status', 'total_delivery_ms'].sort(),
    );
    expect(record).toMatchObject({ status: 'succeeded', endpoint: expect.stringMatching(/^https:\/\//), created_at: '2026-01-01T10:01:00.000Z' });
    expect(res.body.data.find((r: any) => r.message_id === ids[3]).deleted_at).toEqual(expect.any(String));
    expect(res.body.data.filter((r: any) => 'deleted_at' in r)).toHaveLength(1);
  });

  it('filters by status, start_time (inclusive) and end_time (exclusive)', async () => {
    expect((await logs('status=succeeded')).body.data.map((r: any) => r.message_id)).toEqual([ids[1]]);
    const window = await logs('start_time=2026-01-01T10:01:00Z&end_time=2026-01-01T10:03:00Z');
    expect(window.body.data.map((r: any) => r.message_id)).toEqual([ids[2], ids[1]]);
    const offset = await logs(`start_time=${encodeURIComponent('2026-01-01T11:04:00+01:00')}`);
    expect(offset.body.data.map((r: any) => r.message_id)).toEqual([ids[4]]);
  });

  it('compares start_time and end_time as given, to the microsecond (not rounded through a JS Date)', async () => {
    const ep = await createEndpoint();
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: ep, payload: { micro: true } } });
    const id = res.body.data.message_id as string;
    await t.db.sql`UPDATE outbound_messages SET created_at = ${'2026-02-01T00:00:00.000500Z'}::text::timestamptz WHERE id = ${id}`;
    const found = async (query: string) => {
      const page = await t.request('GET', `/v1/logs?endpoint_id=${ep}&${query}`);
      expect(page.status, page.raw).toBe(200);
      return page.body.data.map((r: any) => r.message_id);
    };
    expect(await found('start_time=2026-02-01T00:00:00.000400Z&end_time=2026-02-01T00:00:00.000600Z')).toEqual([id]);
    expect(await found('start_time=2026-02-01T00:00:00.000500Z')).toEqual([id]);
    expect(await found('start_time=2026-02-01T00:00:00.000501Z')).toEqual([]);
    expect(await found('end_time=2026-02-01T00:00:00.000500Z')).toEqual([]);
    expect(await found(`end_time=${encodeURIComponent('2026-02-01T01:00:00.000501+01:00')}`)).toEqual([id]);
  });

  it('pages with a keyset cursor, has_more and next_cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await logs(`limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((r: any) => r.message_id));
      expect(res.body.meta.has_more).toBe(res.body.meta.next_cursor !== null);
      cursor = res.body.meta.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
  });

  it('validates every parameter and bound', async () => {
    const bad = async (query: string, field: string) => expectError(await t.request('GET', `/v1/logs?${query}`), 400, 'INVALID_REQUEST', field);
    await bad('limit=0', 'limit');
    await bad('limit=501', 'limit');
    await bad('limit=abc', 'limit');
    await bad('endpoint_id=ep_XYZ', 'endpoint_id');
    await bad('status=done', 'status');
    await bad('start_time=yesterday', 'start_time');
    await bad('end_time=2026-13-01', 'end_time');
    await bad('cursor=nonsense', 'cursor');
    await bad('sort=asc', 'sort');
    expect((await t.request('GET', '/v1/logs?limit=500')).status).toBe(200);
    const defaultPage = await t.request('GET', '/v1/logs');
    expect(defaultPage.body.data.length).toBeLessThanOrEqual(50);
    const unknown = await t.request('GET', `/v1/logs?endpoint_id=ep_${'f'.repeat(32)}`);
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toEqual([]);
  });

  it('the default limit is 50 and other projects never appear', async () => {
    const other = await t.createProject();
    const theirs = await createEndpoint(other.apiKey);
    await t.request('POST', '/v1/messages', { apiKey: other.apiKey, body: { endpoint_id: theirs, payload: 1 } });
    const many = await createEndpoint();
    await Promise.all(Array.from({ length: 51 }, (_, i) => t.request('POST', '/v1/messages', { body: { endpoint_id: many, payload: i } })));
    const page = await t.request('GET', `/v1/logs?endpoint_id=${many}`);
    expect(page.body.data).toHaveLength(50);
    expect(page.body.meta.has_more).toBe(true);
    const all = await t.request('GET', '/v1/logs?limit=500');
    const theirLogs = await t.request('GET', '/v1/logs', { apiKey: other.apiKey });
    expect(theirLogs.body.data).toHaveLength(1);
    expect(all.body.data.map((r: any) => r.message_id)).not.toContain(theirLogs.body.data[0].message_id);
  });
});

describe('the typed client', () => {
  it('creates (with an idempotency key), reads, lists, retries and deletes messages', async () => {
    const client = new HookrelayClient({ apiUrl: await t.app.listen({ host: '127.0.0.1', port: 0 }), apiKey: t.main.apiKey });
    try {
      const created = await client.messages.create({ endpoint_id: endpointId, payload: { via: 'client' } }, { idempotencyKey: 'client-key' });
      expect(created.status).toBe(202);
      const repeat = await client.messages.create({ endpoint_id: endpointId, payload: { via: 'client' } }, { idempotencyKey: 'client-key' });
      expect(repeat.data.message_id).toBe(created.data.message_id);
      const conflict = await client.messages.create({ endpoint_id: endpointId, payload: { other: true } }, { idempotencyKey: 'client-key' }).catch((e: unknown) => e);
      expect(conflict).toBeInstanceOf(HookrelayApiError);
      expect((conflict as HookrelayApiError).code).toBe('IDEMPOTENCY_CONFLICT');
      expect((conflict as HookrelayApiError).status).toBe(409);
      const id = created.data.message_id;
      expect((await client.messages.get(id)).data.payload).toEqual({ via: 'client' });
      expect((await client.messages.attempts(id)).data).toEqual([]);
      expect((await client.messages.retry(id)).data.status).toBe('queued');
      const page = await client.logs.list({ endpoint_id: endpointId, limit: 1 });
      expect(page.data).toHaveLength(1);
      expect(page.meta.has_more).toBe(true);
      expect(page.meta.next_cursor).toEqual(expect.any(String));
      expect((await client.messages.delete(id)).data.already_deleted).toBe(false);
      expect((await client.messages.deleteBatch([id])).data.already_deleted_count).toBe(1);
    } finally {
      await client.close();
    }
  });
});
