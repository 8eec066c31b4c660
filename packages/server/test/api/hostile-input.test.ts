import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createPull, ingestEvent, type TestPullEndpoint } from '../helpers/pull.js';

/**
 * Regression tests for what the route fuzzer (fuzz.test.ts) found: each of these answered 5xx, or
 * an error outside the envelope, before its fix.
 */

let t: TestApp;
let cli: { id: string; token: string };
let pull: TestPullEndpoint;
beforeAll(async () => {
  t = await createTestApp();
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'hostile', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  cli = { id: res.body.data.id, token: res.body.data.secret_token };
  pull = await createPull(t, { event_type_source: 'body', event_type_path: 'type' });
});
afterAll(async () => {
  await t?.close();
});

async function ingestInbound(body: string): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${cli.token}`, payload: body, headers: { 'content-type': 'application/json' } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id;
}

describe('paths the router refuses before any route', () => {
  it.each([
    ['invalid percent-encoding in an id', '/v1/endpoints/%ZZ'],
    ['a truncated UTF-8 sequence', '/v1/inbound-endpoints/%E0%A4%A/listen'],
    ['a path parameter over 256 characters', `/v1/messages/${'a'.repeat(257)}`],
    ['an ingest token over 256 characters', `/in/${'f'.repeat(257)}`],
    ['invalid percent-encoding in an ingest token', '/in/%C0%AE'],
  ])('%s → 400 INVALID_REQUEST in the envelope', async (_label, url) => {
    const res = await t.request('GET', url);
    expectError(res, 400, 'INVALID_REQUEST');
    expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
    expect(res.raw).not.toContain('FST_ERR');
  });
});

describe('NUL characters, which PostgreSQL text cannot store', () => {
  const N = 'a\u0000b';
  it.each([
    ['POST', '/v1/endpoints', { url: `https://example.com/${N}` }, 'body.url'],
    ['POST', '/v1/endpoints', { url: 'https://example.com/x', description: N }, 'body.description'],
    ['POST', '/v1/inbound-endpoints', { name: N }, 'body.name'],
    ['POST', '/v1/inbound-endpoints', { name: 'x', description: N }, 'body.description'],
    ['POST', '/v1/inbound-endpoints', { name: 'x', url: `https://example.com/${N}` }, 'body.url'],
    ['POST', '/v1/inbound-endpoints', { name: 'x', verify_hmac: true, hmac_header_name: 'X-Sig', hmac_secret: N }, 'body.hmac_secret'],
    ['POST', '/v1/inbound-endpoints', { name: 'x', verify_static_token: true, static_token_header_name: 'X-Tok', static_token: N }, 'body.static_token'],
    ['POST', '/v1/pull-endpoints', { name: N }, 'body.name'],
    ['POST', '/v1/pull-endpoints', { name: 'x', event_type_source: 'body', event_type_path: N }, 'body.event_type_path'],
  ])('%s %s with %j → 400 naming %s, nothing stored', async (method, url, body, field) => {
    const count = async () => (await t.db.sql<{ n: number }>`SELECT (SELECT count(*) FROM endpoints) + (SELECT count(*) FROM inbound_endpoints) + (SELECT count(*) FROM pull_endpoints) AS n`)[0]!.n;
    const before = await count();
    expectError(await t.request(method, url, { body }), 400, 'INVALID_REQUEST', `${field}: must not contain NUL`);
    expect(await count()).toBe(before);
  });

  it('PATCH of every kind of endpoint → 400 naming the field, the row unchanged', async () => {
    const endpoint = await t.request('POST', '/v1/endpoints', { body: { url: 'https://example.com/patch' } });
    for (const [url, body, field] of [
      [`/v1/endpoints/${endpoint.body.data.id}`, { description: N }, 'body.description'],
      [`/v1/inbound-endpoints/${cli.id}`, { name: N }, 'body.name'],
      [`/v1/pull-endpoints/${pull.id}`, { description: N }, 'body.description'],
    ] as const) {
      const before = (await t.request('GET', url)).body.data;
      expectError(await t.request('PATCH', url, { body }), 400, 'INVALID_REQUEST', field);
      expect((await t.request('GET', url)).body.data).toEqual(before);
    }
  });

  it('event filters of the pull event list and delete-all → 400, no event deleted', async () => {
    const eventId = await ingestEvent(t, pull, { body: '{"type":"kept"}' });
    expectError(await t.request('GET', `/v1/pull-endpoints/${pull.id}/events?event_type=%00`), 400, 'INVALID_REQUEST', 'query.event_type');
    expectError(await t.request('POST', `/v1/pull-endpoints/${pull.id}/events/delete-all?event_type=a%00`), 400, 'INVALID_REQUEST', 'query.event_type');
    expectError(await t.request('POST', `/v1/pull-endpoints/${pull.id}/events/delete-all`, { body: { event_type: N } }), 400, 'INVALID_REQUEST', 'body.event_type');
    const [row] = await t.db.sql<{ deleted_at: Date | null }>`SELECT deleted_at FROM pull_events WHERE id = ${eventId}`;
    expect(row!.deleted_at).toBeNull();
  });
});

describe('timestamps outside what PostgreSQL can parse', () => {
  const filters = (value: string) => {
    const q = encodeURIComponent(value);
    return [
      `/v1/logs?start_time=${q}`,
      `/v1/logs?end_time=${q}`,
      `/v1/inbound-logs?received_after=${q}`,
      `/v1/inbound-logs?received_before=${q}`,
      `/v1/pull-endpoints/${pull.id}/events?received_after=${q}`,
      `/v1/pull-endpoints/${pull.id}/events?received_before=${q}`,
    ];
  };

  it.each([
    ['year 0000', '0000-01-01T00:00:00Z'],
    ['AD 1 moved into 1 BC by its offset', '0001-01-01T00:00:00+01:00'],
    ['year 9999 moved into 10000 by its offset', '9999-12-31T23:59:59-01:00'],
    ['an offset of 16 hours', '2024-01-01T00:00:00+16:00'],
    ['an offset of -23:59', '1970-01-01T00:00:00-23:59'],
  ])('%s → 400 INVALID_REQUEST on every filter', async (_label, value) => {
    for (const url of filters(value)) expectError(await t.request('GET', url), 400, 'INVALID_REQUEST', 'must');
    expectError(await t.request('POST', `/v1/pull-endpoints/${pull.id}/events/delete-all`, { body: { received_before: value } }), 400, 'INVALID_REQUEST', 'body.received_before');
  });

  it.each(['0001-01-01T00:00:00Z', '0001-01-01T00:00:00-01:00', '9999-12-31T23:59:59.999Z', '2024-06-01T12:00:00+15:59', '2024-06-01T12:00:00.123456789-15:59'])(
    'the extremes that are timestamps (%s) still filter → 200',
    async (value) => {
      for (const url of filters(value)) {
        const res = await t.request('GET', url);
        expect(res.status, `${url}: ${res.raw}`).toBe(200);
      }
    },
  );
});

describe("a CLI's result report", () => {
  it('with a latency beyond the integer column → 400 naming it, the message untouched (it was a 500)', async () => {
    const id = await ingestInbound('{"n":1}');
    const res = await t.request('POST', `/v1/inbound-messages/${id}/result`, { body: { message_id: id, status: 200, latency_ms: 2 ** 31, error: null } });
    expectError(res, 400, 'INVALID_REQUEST', 'body.latency_ms');
    const [row] = await t.db.sql<{ status: string; attempt_count: number }>`SELECT status, attempt_count FROM inbound_messages WHERE id = ${id}`;
    expect(row).toEqual({ status: 'queued', attempt_count: 0 });
  });

  it('with a NUL in its error is kept, the NUL replaced, and the largest latency stored (it was a 500)', async () => {
    const id = await ingestInbound('{"n":2}');
    const res = await t.request('POST', `/v1/inbound-messages/${id}/result`, { body: { message_id: id, status: 500, latency_ms: 2 ** 31 - 1, error: 'app said a\u0000b' } });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'failed_permanent', response_status: 500, response_latency_ms: 2 ** 31 - 1, last_error: 'app said a\ufffdb' });
    const [attempt] = await t.db.sql<{ latency_ms: number; error: string }>`SELECT latency_ms, error FROM delivery_attempts WHERE message_id = ${id}`;
    expect(attempt).toEqual({ latency_ms: 2 ** 31 - 1, error: 'app said a\ufffdb' });
  });
});

describe('the WebSocket stream URL without an upgrade', () => {
  it('answers 400 INVALID_REQUEST in the envelope (it was a bare 404)', async () => {
    expectError(await t.request('GET', `/v1/inbound-endpoints/${cli.id}/stream`), 400, 'INVALID_REQUEST', 'WebSocket');
    expectError(await t.request('GET', '/v1/inbound-endpoints/01900000-0000-7000-8000-000000000000/stream'), 404, 'ENDPOINT_NOT_FOUND');
  });
});

describe('a sender posting JSON nested too deep to embed', () => {
  const deep = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;

  it('is served as base64 on every read of an inbound message (the page with it was a 500 for good)', async () => {
    const id = await ingestInbound(deep);
    const message = await t.request('GET', `/v1/inbound-messages/${id}`);
    expect(message.status, message.raw.slice(0, 300)).toBe(200);
    expect(message.body.data).toMatchObject({ body_encoding: 'base64' });
    expect(Buffer.from(message.body.data.body, 'base64').toString()).toBe(deep);
    const page = await t.request('GET', `/v1/inbound-endpoints/${cli.id}/listen?after=${'0'.repeat(8)}-0000-7000-8000-000000000000`);
    expect(page.status, page.raw.slice(0, 300)).toBe(200);
    const listed = page.body.data.find((m: { message_id: string }) => m.message_id === id);
    expect(listed).toMatchObject({ body_encoding: 'base64' });
  });

  it('is served as base64 by the pull event fetch, and shallow JSON is still embedded', async () => {
    const deepId = await ingestEvent(t, pull, { body: deep });
    const event = await t.request('GET', `/v1/pull-endpoints/${pull.id}/events/${deepId}`);
    expect(event.status, event.raw.slice(0, 300)).toBe(200);
    expect(event.body.data.body_encoding).toBe('base64');
    expect(Buffer.from(event.body.data.body, 'base64').toString()).toBe(deep);
    const shallow = `${'['.repeat(100)}${']'.repeat(100)}`;
    const shallowId = await ingestEvent(t, pull, { body: shallow });
    const embedded = await t.request('GET', `/v1/pull-endpoints/${pull.id}/events/${shallowId}`);
    expect(embedded.body.data.body_encoding).toBeUndefined();
    expect(JSON.stringify(embedded.body.data.body)).toBe(shallow);
  });
});

describe('a message submission', () => {
  let endpointId: string;
  beforeAll(async () => {
    const res = await t.request('POST', '/v1/endpoints', { body: { url: 'https://example.com/hostile-messages' } });
    expect(res.status, res.raw).toBe(201);
    endpointId = res.body.data.id;
  });
  const messageCount = async () => (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM outbound_messages WHERE endpoint_id = ${endpointId}`)[0]!.n;

  it.each([
    ['event_type', { event_type: 'user\u0000created' }],
    ['idempotency_key', { idempotency_key: 'k\u0000' }],
  ])('with a NUL in %s → 400 naming it, nothing stored (it was a 500)', async (field, fields) => {
    const before = await messageCount();
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { n: 1 }, ...fields } });
    expectError(res, 400, 'INVALID_REQUEST', `body.${field}: must not contain NUL`);
    expect(await messageCount()).toBe(before);
  });

  it('with a NUL in the Idempotency-Key header → 400 naming it, nothing stored', async () => {
    const before = await messageCount();
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { n: 1 } }, headers: { 'idempotency-key': 'k\u0000' } });
    expectError(res, 400, 'INVALID_REQUEST', 'must not contain NUL');
    expect(await messageCount()).toBe(before);
  });

  it('with a NUL inside the payload or the text body → 202, stored as bytes and read back as sent', async () => {
    const json = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { 'k\u0000': 'a\u0000b', list: ['\u0000'] } } });
    expect(json.status, json.raw).toBe(202);
    const text = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, body: 'a\u0000b' } });
    expect(text.status, text.raw).toBe(202);
    const stored = async (id: string) =>
      Buffer.from((await t.db.sql<{ data: Uint8Array }>`SELECT p.data FROM payloads p JOIN outbound_messages m ON m.payload_key = p.key WHERE m.id = ${id}`)[0]!.data);
    expect((await stored(json.body.data.message_id)).toString()).toBe('{"k\\u0000":"a\\u0000b","list":["\\u0000"]}');
    expect(await stored(text.body.data.message_id)).toEqual(Buffer.from([0x61, 0x00, 0x62]));
    expect((await t.request('GET', `/v1/messages/${json.body.data.message_id}`)).body.data.payload).toEqual({ 'k\u0000': 'a\u0000b', list: ['\u0000'] });
    expect((await t.request('GET', `/v1/messages/${text.body.data.message_id}`)).body.data.body).toBe('a\u0000b');
  });

  const nested = (depth: number, arrays: boolean) => (arrays ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);
  const submitRaw = (payloadJson: string) =>
    t.request('POST', '/v1/messages', { rawBody: `{"endpoint_id":"${endpointId}","payload":${payloadJson}}`, headers: { 'content-type': 'application/json' } });

  it.each([
    ['513 levels of arrays', 513, true],
    ['513 levels of objects', 513, false],
    ['5,000 levels (past what JSON.stringify survives)', 5_000, false],
    ['100,000 levels', 100_000, true],
  ])('with a payload nested %s → 400 naming payload and the limit, nothing stored (it was a 500)', async (_label, depth, arrays) => {
    const before = await messageCount();
    expectError(await submitRaw(nested(depth, arrays)), 400, 'INVALID_REQUEST', 'body.payload: must not nest arrays and objects more than 512 levels deep');
    expect(await messageCount()).toBe(before);
  });

  it('with a payload nested 512 levels → 202, and read back whole', async () => {
    const res = await submitRaw(nested(512, false));
    expect(res.status, res.raw.slice(0, 300)).toBe(202);
    const message = await t.request('GET', `/v1/messages/${res.body.data.message_id}`);
    expect(message.status, message.raw.slice(0, 300)).toBe(200);
    expect(JSON.stringify(message.body.data.payload)).toBe(nested(512, false));
  });

  it('whose whole body nests 100,000 levels → 400 from the body parser and schema, not a 500', async () => {
    for (const arrays of [true, false]) {
      const res = await t.request('POST', '/v1/messages', { rawBody: nested(100_000, arrays), headers: { 'content-type': 'application/json' } });
      expectError(res, 400, 'INVALID_REQUEST');
    }
  });
});
