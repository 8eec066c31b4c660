import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7Time } from '@hookrelay/shared';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPull, ingestEvent, ingestPull } from '../helpers/pull.js';

/** Ingestion at /pull/{id}/{secret_token}, and event type extraction. */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { HOOKRELAY_MAX_INGEST_BODY_BYTES: '65536' } });
});
afterAll(async () => {
  await t?.close();
});

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

interface StoredEvent {
  id: string;
  project_id: string;
  status: string;
  event_type: string | null;
  method: string;
  query: string;
  content_type: string;
  size_bytes: number;
  payload_sha256: string;
  raw_headers: [string, string][];
  payload_key: string;
  ingest_processing_ms: number | null;
  received_at: Date;
}

async function storedEvents(endpointId: string): Promise<StoredEvent[]> {
  return t.db.sql<StoredEvent>`
    SELECT id, project_id, status, event_type, method, query, content_type, size_bytes, payload_sha256, raw_headers,
           payload_key, ingest_processing_ms, received_at
    FROM pull_events WHERE endpoint_id = ${endpointId} ORDER BY id`;
}

async function payloadOf(key: string): Promise<Buffer> {
  const [row] = await t.db.sql<{ data: Uint8Array }>`SELECT data FROM payloads WHERE key = ${key}`;
  return Buffer.from(row!.data);
}

describe('ingestion stores the webhook', () => {
  it('keeps the exact bytes, content type, size, SHA-256, header lines and timing of any content type', async () => {
    const ep = await createPull(t);
    const binary = Buffer.from([0x00, 0xff, 0x10, 0x80, 0x0d, 0x0a, 0x7f]);
    const json = '{ "z": 1,\n\t"a" :[ 2 ,3 ],  "m":{"y":null , "b":"é"} }  ';
    const form = 'b=2&a=1&a=%20space+plus&empty=';
    const answers = [];
    for (const [body, type] of [
      [binary, 'application/octet-stream'],
      [json, 'application/json'],
      [form, 'application/x-www-form-urlencoded'],
    ] as const) {
      const res = await ingestPull(t, ep, { body, headers: { 'content-type': type, 'x-provider': 'acme' } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().meta.request_id).toBe(res.headers['x-request-id']);
      answers.push(res.json().data.event_id);
    }
    const rows = await storedEvents(ep.id);
    expect(rows.map((r) => r.id)).toEqual(answers);
    expect(rows.map((r) => r.payload_sha256)).toEqual([sha256(binary), sha256(json), sha256(form)]);
    expect(rows.map((r) => r.size_bytes)).toEqual([binary.length, Buffer.byteLength(json), form.length]);
    expect(rows.map((r) => r.content_type)).toEqual(['application/octet-stream', 'application/json', 'application/x-www-form-urlencoded']);
    expect(rows.map((r) => r.status)).toEqual(['stored', 'stored', 'stored']);
    expect(rows.every((r) => r.project_id === t.main.projectId)).toBe(true);
    const payloads = await Promise.all(rows.map((r) => payloadOf(r.payload_key)));
    expect(payloads.map((p) => p.toString('base64'))).toEqual([binary, Buffer.from(json), Buffer.from(form)].map((b) => b.toString('base64')));
    for (const row of rows) {
      expect(row.raw_headers).toContainEqual(['x-provider', 'acme']);
      expect(Number.isInteger(row.ingest_processing_ms)).toBe(true);
      expect(row.ingest_processing_ms).toBeGreaterThanOrEqual(0);
      // received_at is the millisecond the event id carries.
      expect(row.received_at.getTime()).toBe(uuidv7Time(row.id));
      expect(Math.abs(row.received_at.getTime() - Date.now())).toBeLessThan(60_000);
    }
  });

  it('records header lines in order with repeats, the method and the query', async () => {
    const ep = await createPull(t);
    const res = await t.app.inject({
      method: 'PUT',
      url: `${ep.path}?x=1&y=%20z`,
      payload: 'x',
      headers: { 'content-type': 'text/plain', 'x-first': 'one', 'x-dup': ['a', 'b'] as unknown as string },
    });
    expect(res.statusCode).toBe(200);
    const [row] = await storedEvents(ep.id);
    expect(row!.method).toBe('PUT');
    expect(row!.query).toBe('x=1&y=%20z');
    const names = row!.raw_headers.map(([name]) => name.toLowerCase());
    expect(names.indexOf('content-type')).toBeLessThan(names.indexOf('x-first'));
    expect(row!.raw_headers.filter(([name]) => name === 'x-dup')).toEqual([
      ['x-dup', 'a'],
      ['x-dup', 'b'],
    ]);
    const detail = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${row!.id}`);
    expect(detail.body.data).toMatchObject({ method: 'PUT', query: 'x=1&y=%20z' });
    expect(detail.body.data.headers['x-dup']).toBe('a, b');
  });

  it('stores POST, PUT, PATCH, DELETE and GET; answers HEAD and OPTIONS with 200 and stores nothing', async () => {
    const ep = await createPull(t);
    for (const method of ['POST', 'PUT', 'PATCH']) expect((await ingestPull(t, ep, { method, body: '{"m":1}' })).statusCode).toBe(200);
    for (const method of ['DELETE', 'GET']) expect((await ingestPull(t, ep, { method })).statusCode).toBe(200);
    expect((await storedEvents(ep.id)).map((r) => r.method)).toEqual(['POST', 'PUT', 'PATCH', 'DELETE', 'GET']);
    expect((await ingestPull(t, ep, { method: 'HEAD' })).statusCode).toBe(200);
    expect((await ingestPull(t, ep, { method: 'OPTIONS' })).statusCode).toBe(200);
    expect(await storedEvents(ep.id)).toHaveLength(5);
    expect((await ingestPull(t, { path: `/pull/${ep.id}/${'0'.repeat(32)}` }, { method: 'HEAD' })).statusCode).toBe(404);
  });

  it('stores an empty body and a body without a content type', async () => {
    const ep = await createPull(t);
    expect((await t.app.inject({ method: 'POST', url: ep.path })).statusCode).toBe(200);
    const [row] = await storedEvents(ep.id);
    expect(row).toMatchObject({ size_bytes: 0, content_type: '', payload_sha256: sha256('') });
  });

  it('refuses bodies over the limit with 413 PAYLOAD_TOO_LARGE and stores nothing', async () => {
    const ep = await createPull(t);
    const res = await ingestPull(t, ep, { body: Buffer.alloc(70_000, 1), headers: { 'content-type': 'application/octet-stream' } });
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await storedEvents(ep.id)).toHaveLength(0);
    expect((await ingestPull(t, ep, { body: Buffer.alloc(65_536, 1), headers: { 'content-type': 'application/octet-stream' } })).statusCode).toBe(200);
  });

  it('stores a burst of concurrent webhooks, each once', async () => {
    const ep = await createPull(t);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => ingestPull(t, ep, { body: JSON.stringify({ i }) })));
    expect(answers.every((a) => a.statusCode === 200)).toBe(true);
    const ids = answers.map((a) => a.json().data.event_id as string);
    expect(new Set(ids).size).toBe(60);
    expect((await storedEvents(ep.id)).map((r) => r.id).sort()).toEqual([...ids].sort());
  });

  it('needs no API key and ignores one', async () => {
    const ep = await createPull(t);
    expect((await ingestPull(t, ep, { headers: { 'content-type': 'application/json', authorization: 'Bearer nonsense' } })).statusCode).toBe(200);
  });
});

describe('the ingestion URL', () => {
  it('answers 404 NOT_FOUND for a wrong token, an unknown endpoint and malformed parts (ROUTE_NOT_FOUND past the token), storing nothing', async () => {
    const ep = await createPull(t);
    const other = await createPull(t);
    const cases = [
      `/pull/${ep.id}/${'0'.repeat(32)}`,
      `/pull/${ep.id}/${other.token}`,
      `/pull/${other.id}/${ep.token}`,
      `/pull/01900000-0000-7000-8000-000000000000/${ep.token}`,
      `/pull/${ep.id}/${ep.token.toUpperCase()}`,
      `/pull/${ep.id}/${ep.token.slice(1)}`,
      `/pull/not-a-uuid/${ep.token}`,
    ];
    for (const path of cases) {
      const res = await ingestPull(t, { path });
      expect(res.statusCode, path).toBe(404);
      expect(res.json().error.code, path).toBe('NOT_FOUND');
    }
    // A pull ingest URL ends at its token: a longer path is no route at all.
    const longer = await ingestPull(t, { path: `/pull/${ep.id}/${ep.token}/extra` });
    expect(longer.statusCode).toBe(404);
    expect(longer.json().error.code).toBe('ROUTE_NOT_FOUND');
    expect(await storedEvents(ep.id)).toHaveLength(0);
    expect(await storedEvents(other.id)).toHaveLength(0);
  });

  it('the record’s ingest_url (no token) answers in the envelope that it needs the token, the same for any id, storing nothing', async () => {
    const ep = await createPull(t);
    const answers = new Set<string>();
    for (const path of [new URL(ep.ingestUrl).pathname, '/pull/01900000-0000-7000-8000-000000000000', '/pull/not-a-uuid']) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'GET', 'OPTIONS', 'TRACE']) {
        const res = await ingestPull(t, { path }, { method, body: method === 'GET' || method === 'OPTIONS' ? undefined : '{"a":1}' });
        expect(res.statusCode, `${method} ${path}`).toBe(404);
        const { error } = res.json();
        expect(error.code).toBe('NOT_FOUND');
        expect(error.message).toContain("needs the pull endpoint's secret token");
        expect(error.message).toContain('full_ingest_url');
        answers.add(error.message);
      }
      const head = await ingestPull(t, { path }, { method: 'HEAD' });
      expect(head.statusCode).toBe(404);
    }
    expect(answers.size).toBe(1);
    // A body larger than any limit is refused the same way, unread.
    const big = await ingestPull(t, { path: new URL(ep.ingestUrl).pathname }, { body: Buffer.alloc(2 * 1024 * 1024, 0x61) });
    expect(big.statusCode).toBe(404);
    expect(big.json().error.message).toContain('secret token');
    expect(await storedEvents(ep.id)).toHaveLength(0);
  });

  it('is the create response’s full_ingest_url', async () => {
    const ep = await createPull(t);
    const url = new URL(ep.fullIngestUrl);
    expect(url.pathname).toBe(ep.path);
    expect(ep.ingestUrl).toBe(ep.fullIngestUrl.slice(0, -(ep.token.length + 1)));
  });
});

describe('event type extraction', () => {
  async function typeOf(endpoint: { path: string; id: string }, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) {
    const eventId = await ingestEvent(t, endpoint, { body, headers });
    const [row] = await t.db.sql<{ event_type: string | null }>`SELECT event_type FROM pull_events WHERE id = ${eventId}`;
    return row!.event_type;
  }

  it('reads a dot path of the JSON body', async () => {
    const ep = await createPull(t, { event_type_source: 'body', event_type_path: 'data.object.type' });
    expect(await typeOf(ep, '{"data":{"object":{"type":"invoice.paid"}}}')).toBe('invoice.paid');
    expect(await typeOf(ep, '{"data":{"object":{"type":42}}}')).toBe('42');
    expect(await typeOf(ep, '{"data":{"object":{"type":true}}}')).toBe('true');
    // JSON whatever the declared type.
    expect(await typeOf(ep, '{"data":{"object":{"type":"x"}}}', { 'content-type': 'text/plain' })).toBe('x');
    const top = await createPull(t, { event_type_source: 'body', event_type_path: 'type' });
    expect(await typeOf(top, '{"type":"push","data":{}}')).toBe('push');
    const indexed = await createPull(t, { event_type_source: 'body', event_type_path: 'events.0.name' });
    expect(await typeOf(indexed, '{"events":[{"name":"first"},{"name":"second"}]}')).toBe('first');
  });

  it('stores the event with a null type when extraction fails, never refusing the webhook', async () => {
    const ep = await createPull(t, { event_type_source: 'body', event_type_path: 'data.type' });
    for (const body of [
      '{"data":{}}',
      '{"other":1}',
      '{"data":"flat"}',
      '{"data":{"type":null}}',
      '{"data":{"type":{"nested":1}}}',
      '{"data":{"type":["a"]}}',
      '{"data":{"type":""}}',
      `{"data":{"type":"${'x'.repeat(256)}"}}`,
      '{"data":{"type":"unterminated',
      'not json at all',
      '[1,2,3]',
      '"just a string"',
      '',
      '{"data":{"constructor":1}}',
    ]) {
      expect(await typeOf(ep, body), body).toBeNull();
    }
    expect(await typeOf(ep, `{"data":{"type":"${'x'.repeat(255)}"}}`)).toBe('x'.repeat(255));
    const proto = await createPull(t, { event_type_source: 'body', event_type_path: 'toString' });
    expect(await typeOf(proto, '{}')).toBeNull();
  });

  it('reads a header, case-insensitively, first line when repeated', async () => {
    const ep = await createPull(t, { event_type_source: 'header', event_type_path: 'X-GitHub-Event' });
    expect(await typeOf(ep, '{}', { 'content-type': 'application/json', 'x-github-event': 'pull_request' })).toBe('pull_request');
    expect(await typeOf(ep, '{}', { 'content-type': 'application/json' })).toBeNull();
    expect(await typeOf(ep, '{}', { 'content-type': 'application/json', 'x-github-event': '' })).toBeNull();
    const res = await t.app.inject({ method: 'POST', url: ep.path, payload: '{}', headers: { 'x-github-event': ['one', 'two'] as unknown as string } });
    const [row] = await t.db.sql<{ event_type: string | null }>`SELECT event_type FROM pull_events WHERE id = ${res.json().data.event_id}`;
    expect(row!.event_type).toBe('one');
  });

  it('stores no type without extraction, applies a PATCHed configuration to later webhooks, and "" clears it', async () => {
    const ep = await createPull(t);
    expect(await typeOf(ep, '{"type":"a"}')).toBeNull();
    await t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body: { event_type_source: 'body', event_type_path: 'type' } });
    expect(await typeOf(ep, '{"type":"a"}')).toBe('a');
    await t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body: { event_type_source: 'header', event_type_path: 'x-type' } });
    expect(await typeOf(ep, '{"type":"a"}', { 'content-type': 'application/json', 'x-type': 'from-header' })).toBe('from-header');
    await t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body: { event_type_source: '' } });
    expect(await typeOf(ep, '{"type":"a"}', { 'content-type': 'application/json', 'x-type': 'from-header' })).toBeNull();
    // Earlier events keep the type they were stored with; all remain retrievable.
    const list = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events`);
    expect(list.body.data.map((e: { event_type: string | null }) => e.event_type)).toEqual([null, 'a', 'from-header', null]);
  });
});
