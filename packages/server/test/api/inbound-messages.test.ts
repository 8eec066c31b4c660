import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweeperOnce, deletedInboundPayloadsSweeper } from '../../src/sweepers/runner.js';
import { DatabasePayloadStore, PayloadUnavailableError } from '../../src/storage/payload-store.js';
import type { Sql } from '../../src/db/database.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** A store whose reads fail on demand, to see `body_error: payload_unavailable`. */
class FlakyStore extends DatabasePayloadStore {
  failReads = false;
  override async get(sql: Sql, key: string) {
    if (this.failReads) throw new PayloadUnavailableError('store down');
    return super.get(sql, key);
  }
}

const store = new FlakyStore();
let t: TestApp;
let endpointId: string;
let token: string;

beforeAll(async () => {
  t = await createTestApp({ payloadStore: store });
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'messages', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  endpointId = res.body.data.id;
  token = res.body.data.secret_token;
});
afterAll(async () => {
  await t?.close();
});

async function send(body: string, contentType = 'application/json', path = ''): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}${path}`, payload: body, headers: { 'content-type': contentType, 'x-test': 'yes' } });
  expect(res.statusCode).toBe(200);
  return res.json().data.message_id;
}

describe('GET /v1/inbound-messages/{id}', () => {
  it('returns every field, with a JSON body embedded', async () => {
    const id = await send('{"hello":"world"}', 'application/json', '/hooks?a=1');
    const res = await t.request('GET', `/v1/inbound-messages/${id}`);
    expect(res.status).toBe(200);
    const m = res.body.data;
    expect(m).toMatchObject({
      id,
      message_id: id,
      project_id: t.main.projectId,
      inbound_endpoint_id: endpointId,
      status: 'queued',
      attempt_count: 0,
      replay_count: 0,
      content_type: 'application/json',
      size_bytes: 17,
      method: 'POST',
      path: '/hooks',
      query: 'a=1',
      idempotency_key: null,
      provider: null,
      response_status: null,
      response_latency_ms: null,
      last_error: null,
      body: { hello: 'world' },
    });
    expect(m.payload_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(m.headers['x-test']).toBe('yes');
    expect(m.delivered_at).toBeUndefined();
    expect(m.deleted_at).toBeUndefined();
    expect(m.body_encoding).toBeUndefined();
  });

  it('names the provider the header lines as received name', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/in/${token}`,
      payload: '{"type":"invoice.paid"}',
      headers: { 'content-type': 'application/json', 'Stripe-Signature': 't=1,v1=00' },
    });
    expect(res.statusCode).toBe(200);
    const got = await t.request('GET', `/v1/inbound-messages/${res.json().data.message_id}`);
    expect(got.body.data).toMatchObject({ provider: 'stripe', event_type: 'invoice.paid' });
  });

  it('returns other bodies, or any body when asked, as base64', async () => {
    const id = await send('plain text', 'text/plain');
    const res = await t.request('GET', `/v1/inbound-messages/${id}`);
    expect(res.body.data.body_encoding).toBe('base64');
    expect(Buffer.from(res.body.data.body, 'base64').toString()).toBe('plain text');
    const jsonId = await send('{"a": 1}');
    const forced = await t.request('GET', `/v1/inbound-messages/${jsonId}?body_encoding=base64`);
    expect(Buffer.from(forced.body.data.body, 'base64').toString()).toBe('{"a": 1}');
  });

  it('answers body_error: payload_unavailable when the store fails', async () => {
    const id = await send('{"a":1}');
    store.failReads = true;
    try {
      const res = await t.request('GET', `/v1/inbound-messages/${id}`);
      expect(res.status).toBe(200);
      expect(res.body.data.body_error).toBe('payload_unavailable');
      expect(res.body.data.body).toBeUndefined();
    } finally {
      store.failReads = false;
    }
  });

  it('is 404 NOT_FOUND for unknown ids and for another project, 400 for malformed ids', async () => {
    const id = await send('{}');
    expect((await t.request('GET', '/v1/inbound-messages/01900000-0000-7000-8000-000000000000')).body.error.code).toBe('NOT_FOUND');
    const other = await t.createProject();
    const cross = await t.request('GET', `/v1/inbound-messages/${id}`, { apiKey: other.apiKey });
    expect(cross.status).toBe(404);
    expect(cross.body.error.code).toBe('NOT_FOUND');
    expect((await t.request('GET', '/v1/inbound-messages/nope')).body.error.code).toBe('INVALID_REQUEST');
  });
});

describe('replay', () => {
  it('queues the message again and counts the replay', async () => {
    const id = await send('{}');
    await t.db.sql`UPDATE inbound_messages SET status = 'succeeded' WHERE id = ${id}`;
    const res = await t.request('POST', `/v1/inbound-messages/${id}/replay`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ message_id: id, replay_count: 1, status: 'queued' });
    expect((await t.request('POST', `/v1/inbound-messages/${id}/replay`)).body.data.replay_count).toBe(2);
    expect((await t.request('GET', `/v1/inbound-messages/${id}`)).body.data.replay_count).toBe(2);
  });
});

describe('deletes', () => {
  it('soft-deletes: metadata stays, payload unreachable at once, second delete reports the first time', async () => {
    const id = await send('{"secret":true}');
    const first = await t.request('DELETE', `/v1/inbound-messages/${id}`);
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ message_id: id, already_deleted: false });
    const again = await t.request('DELETE', `/v1/inbound-messages/${id}`);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ message_id: id, deleted_at: first.body.data.deleted_at, already_deleted: true });
    const got = await t.request('GET', `/v1/inbound-messages/${id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.deleted_at).toBe(first.body.data.deleted_at);
    expect(got.body.data.deleted_by_api_key_id).toBe(t.main.apiKeyId);
    expect(got.body.data.deleted_by_user_id).toBeNull();
    expect(got.body.data.status).toBe('queued');
    expect(got.body.data.body).toBeUndefined();
    expect(got.body.data.body_error).toBeUndefined();
  });

  it('delete-batch reports one outcome per id and the three counts', async () => {
    const a = await send('{}');
    const b = await send('{}');
    await t.request('DELETE', `/v1/inbound-messages/${b}`);
    const missing = '01900000-0000-7000-8000-00000000abcd';
    const res = await t.request('POST', '/v1/inbound-messages/delete-batch', { body: { message_ids: [a, b, missing] } });
    expect(res.status).toBe(200);
    expect(res.body.data.deleted_count).toBe(1);
    expect(res.body.data.already_deleted_count).toBe(1);
    expect(res.body.data.not_found_count).toBe(1);
    expect(res.body.data.results).toEqual([
      { message_id: a, outcome: 'deleted', deleted_at: expect.any(String) },
      { message_id: b, outcome: 'already_deleted', deleted_at: expect.any(String) },
      { message_id: missing, outcome: 'not_found' },
    ]);
    const tooMany = Array.from({ length: 101 }, (_, i) => `01900000-0000-7000-8000-${String(i).padStart(12, '0')}`);
    expect((await t.request('POST', '/v1/inbound-messages/delete-batch', { body: { message_ids: tooMany } })).status).toBe(400);
  });

  it('another project cannot delete the message', async () => {
    const id = await send('{}');
    const other = await t.createProject();
    const res = await t.request('POST', '/v1/inbound-messages/delete-batch', { body: { message_ids: [id] }, apiKey: other.apiKey });
    expect(res.body.data.results).toEqual([{ message_id: id, outcome: 'not_found' }]);
    expect((await t.request('DELETE', `/v1/inbound-messages/${id}`, { apiKey: other.apiKey })).status).toBe(404);
    expect((await t.request('GET', `/v1/inbound-messages/${id}`)).body.data.deleted_at).toBeUndefined();
  });

  it('the sweeper removes the stored payload of deleted messages only', async () => {
    const kept = await send('{"keep":1}');
    const gone = await send('{"drop":1}');
    await t.request('DELETE', `/v1/inbound-messages/${gone}`);
    await runSweeperOnce(t.db, deletedInboundPayloadsSweeper, { payloadStore: store });
    const rows = await t.db.sql<{ id: string; payload_key: string | null; stored: boolean }>`
      SELECT m.id, m.payload_key, (p.key IS NOT NULL) AS stored
      FROM inbound_messages m LEFT JOIN payloads p ON p.key = 'inbound/' || m.id::text
      WHERE m.id IN (${kept}::uuid, ${gone}::uuid)`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(kept)).toMatchObject({ stored: true });
    expect(byId.get(kept)!.payload_key).not.toBeNull();
    expect(byId.get(gone)).toMatchObject({ stored: false, payload_key: null });
  });
});

describe('GET /v1/inbound-logs', () => {
  it('filters by endpoint, status and time, pages newest first with has_more and next_cursor', async () => {
    const second = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'logs', mode: 'cli' } });
    const secondToken = second.body.data.secret_token as string;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({ method: 'POST', url: `/in/${secondToken}`, payload: String(i) });
      ids.push(res.json().data.message_id);
    }
    await t.db.sql`UPDATE inbound_messages SET status = 'succeeded' WHERE id = ${ids[1]}`;
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/v1/inbound-logs?inbound_endpoint_id=${second.body.data.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await t.request('GET', url);
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((r: { message_id: string }) => r.message_id));
      expect(page.body.meta.has_more).toBe(page.body.meta.next_cursor !== null);
      cursor = page.body.meta.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen).toEqual([...ids].reverse());
    expect(pages).toBe(3);

    const succeeded = await t.request('GET', `/v1/inbound-logs?inbound_endpoint_id=${second.body.data.id}&status=succeeded`);
    expect(succeeded.body.data.map((r: { message_id: string }) => r.message_id)).toEqual([ids[1]]);
    const record = succeeded.body.data[0];
    expect(record).toMatchObject({ inbound_endpoint_id: second.body.data.id, endpoint: '', status: 'succeeded', attempt_count: 0 });
    // The log row and the message record name the id alike.
    const message = await t.request('GET', `/v1/inbound-messages/${ids[1]}`);
    expect(message.body.data.message_id).toBe(record.message_id);

    const future = new Date(Date.now() + 60_000).toISOString();
    const none = await t.request('GET', `/v1/inbound-logs?inbound_endpoint_id=${second.body.data.id}&received_after=${encodeURIComponent(future)}`);
    expect(none.body.data).toEqual([]);
    expect(none.body.meta).toMatchObject({ has_more: false, next_cursor: null });
    const before = await t.request('GET', `/v1/inbound-logs?inbound_endpoint_id=${second.body.data.id}&received_before=${encodeURIComponent(future)}`);
    expect(before.body.data).toHaveLength(5);
  });

  it('validates its parameters', async () => {
    for (const query of ['limit=0', 'limit=501', 'status=lost', 'received_after=yesterday', 'inbound_endpoint_id=x', 'cursor=zzz', 'foo=1']) {
      const res = await t.request('GET', `/v1/inbound-logs?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
    expect((await t.request('GET', '/v1/inbound-logs?limit=500')).status).toBe(200);
  });

  it('shows deleted rows with deleted_at and hides other projects', async () => {
    const id = await send('{}');
    await t.request('DELETE', `/v1/inbound-messages/${id}`);
    const res = await t.request('GET', `/v1/inbound-logs?inbound_endpoint_id=${endpointId}&limit=500`);
    const row = res.body.data.find((r: { message_id: string }) => r.message_id === id);
    expect(row.deleted_at).toEqual(expect.any(String));
    const other = await t.createProject();
    expect((await t.request('GET', '/v1/inbound-logs', { apiKey: other.apiKey })).body.data).toEqual([]);
  });
});
