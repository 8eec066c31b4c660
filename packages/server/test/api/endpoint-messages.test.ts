import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

async function createCli(apiKey?: string): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'messages', mode: 'cli' }, ...(apiKey ? { apiKey } : {}) });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ingest(token: string, eventType: string | null, path = ''): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/in/${token}${path}`,
    headers: { 'content-type': 'application/json', ...(eventType ? { 'x-github-event': eventType } : {}) },
    payload: '{"zen":"x"}',
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id as string;
}

async function report(messageId: string, status: number | null, extra: Record<string, unknown> = {}): Promise<void> {
  const res = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, {
    body: { message_id: messageId, status, latency_ms: 7, error: status === null ? 'connection refused' : null, ...extra },
  });
  expect(res.status, res.raw).toBe(200);
}

const list = (id: string, query = '', apiKey?: string) => t.request('GET', `/v1/inbound-endpoints/${id}/messages${query}`, apiKey ? { apiKey } : {});
const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((m) => m.id);

describe('GET /v1/inbound-endpoints/{id}/messages', () => {
  it('lists newest first with the row fields, answers without their content', async () => {
    const { id, token } = await createCli();
    const first = await ingest(token, 'push', '/github/hooks');
    const second = await ingest(token, null);
    await report(first, 200, { listener: 'ci', response_headers: [['content-type', 'text/plain']], response_body: Buffer.from('ok').toString('base64') });

    const res = await list(id);
    expect(res.status, res.raw).toBe(200);
    expect(ids(res)).toEqual([second, first]);
    expect(res.body.meta).toMatchObject({ has_more: false, next_cursor: null });
    const row = res.body.data[1];
    expect(row).toMatchObject({
      id: first,
      message_id: first,
      inbound_endpoint_id: id,
      status: 'succeeded',
      method: 'POST',
      path: '/github/hooks',
      query: '',
      content_type: 'application/json',
      size_bytes: 11,
      event_type: 'push',
      provider: 'github',
      verified: [],
      replay_count: 0,
      response_status: 200,
      response_latency_ms: 7,
    });
    expect(row.answers).toEqual([{ listener: 'ci', status: 200, latency_ms: 7, error: null, response_body_truncated: false, resigned: false, answered_at: expect.any(String) }]);
    expect(res.body.data[0]).toMatchObject({ event_type: null, provider: null, status: 'queued', response_status: null, answers: [] });
    // The row names the provider, not the header lines it was read from.
    expect(row.raw_headers).toBeUndefined();
  });

  it('pages with the cursor, none skipped or repeated', async () => {
    const { id, token } = await createCli();
    const sent: string[] = [];
    for (let i = 0; i < 7; i++) sent.push(await ingest(token, 'push'));
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const res = await list(id, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status, res.raw).toBe(200);
      seen.push(...ids(res));
      cursor = res.body.meta.next_cursor;
      expect(res.body.meta.has_more).toBe(cursor !== null);
      if (cursor === null) break;
    }
    expect(seen).toEqual([...sent].reverse());
    expectError(await list(id, '?cursor=bm90LWEtY3Vyc29y'), 400, 'INVALID_REQUEST', 'query.cursor');
    expectError(await list(id, '?limit=201'), 400, 'INVALID_REQUEST', 'limit');
  });

  it('filters by event type (exact or glob), answer class and received time', async () => {
    const { id, token } = await createCli();
    const push = await ingest(token, 'push');
    const opened = await ingest(token, 'pull_request.opened');
    const closed = await ingest(token, 'pull_request.closed');
    const literal = await ingest(token, 'a_b%c');
    const none = await ingest(token, null);
    await report(push, 204);
    await report(opened, 404);
    await report(closed, 503);
    await report(literal, null);

    expect(ids(await list(id, '?event_type=push'))).toEqual([push]);
    expect(ids(await list(id, '?event_type=pull_request.*'))).toEqual([closed, opened]);
    expect(ids(await list(id, '?event_type=*.closed'))).toEqual([closed]);
    expect(ids(await list(id, '?event_type=*'))).toEqual([literal, closed, opened, push]);
    // LIKE's wildcards in a glob match only themselves.
    expect(ids(await list(id, `?event_type=${encodeURIComponent('a_b%*')}`))).toEqual([literal]);
    expect(ids(await list(id, `?event_type=${encodeURIComponent('a%b*')}`))).toEqual([]);
    expect(ids(await list(id, '?event_type=PUSH'))).toEqual([]);

    expect(ids(await list(id, '?answer=2xx'))).toEqual([push]);
    expect(ids(await list(id, '?answer=4xx'))).toEqual([opened]);
    expect(ids(await list(id, '?answer=5xx'))).toEqual([closed]);
    expect(ids(await list(id, '?answer=none'))).toEqual([none, literal]);
    expect(ids(await list(id, '?answer=none&event_type=*'))).toEqual([literal]);
    expectError(await list(id, '?answer=3xx'), 400, 'INVALID_REQUEST', 'answer');

    const all = (await list(id)).body.data as { id: string; received_at: string }[];
    const at = (messageId: string) => all.find((m) => m.id === messageId)!.received_at;
    expect(ids(await list(id, `?received_after=${encodeURIComponent(at(closed))}`))).toEqual([none, literal, closed]);
    expect(ids(await list(id, `?received_before=${encodeURIComponent(at(opened))}`))).toEqual([push]);
    expectError(await list(id, '?received_after=yesterday'), 400, 'INVALID_REQUEST', 'received_after');
  });

  it('leaves deleted messages out', async () => {
    const { id, token } = await createCli();
    const kept = await ingest(token, 'push');
    const gone = await ingest(token, 'push');
    expect((await t.request('DELETE', `/v1/inbound-messages/${gone}`)).status).toBe(200);
    expect(ids(await list(id))).toEqual([kept]);
  });

  it('is not found for another project’s endpoint, an unknown one and a deleted one', async () => {
    const other = await t.createProject();
    const theirs = await createCli(other.apiKey);
    await ingest(theirs.token, 'push');
    expectError(await list(theirs.id), 404, 'ENDPOINT_NOT_FOUND');
    expect(ids(await list(theirs.id, '', other.apiKey))).toHaveLength(1);
    expectError(await list('01a20000-0000-7000-8000-000000000000'), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await list('not-a-uuid'), 400, 'INVALID_REQUEST');
    const mine = await createCli();
    expect((await t.request('DELETE', `/v1/inbound-endpoints/${mine.id}`)).status).toBe(200);
    expectError(await list(mine.id), 404, 'ENDPOINT_NOT_FOUND');
  });
});

describe('connected_listeners and messages_24h', () => {
  async function activity(id: string): Promise<{ record: { connected_listeners: number; messages_24h: number }; row: unknown }> {
    const record = await t.request('GET', `/v1/inbound-endpoints/${id}`);
    expect(record.status, record.raw).toBe(200);
    let row: unknown;
    let cursor: string | null = null;
    for (let pages = 0; pages < 50 && row === undefined; pages++) {
      const page = await t.request('GET', `/v1/inbound-endpoints?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
      row = page.body.data.find((e: { id: string }) => e.id === id);
      cursor = page.body.meta.next_cursor;
      if (cursor === null) break;
    }
    return { record: record.body.data, row };
  }

  async function waitFor(id: string, listeners: number): Promise<void> {
    for (let i = 0; i < 100; i++) {
      if ((await activity(id)).record.connected_listeners === listeners) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`connected_listeners never became ${listeners}`);
  }

  it('counts open streams and the last day’s messages, in the list and the record', async () => {
    const { id, token } = await createCli();
    expect(await activity(id)).toEqual({
      record: expect.objectContaining({ connected_listeners: 0, messages_24h: 0 }),
      row: expect.objectContaining({ connected_listeners: 0, messages_24h: 0 }),
    });
    await ingest(token, 'push');
    await ingest(token, null);

    const open = () => {
      const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${id}/stream`, { headers: { authorization: `Bearer ${t.main.apiKey}` } });
      return new Promise<WebSocket>((resolve, reject) => {
        socket.once('message', () => resolve(socket));
        socket.once('error', reject);
      });
    };
    const a = await open();
    const b = await open();
    await waitFor(id, 2);
    expect(await activity(id)).toEqual({
      record: expect.objectContaining({ connected_listeners: 2, messages_24h: 2 }),
      row: expect.objectContaining({ connected_listeners: 2, messages_24h: 2 }),
    });
    a.close();
    await waitFor(id, 1);
    b.close();
    await waitFor(id, 0);
  });
});
