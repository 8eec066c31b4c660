import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { Receiver, settled, waitForMessage } from '../helpers/receiver.js';

/**
 * Header injection: a CR, LF or NUL in a header name or value that a caller chooses is
 * refused wherever the API takes headers or header names, nothing is stored, and the delivery
 * sender never puts such a header on the wire — not even one that reached the database around the
 * API. unit/headers.test.ts covers the validation rules one by one; endpoints.test.ts covers CR and
 * LF in values. Custom header problems answer INVALID_HEADERS, as docs/api.md documents.
 */

let receiver: Receiver;
let t: TestApp;
beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '60' },
    worker: { requestTimeoutMs: 2000, pollIntervalMs: 200 },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const INJECTIONS: [string, string][] = [
  ['CRLF and a header', 'v\r\nX-Injected: yes'],
  ['CRLF CRLF and a body', 'v\r\n\r\nGET /admin HTTP/1.1'],
  ['a bare LF', 'v\nX-Injected: yes'],
  ['a bare CR', 'v\rX-Injected: yes'],
  ['NUL', 'v\u0000X-Injected: yes'],
];

async function storedHeaders(id: string): Promise<Record<string, string>> {
  const [row] = await t.db.sql<{ headers: Record<string, string> }>`SELECT headers FROM endpoints WHERE id = ${id}`;
  return row!.headers;
}

describe('outbound endpoint custom headers', () => {
  it.each(INJECTIONS)('a value with %s is refused at create and update, and nothing is stored', async (_label, value) => {
    const before = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM endpoints`)[0]!.n;
    expectError(await t.request('POST', '/v1/endpoints', { body: { url: 'https://example.com/in', headers: { 'X-Custom': value } } }), 400, 'INVALID_HEADERS', 'headers.X-Custom');
    const after = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM endpoints`)[0]!.n;
    expect(after).toBe(before);

    const created = await t.request('POST', '/v1/endpoints', { body: { url: 'https://example.com/in', headers: { 'X-Keep': 'kept' } } });
    expect(created.status, created.raw).toBe(201);
    const id = created.body.data.id as string;
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { headers: { 'X-Custom': value } } }), 400, 'INVALID_HEADERS', 'headers.X-Custom');
    expect(await storedHeaders(id)).toEqual({ 'X-Keep': 'kept' });
  });

  it.each(INJECTIONS)('a name with %s is refused at create and update', async (_label, value) => {
    const name = `X-A${value}`;
    expectError(await t.request('POST', '/v1/endpoints', { body: { url: 'https://example.com/in', headers: { [name]: 'v' } } }), 400, 'INVALID_HEADERS');
    const created = await t.request('POST', '/v1/endpoints', { body: { url: 'https://example.com/in', headers: { 'X-Keep': 'kept' } } });
    const id = created.body.data.id as string;
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { headers: { [name]: 'v' } } }), 400, 'INVALID_HEADERS');
    expect(await storedHeaders(id)).toEqual({ 'X-Keep': 'kept' });
  });
});

describe('inbound endpoint header names', () => {
  const FIELDS: [string, (name: string) => Record<string, unknown>][] = [
    ['hmac_header_name', (name) => ({ verify_hmac: true, hmac_header_name: name, hmac_secret: 's3cret' })],
    ['static_token_header_name', (name) => ({ verify_static_token: true, static_token_header_name: name, static_token: 't0ken' })],
    ['timestamp_header_name', (name) => ({ verify_hmac: true, hmac_header_name: 'X-Sig', hmac_secret: 's3cret', timestamp_header_name: name })],
    ['idempotency_header_names', (name) => ({ idempotency_header_names: ['X-Fine', name] })],
  ];

  it.each(FIELDS)('%s with CR, LF or NUL is refused at create and update, naming the field', async (field, settings) => {
    const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'keep', mode: 'cli' } });
    expect(created.status, created.raw).toBe(201);
    const id = created.body.data.id as string;
    const [before] = await t.db.sql`SELECT * FROM inbound_endpoints WHERE id = ${id}`;
    const count = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_endpoints`)[0]!.n;
    for (const [, value] of INJECTIONS) {
      const name = `X-A${value}`;
      expectError(await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'injected', mode: 'cli', ...settings(name) } }), 400, 'INVALID_REQUEST', `body.${field}`);
      expectError(await t.request('PATCH', `/v1/inbound-endpoints/${id}`, { body: settings(name) }), 400, 'INVALID_REQUEST', `body.${field}`);
    }
    expect((await t.db.sql`SELECT * FROM inbound_endpoints WHERE id = ${id}`)[0]).toEqual(before);
    expect((await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_endpoints`)[0]!.n).toBe(count);
  });
});

describe('the delivery sender', () => {
  it('never sends a stored custom header that carries CR or LF, and still delivers with the others', async () => {
    const route = receiver.route(() => ({ status: 200 }));
    const created = await t.request('POST', '/v1/endpoints', { body: { url: route.url, headers: { 'X-Good': 'fine' } } });
    expect(created.status, created.raw).toBe(201);
    const id = created.body.data.id as string;
    // As if the headers had reached the database around the API (an old row, a manual fix).
    const tampered = { 'X-Good': 'fine', 'X-Evil': 'v\r\nX-Injected: yes', 'X-Lf': 'v\nX-Injected: yes', 'X-Bad\r\nX-Injected': 'yes' };
    await t.db.sql`UPDATE endpoints SET headers = ${tampered} WHERE id = ${id}`;

    const sent = await t.request('POST', '/v1/messages', { body: { endpoint_id: id, payload: { probe: 'headers' } } });
    expect(sent.status, sent.raw).toBe(202);
    const m = await waitForMessage(t, sent.body.data.message_id, settled);
    expect(m.status).toBe('succeeded');
    const [request] = receiver.received(route.path);
    expect(request!.headers['x-good']).toBe('fine');
    const names = request!.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    for (const name of ['x-evil', 'x-lf', 'x-injected']) expect(names).not.toContain(name);
    expect(request!.rawHeaders.join('\n')).not.toMatch(/injected/i);
  });

  it('forwards a message whose stored sender headers carry CR, LF or bytes HTTP refuses: delivered, without those lines (forward mode)', async () => {
    const route = receiver.route(() => ({ status: 200 }));
    const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'forward', url: route.url } });
    expect(created.status, created.raw).toBe(201);
    const accepted = await t.app.inject({ method: 'POST', url: `/in/${created.body.data.secret_token}`, payload: '{}', headers: { 'content-type': 'application/json', 'x-sender': 'ok' } });
    expect(accepted.statusCode, accepted.body).toBe(200);
    const id = accepted.json().data.message_id as string;
    const m = await waitForMessage(t, id, settled, { inbound: true });
    expect(m.status).toBe('succeeded');
    // As if the stored request had been altered around the ingest path, then replayed. Each bad
    // line alone made undici throw ("invalid x-evil header"), failing the delivery on every attempt.
    const tampered = [
      ['content-type', 'application/json'],
      ['x-sender', 'ok'],
      ['x-evil', 'v\r\nX-Injected: yes'],
      ['x-lf', 'v\nX-Injected: yes'],
      ['x-bad\r\nx-injected', 'yes'],
      ['x bad-name', 'v'],
      ['x-wide', 'v\u0100'],
      ['x-sender', 'again'],
    ];
    await t.db.sql`UPDATE inbound_messages SET raw_headers = ${tampered} WHERE id = ${id}`;

    const replay = await t.request('POST', `/v1/inbound-messages/${id}/replay`);
    expect(replay.status, replay.raw).toBe(200);
    const replayed = await waitForMessage(t, id, (r) => r.attempt_count >= 2 && settled(r), { inbound: true });
    expect(replayed).toMatchObject({ status: 'succeeded', attempt_count: 2, response_status: 200, last_error: null });
    const requests = receiver.received(route.path);
    expect(requests).toHaveLength(2);
    const request = requests[1]!;
    expect(request.headers['x-sender']).toBe('ok, again');
    expect(request.headers['content-type']).toBe('application/json');
    const names = request.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    for (const name of ['x-evil', 'x-lf', 'x-injected', 'x-wide']) expect(names).not.toContain(name);
    expect(request.rawHeaders.join('\n')).not.toMatch(/injected|x-evil|bad-name/i);
  });
});
