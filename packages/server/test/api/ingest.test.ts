import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { HOOKRELAY_MAX_INGEST_BODY_BYTES: '65536' } });
});
afterAll(async () => {
  await t?.close();
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

async function createInbound(body: Record<string, unknown> = {}): Promise<{ id: string; token: string; ingestUrl: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'ingest test', mode: 'cli', ...body } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token, ingestUrl: res.body.data.ingest_url };
}

function ingest(token: string, options: { method?: string; path?: string; body?: Buffer | string; headers?: Record<string, string> } = {}) {
  return t.app.inject({
    method: (options.method ?? 'POST') as 'POST',
    url: `/in/${token}${options.path ?? ''}`,
    headers: options.headers ?? {},
    ...(options.body !== undefined ? { payload: options.body } : {}),
  });
}

async function storedMessages(endpointId: string) {
  return t.db.sql<{ id: string; method: string; path: string; query: string; content_type: string; size_bytes: number; payload_sha256: string; raw_headers: [string, string][] }>`
    SELECT id, method, path, query, content_type, size_bytes, payload_sha256, raw_headers
    FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
}

describe('ingestion stores exactly what was sent', () => {
  it('keeps binary, JSON with odd whitespace and key order, and form bodies byte for byte', async () => {
    const { id, token } = await createInbound();
    const binary = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x0d, 0x0a, 0x7f]);
    const json = '{ "z": 1,\n\t"a" :[ 2 ,3 ],  "m":{"y":null , "b":"é"} }  ';
    const form = 'b=2&a=1&a=%20space+plus&empty=';
    for (const [body, type] of [
      [binary, 'application/octet-stream'],
      [json, 'application/json'],
      [form, 'application/x-www-form-urlencoded'],
    ] as const) {
      const res = await ingest(token, { body, headers: { 'content-type': type } });
      expect(res.statusCode).toBe(200);
      expect(res.json().data.message_id).toMatch(/^[0-9a-f-]{36}$/);
    }
    const rows = await storedMessages(id);
    expect(rows.map((r) => r.payload_sha256)).toEqual([sha256(binary), sha256(json), sha256(form)]);
    expect(rows.map((r) => r.size_bytes)).toEqual([binary.length, Buffer.byteLength(json), form.length]);
    expect(rows.map((r) => r.content_type)).toEqual(['application/octet-stream', 'application/json', 'application/x-www-form-urlencoded']);
    const payloads = await t.db.sql<{ data: Uint8Array }>`
      SELECT p.data FROM payloads p JOIN inbound_messages m ON m.payload_key = p.key
      WHERE m.inbound_endpoint_id = ${id} ORDER BY m.id`;
    expect(payloads.map((p) => Buffer.from(p.data).toString('base64'))).toEqual([binary, Buffer.from(json), Buffer.from(form)].map((b) => b.toString('base64')));
  });

  it('records method, sub-path, query and header lines in order with repeats', async () => {
    const { id, token } = await createInbound();
    const put = await t.app.inject({
      method: 'PUT',
      url: `/in/${token}/github/push?x=1&y=%20z&x=2`,
      payload: 'x',
      headers: { 'content-type': 'text/plain', 'x-first': 'one' },
    });
    expect(put.statusCode).toBe(200);
    // Node's raw header list keeps repeats; light-my-request sends arrays as repeated lines.
    const repeated = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: '', headers: { 'x-dup': ['a', 'b'] as unknown as string } });
    expect(repeated.statusCode).toBe(200);
    for (const method of ['GET', 'DELETE', 'PATCH']) expect((await ingest(token, { method, path: '/m' })).statusCode).toBe(200);
    const rows = await storedMessages(id);
    expect(rows.map((r) => [r.method, r.path, r.query])).toEqual([
      ['PUT', '/github/push', 'x=1&y=%20z&x=2'],
      ['POST', '/', ''],
      ['GET', '/m', ''],
      ['DELETE', '/m', ''],
      ['PATCH', '/m', ''],
    ]);
    const names = rows[0]!.raw_headers.map(([name]) => name.toLowerCase());
    expect(names.indexOf('content-type')).toBeLessThan(names.indexOf('x-first'));
    expect(rows[1]!.raw_headers.filter(([name]) => name.toLowerCase() === 'x-dup')).toEqual([
      ['x-dup', 'a'],
      ['x-dup', 'b'],
    ]);
  });

  it('answers HEAD and OPTIONS with 200 and stores nothing', async () => {
    const { id, token } = await createInbound();
    expect((await ingest(token, { method: 'HEAD' })).statusCode).toBe(200);
    expect((await ingest(token, { method: 'OPTIONS', path: '/x' })).statusCode).toBe(200);
    expect(await storedMessages(id)).toHaveLength(0);
  });

  it('answers the configured ingest_response_code', async () => {
    const { token } = await createInbound({ ingest_response_code: 202 });
    expect((await ingest(token, { body: '{}', headers: { 'content-type': 'application/json' } })).statusCode).toBe(202);
  });

  it('refuses bodies over the limit with 413 and stores nothing', async () => {
    const { id, token } = await createInbound();
    const res = await ingest(token, { body: Buffer.alloc(70_000, 1), headers: { 'content-type': 'application/octet-stream' } });
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await storedMessages(id)).toHaveLength(0);
  });
});

describe('ingest URL states', () => {
  it('unknown token → 404 NOT_FOUND, malformed token → 404', async () => {
    const unknown = await ingest('0123456789abcdef0123456789abcdef', { body: 'x' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('NOT_FOUND');
    expect((await ingest('not-a-token', { body: 'x' })).statusCode).toBe(404);
  });

  it('paused → 503 ENDPOINT_PAUSED with Retry-After, nothing stored; resumed → stored', async () => {
    const { id, token } = await createInbound();
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/pause`)).status).toBe(200);
    const paused = await ingest(token, { body: 'x' });
    expect(paused.statusCode).toBe(503);
    expect(paused.json().error.code).toBe('ENDPOINT_PAUSED');
    expect(Number(paused.headers['retry-after'])).toBeGreaterThan(0);
    expect(await storedMessages(id)).toHaveLength(0);
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/resume`)).status).toBe(200);
    expect((await ingest(token, { body: 'x' })).statusCode).toBe(200);
    expect(await storedMessages(id)).toHaveLength(1);
  });

  it('deleted → 410 GONE', async () => {
    const { id, token } = await createInbound();
    expect((await ingest(token, { body: 'x' })).statusCode).toBe(200);
    expect((await t.request('DELETE', `/v1/inbound-endpoints/${id}`)).status).toBe(200);
    const gone = await ingest(token, { body: 'x' });
    expect(gone.statusCode).toBe(410);
    expect(gone.json().error.code).toBe('GONE');
  });
});

describe('verification at the ingest URL', () => {
  it('refuses a failed check with 401, no detail, nothing stored, and counts it', async () => {
    const { id, token } = await createInbound({
      verify_static_token: true,
      static_token_header_name: 'X-Webhook-Token',
      static_token: 's3cret-token',
    });
    const refused = await ingest(token, { body: 'x', headers: { 'x-webhook-token': 'wrong' } });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error).toEqual({ code: 'UNAUTHORIZED', message: 'unauthorized' });
    expect((await ingest(token, { body: 'x' })).statusCode).toBe(401);
    expect(await storedMessages(id)).toHaveLength(0);
    const accepted = await ingest(token, { body: 'x', headers: { 'x-webhook-token': 's3cret-token' } });
    expect(accepted.statusCode).toBe(200);
    expect(await storedMessages(id)).toHaveLength(1);
    // The count is written off the request path, with the refused requests.
    await t.app.engines.ingest!.rejections.idle();
    const endpoint = await t.request('GET', `/v1/inbound-endpoints/${id}`);
    expect(endpoint.body.data.rejected_count).toBe(2);
  });

  it('applies a PATCH of the verification settings to the next request', async () => {
    const { id, token } = await createInbound();
    expect((await ingest(token, { body: 'x' })).statusCode).toBe(200);
    const patched = await t.request('PATCH', `/v1/inbound-endpoints/${id}`, {
      body: { verify_static_token: true, static_token_query_param: 'token', static_token: 'abc' },
    });
    expect(patched.status, patched.raw).toBe(200);
    expect((await ingest(token, { body: 'x' })).statusCode).toBe(401);
    expect((await ingest(token, { body: 'x', path: '?token=abc' })).statusCode).toBe(200);
  });
});

describe('idempotency', () => {
  it('answers a repeat with the configured code and Hookrelay-Duplicate, storing it once', async () => {
    const { id, token } = await createInbound({ idempotency_header_names: ['X-Delivery-Id', 'Idempotency-Key'], ingest_response_code: 202 });
    const first = await ingest(token, { body: 'a', headers: { 'idempotency-key': 'k-1' } });
    const again = await ingest(token, { body: 'a', headers: { 'idempotency-key': 'k-1' } });
    expect(first.statusCode).toBe(202);
    expect(first.headers['hookrelay-duplicate']).toBeUndefined();
    expect(again.statusCode).toBe(202);
    expect(again.headers['hookrelay-duplicate']).toBe('true');
    expect(again.json().data.message_id).toBe(first.json().data.message_id);
    // The first configured header that is present gives the key: here k-2, not the used k-1.
    const byFirstHeader = await ingest(token, { body: 'b', headers: { 'x-delivery-id': 'k-2', 'idempotency-key': 'k-1' } });
    expect(byFirstHeader.headers['hookrelay-duplicate']).toBeUndefined();
    const repeatOfFirstHeader = await ingest(token, { body: 'b', headers: { 'x-delivery-id': 'k-2' } });
    expect(repeatOfFirstHeader.headers['hookrelay-duplicate']).toBe('true');
    const rows = await storedMessages(id);
    expect(rows).toHaveLength(2);
  });

  it('takes a key again once its 24 hours are over: a new message, then duplicates of that one', async () => {
    const { id, token } = await createInbound({ idempotency_header_names: ['Idempotency-Key'] });
    const first = await ingest(token, { body: 'a', headers: { 'idempotency-key': 'k-old' } });
    await t.db.sql`UPDATE inbound_idempotency_keys SET expires_at = now() - interval '1 second' WHERE inbound_endpoint_id = ${id}`;
    const again = await ingest(token, { body: 'a', headers: { 'idempotency-key': 'k-old' } });
    expect(again.statusCode).toBe(200);
    expect(again.headers['hookrelay-duplicate']).toBeUndefined();
    expect(again.json().data.message_id).not.toBe(first.json().data.message_id);
    const third = await ingest(token, { body: 'a', headers: { 'idempotency-key': 'k-old' } });
    expect(third.headers['hookrelay-duplicate']).toBe('true');
    expect(third.json().data.message_id).toBe(again.json().data.message_id);
    expect(await storedMessages(id)).toHaveLength(2);
  });

  it('stores exactly one of 50 concurrent posts with the same key', async () => {
    const { id, token } = await createInbound({ idempotency_header_names: ['Idempotency-Key'] });
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => ingest(token, { body: '{"n":1}', headers: { 'content-type': 'application/json', 'idempotency-key': 'same' } })),
    );
    expect(responses.every((r) => r.statusCode === 200)).toBe(true);
    expect(responses.filter((r) => r.headers['hookrelay-duplicate'] === 'true')).toHaveLength(49);
    expect(new Set(responses.map((r) => r.json().data.message_id)).size).toBe(1);
    expect(await storedMessages(id)).toHaveLength(1);
  });
});

describe('ordering', () => {
  it('gives one endpoint ids that only grow, also for concurrent posts', async () => {
    const { id, token } = await createInbound();
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => ingest(token, { body: String(i) })));
    const ids = responses.map((r) => r.json().data.message_id as string);
    const rows = await storedMessages(id);
    expect(rows).toHaveLength(40);
    expect(new Set(ids)).toEqual(new Set(rows.map((r) => r.id)));
    const [last] = await t.db.sql<{ last_message_id: string }>`SELECT last_message_id FROM inbound_endpoints WHERE id = ${id}`;
    expect(last!.last_message_id).toBe(rows[rows.length - 1]!.id);
  });
});
