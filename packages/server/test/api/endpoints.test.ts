import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expiredEndpointsSweeper, runSweeperOnce } from '../../src/sweepers/runner.js';
import type { Resolver } from '../../src/security/ssrf.js';
import { createTestApp, expectError, type TestApp, type TestResponse } from '../helpers/app.js';

/**
 * Outbound endpoints (docs/api.md, Outbound endpoints): every rule has a test here that fails when
 * the rule is broken.
 */

const resolveHost: Resolver = async (hostname) => {
  if (hostname === 'internal.example') return ['10.0.0.5'];
  if (hostname === 'mixed.example') return ['93.184.216.34', '127.0.0.1'];
  if (hostname === 'nxdomain.example') throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return ['93.184.216.34'];
};

const URL_OK = 'https://example.com/hooks';
const MINUTE = 60_000;
/** Who an endpoint belongs to and what it receives: on create, GET and PATCH, not in the list. */
const SUBSCRIPTION_KEYS = ['owner_id', 'event_types', 'channels'];
const CREATE_KEYS = ['id', 'url', 'description', 'signing_key_id', 'signing_secret', 'key_hint', 'ephemeral', 'expires_at', ...SUBSCRIPTION_KEYS, 'created_at'];
const FULL_KEYS = ['id', 'url', 'description', 'rate_limit_rps', 'burst', 'headers', 'paused', 'paused_reason', 'paused_at', 'ephemeral', ...SUBSCRIPTION_KEYS, 'retention_days', 'created_at', 'updated_at'];
const SUMMARY_KEYS = ['id', 'url', 'description', 'paused', 'ephemeral', 'expires_at', 'created_at'];

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ resolveHost });
});
afterAll(async () => {
  await t?.close();
});

const sorted = (keys: string[]) => [...keys].sort();

async function create(body: Record<string, unknown>, apiKey?: string): Promise<TestResponse> {
  return t.request('POST', '/v1/endpoints', { body, ...(apiKey ? { apiKey } : {}) });
}

/** Creates an endpoint and returns its create response data (asserting 201). */
async function createOk(body: Record<string, unknown> = {}, apiKey?: string): Promise<Record<string, any>> {
  const res = await create({ url: URL_OK, ...body }, apiKey);
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}

async function get(id: string): Promise<TestResponse> {
  return t.request('GET', `/v1/endpoints/${id}`);
}

async function getOk(id: string): Promise<Record<string, any>> {
  const res = await get(id);
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}

/** Every summary of the main project (all pages). */
async function listAll(apiKey?: string): Promise<Record<string, any>[]> {
  const all: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor ? `?limit=200&cursor=${encodeURIComponent(cursor)}` : '?limit=200';
    const res = await t.request('GET', `/v1/endpoints${query}`, apiKey ? { apiKey } : {});
    expect(res.status, res.raw).toBe(200);
    all.push(...res.body.data);
    cursor = res.body.meta.next_cursor;
  } while (cursor);
  return all;
}

async function endpointRow(id: string): Promise<Record<string, any> | undefined> {
  const [row] = await t.db.sql`SELECT id, url, deleted_at, expires_at, ephemeral FROM endpoints WHERE id = ${id}`;
  return row;
}

async function countEndpointRows(): Promise<number> {
  const [row] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM endpoints`;
  return row!.n;
}

const ms = (iso: string) => new Date(iso).getTime();
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

describe('POST /v1/endpoints: create', () => {
  it('answers 201 with exactly the create fields, ids and secret in their formats', async () => {
    const res = await create({ url: URL_OK, description: 'orders', rate_limit_rps: 5, burst: 10, headers: { 'X-Team': 'a' } });
    expect(res.status, res.raw).toBe(201);
    const data = res.body.data;
    expect(sorted(Object.keys(data))).toEqual(sorted(CREATE_KEYS));
    expect(data).not.toHaveProperty('rate_limit_rps');
    expect(data).not.toHaveProperty('burst');
    expect(data).not.toHaveProperty('headers');
    expect(data.id).toMatch(/^ep_[a-f0-9]{32}$/);
    expect(data.url).toBe(URL_OK);
    expect(data.description).toBe('orders');
    expect(data.signing_key_id).toMatch(/^sk_[a-f0-9]+$/);
    expect(data.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(data.signing_secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(data.key_hint).toBe(data.signing_secret.slice(-4));
    expect(data.key_hint).toHaveLength(4);
    expect(data.ephemeral).toBe(false);
    expect(data.expires_at).toBeNull();
    expect(Math.abs(ms(data.created_at) - Date.now())).toBeLessThan(MINUTE);
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  it('gives every endpoint its own id and signing secret', async () => {
    const a = await createOk();
    const b = await createOk();
    expect(a.id).not.toBe(b.id);
    expect(a.signing_key_id).not.toBe(b.signing_key_id);
    expect(a.signing_secret).not.toBe(b.signing_secret);
  });

  it('stores the signing secret encrypted at rest, never in plain text', async () => {
    const data = await createOk();
    const rows = await t.db.sql<{ id: string; secret_encrypted: string; key_hint: string; expires_at: Date | null }>`
      SELECT id, secret_encrypted, key_hint, expires_at FROM signing_keys WHERE owner_id = ${data.id}`;
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.id).toBe(data.signing_key_id);
    expect(row.key_hint).toBe(data.key_hint);
    expect(row.expires_at).toBeNull();
    const base64Part = (data.signing_secret as string).slice('whsec_'.length);
    expect(row.secret_encrypted).not.toContain(data.signing_secret);
    expect(row.secret_encrypted).not.toContain(base64Part);
    expect(row.secret_encrypted).not.toContain(Buffer.from(base64Part, 'base64').toString('hex'));
    expect(t.secretBox.decrypt(row.secret_encrypted)).toBe(data.signing_secret);
    // Nowhere else in the database row of the endpoint either.
    const [endpoint] = await t.db.sql<{ j: string }>`SELECT row_to_json(e)::text AS j FROM endpoints e WHERE id = ${data.id}`;
    expect(endpoint!.j).not.toContain(base64Part);
  });

  it('defaults description to an empty string, rate limits to 0 and headers to {}', async () => {
    const created = await createOk();
    expect(created.description).toBe('');
    const full = await getOk(created.id);
    expect(full.rate_limit_rps).toBe(0);
    expect(full.burst).toBe(0);
    expect(full.headers).toEqual({});
    expect(full.paused).toBe(false);
  });

  it('refuses a body without url, naming the field', async () => {
    expectError(await create({ description: 'no url' }), 400, 'INVALID_REQUEST', 'url');
  });

  it('refuses unknown fields', async () => {
    expectError(await create({ url: URL_OK, colour: 'red' }), 400, 'INVALID_REQUEST', 'colour');
    expectError(await create({ url: URL_OK, paused: true }), 400, 'INVALID_REQUEST', 'paused');
  });
});

describe('GET /v1/endpoints/{id}: full record', () => {
  it('has every field, never the signing secret, and no expires_at when not ephemeral', async () => {
    const created = await createOk({ description: 'full', rate_limit_rps: 7, burst: 9, headers: { 'X-One': '1' } });
    const res = await get(created.id);
    expect(res.status, res.raw).toBe(200);
    const data = res.body.data;
    expect(sorted(Object.keys(data))).toEqual(sorted(FULL_KEYS));
    expect(data).toEqual({
      id: created.id,
      url: URL_OK,
      description: 'full',
      rate_limit_rps: 7,
      burst: 9,
      headers: { 'X-One': '1' },
      paused: false,
      paused_reason: null,
      paused_at: null,
      ephemeral: false,
      owner_id: null,
      event_types: null,
      channels: null,
      retention_days: null,
      created_at: created.created_at,
      updated_at: expect.any(String),
    });
    expect(data).not.toHaveProperty('expires_at');
    expect(data).not.toHaveProperty('signing_secret');
    expect(res.raw).not.toContain(created.signing_secret);
    expect(res.raw).not.toContain((created.signing_secret as string).slice('whsec_'.length));
    expect(Number.isNaN(ms(data.updated_at))).toBe(false);
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  it('includes expires_at for an ephemeral endpoint', async () => {
    const created = await createOk({ ephemeral: true });
    const data = await getOk(created.id);
    expect(sorted(Object.keys(data))).toEqual(sorted([...FULL_KEYS, 'expires_at']));
    expect(data.ephemeral).toBe(true);
    expect(data.expires_at).toBe(created.expires_at);
  });

  it('answers 404 ENDPOINT_NOT_FOUND for an unknown id and 400 for a malformed one', async () => {
    expectError(await get(`ep_${'0'.repeat(32)}`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await get('ep_123'), 400, 'INVALID_REQUEST', 'id');
    expectError(await get(`ep_${'A'.repeat(32)}`), 400, 'INVALID_REQUEST');
    expectError(await get('not-an-id'), 400, 'INVALID_REQUEST');
  });
});

describe('GET /v1/endpoints: list summary', () => {
  it('has only id, url, description, paused, ephemeral, expires_at and created_at', async () => {
    const plain = await createOk({ description: 'listed', rate_limit_rps: 3, burst: 4, headers: { 'X-Two': '2' } });
    const ephemeral = await createOk({ ephemeral: true, ttl_minutes: 60 });
    const res = await t.request('GET', '/v1/endpoints?limit=200');
    expect(res.status, res.raw).toBe(200);
    expect(sorted(Object.keys(res.body.meta))).toEqual(['next_cursor', 'request_id']);
    const summaries = res.body.data as Record<string, any>[];
    expect(summaries.length).toBeGreaterThan(0);
    for (const summary of summaries) expect(sorted(Object.keys(summary))).toEqual(sorted(SUMMARY_KEYS));
    const p = summaries.find((s) => s.id === plain.id);
    expect(p).toEqual({
      id: plain.id,
      url: URL_OK,
      description: 'listed',
      paused: false,
      ephemeral: false,
      expires_at: null,
      created_at: plain.created_at,
    });
    const e = summaries.find((s) => s.id === ephemeral.id);
    expect(e?.ephemeral).toBe(true);
    expect(e?.expires_at).toBe(ephemeral.expires_at);
    expect(res.raw).not.toContain(plain.signing_secret);
  });
});

describe('url rules', () => {
  it.each([
    ['http://example.com/hooks'],
    ['ftp://example.com/hooks'],
    ['not-a-url'],
    ['https://'],
    ['https:/example.com/x'],
    ['HTTP://EXAMPLE.COM/hooks'],
  ])('refuses %s with INVALID_REQUEST naming url', async (url) => {
    expectError(await create({ url }), 400, 'INVALID_REQUEST', 'url');
  });

  it('refuses a url that is not a string, naming the field', async () => {
    expectError(await create({ url: 42 }), 400, 'INVALID_REQUEST', 'body.url');
  });

  it('accepts 12 to 2048 characters and refuses 11 and 2049', async () => {
    const eleven = 'https://a.b';
    expect(eleven).toHaveLength(11);
    expectError(await create({ url: eleven }), 400, 'INVALID_REQUEST', 'url');

    const twelve = 'https://a.bc';
    expect(twelve).toHaveLength(12);
    expect((await create({ url: twelve })).status).toBe(201);

    const prefix = 'https://example.com/';
    const max = prefix + 'a'.repeat(2048 - prefix.length);
    expect(max).toHaveLength(2048);
    const created = await create({ url: max });
    expect(created.status, created.raw).toBe(201);
    expect(created.body.data.url).toBe(max);
    expect((await getOk(created.body.data.id)).url).toBe(max);

    const tooLong = max + 'a';
    expect(tooLong).toHaveLength(2049);
    expectError(await create({ url: tooLong }), 400, 'INVALID_REQUEST', 'url');
  });

  it('applies the same url rules on PATCH', async () => {
    const { id } = await createOk();
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { url: 'http://example.com/hooks' } }), 400, 'INVALID_REQUEST', 'url');
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { url: 'https://a.b' } }), 400, 'INVALID_REQUEST', 'url');
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { url: `https://example.com/${'a'.repeat(2029)}` } }), 400, 'INVALID_REQUEST', 'url');
    expect((await getOk(id)).url).toBe(URL_OK);
  });
});

describe('SSRF refusal of private, loopback and reserved destinations', () => {
  const blocked = [
    'https://127.0.0.1/x',
    'https://10.0.0.1/x',
    'https://192.168.1.1/x',
    'https://172.16.0.1/x',
    'https://169.254.169.254/latest/meta-data',
    'https://[::1]/x',
    'https://[::ffff:127.0.0.1]/x',
    'https://[fd00::1]/x',
    'https://100.64.0.1/x',
    'https://0.0.0.0/x',
    'https://localhost/x',
    'https://localhost:8443/x',
    'https://internal.example/x',
    'https://mixed.example/x',
  ];

  it.each(blocked)('refuses %s at create, and stores nothing', async (url) => {
    const before = await countEndpointRows();
    expectError(await create({ url }), 400, 'INVALID_REQUEST', 'url');
    expect(await countEndpointRows()).toBe(before);
  });

  it.each(blocked)('refuses %s at update, keeping the stored url', async (url) => {
    const { id } = await createOk();
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { url } }), 400, 'INVALID_REQUEST', 'url');
    expect((await getOk(id)).url).toBe(URL_OK);
  });

  it('accepts a public literal address and a hostname that resolves to a public address', async () => {
    expect((await create({ url: 'https://93.184.216.34/x' })).status).toBe(201);
    expect((await create({ url: 'https://hooks.example.org/x' })).status).toBe(201);
  });

  it('accepts a hostname that does not resolve (the connect-time check decides)', async () => {
    const res = await create({ url: 'https://nxdomain.example/x' });
    expect(res.status, res.raw).toBe(201);
    const { id } = await createOk();
    const patched = await t.request('PATCH', `/v1/endpoints/${id}`, { body: { url: 'https://nxdomain.example/y' } });
    expect(patched.status, patched.raw).toBe(200);
    expect(patched.body.data.url).toBe('https://nxdomain.example/y');
  });

  describe('with HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true', () => {
    let open: TestApp;
    beforeAll(async () => {
      open = await createTestApp({ env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true' }, resolveHost, db: t.db });
    });
    afterAll(async () => {
      await open?.close();
    });

    it('accepts private destinations at create and update', async () => {
      const res = await open.request('POST', '/v1/endpoints', { body: { url: 'https://127.0.0.1/x' } });
      expect(res.status, res.raw).toBe(201);
      const patched = await open.request('PATCH', `/v1/endpoints/${res.body.data.id}`, { body: { url: 'https://internal.example/y' } });
      expect(patched.status, patched.raw).toBe(200);
      expect(patched.body.data.url).toBe('https://internal.example/y');
    });

    it('still requires https', async () => {
      expectError(await open.request('POST', '/v1/endpoints', { body: { url: 'http://127.0.0.1/x' } }), 400, 'INVALID_REQUEST', 'url');
    });
  });
});

describe('description, rate_limit_rps and burst limits', () => {
  it('accepts a 500-character description and refuses 501', async () => {
    const ok = await createOk({ description: 'd'.repeat(500) });
    expect(ok.description).toBe('d'.repeat(500));
    expectError(await create({ url: URL_OK, description: 'd'.repeat(501) }), 400, 'INVALID_REQUEST', 'description');
    expectError(await t.request('PATCH', `/v1/endpoints/${ok.id}`, { body: { description: 'd'.repeat(501) } }), 400, 'INVALID_REQUEST', 'description');
  });

  it.each([0, 1000])('accepts rate_limit_rps %s', async (value) => {
    const { id } = await createOk({ rate_limit_rps: value });
    expect((await getOk(id)).rate_limit_rps).toBe(value);
  });

  it.each([-1, 1001, 1.5, '5', null, true])('refuses rate_limit_rps %j', async (value) => {
    expectError(await create({ url: URL_OK, rate_limit_rps: value }), 400, 'INVALID_REQUEST', 'rate_limit_rps');
  });

  it.each([0, 10000])('accepts burst %s', async (value) => {
    const { id } = await createOk({ burst: value });
    expect((await getOk(id)).burst).toBe(value);
  });

  it.each([-1, 10001, 2.5, '5'])('refuses burst %j', async (value) => {
    expectError(await create({ url: URL_OK, burst: value }), 400, 'INVALID_REQUEST', 'burst');
  });

  it('applies the limits on PATCH too', async () => {
    const { id } = await createOk({ rate_limit_rps: 10, burst: 20 });
    for (const body of [{ rate_limit_rps: 1001 }, { rate_limit_rps: -1 }, { rate_limit_rps: 1.5 }, { rate_limit_rps: '5' }, { burst: 10001 }, { burst: -1 }]) {
      expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body }), 400, 'INVALID_REQUEST', Object.keys(body)[0]);
    }
    const full = await getOk(id);
    expect(full.rate_limit_rps).toBe(10);
    expect(full.burst).toBe(20);
  });
});

describe('retention_days', () => {
  it('is null (the server default) unless given, set by create and PATCH, cleared by null; the list shows none', async () => {
    const plain = await createOk();
    expect((await getOk(plain.id)).retention_days).toBeNull();
    const kept = await createOk({ retention_days: 7 });
    expect((await getOk(kept.id)).retention_days).toBe(7);
    expect((await getOk((await createOk({ retention_days: null })).id)).retention_days).toBeNull();

    const patched = await t.request('PATCH', `/v1/endpoints/${kept.id}`, { body: { retention_days: 3650 } });
    expect(patched.status, patched.raw).toBe(200);
    expect(patched.body.data.retention_days).toBe(3650);
    // A PATCH without the field keeps it.
    expect((await t.request('PATCH', `/v1/endpoints/${kept.id}`, { body: { description: 'd' } })).body.data.retention_days).toBe(3650);
    const cleared = await t.request('PATCH', `/v1/endpoints/${kept.id}`, { body: { retention_days: null } });
    expect(cleared.body.data.retention_days).toBeNull();
    const [row] = await t.db.sql<{ retention_days: number | null }>`SELECT retention_days FROM endpoints WHERE id = ${kept.id}`;
    expect(row!.retention_days).toBeNull();

    const summary = (await listAll()).find((e) => e.id === kept.id)!;
    expect(sorted(Object.keys(summary))).toEqual(sorted(SUMMARY_KEYS));
  });

  it.each([1, 3650])('accepts %s', async (value) => {
    expect((await getOk((await createOk({ retention_days: value })).id)).retention_days).toBe(value);
  });

  it.each([0, -1, 3651, 1.5, '7', true, {}])('refuses %j on create and PATCH, naming the field', async (value) => {
    const created = await create({ url: URL_OK, retention_days: value });
    expectError(created, 400, 'INVALID_REQUEST', 'retention_days');
    expect(created.body.error.details.map((d: { path: string }) => d.path)).toContain('body.retention_days');
    const { id } = await createOk({ retention_days: 9 });
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { retention_days: value } }), 400, 'INVALID_REQUEST', 'retention_days');
    expect((await getOk(id)).retention_days).toBe(9);
  });
});

describe('custom headers', () => {
  const forbidden = [
    'Host',
    'content-length',
    'Content-Length',
    'Transfer-Encoding',
    'Connection',
    'Keep-Alive',
    'Upgrade',
    'TE',
    'Trailer',
    'Proxy-Authorization',
    'proxy-connection',
    'webhook-id',
    'Webhook-Signature',
    'WEBHOOK-TIMESTAMP',
    'Content-Type',
    'content-type',
    'Hookrelay-Event-Type',
  ];

  it.each(forbidden)('refuses %s at create with INVALID_HEADERS, storing nothing', async (name) => {
    const before = await countEndpointRows();
    const message = expectError(await create({ url: URL_OK, headers: { 'X-Fine': 'ok', [name]: 'value' } }), 400, 'INVALID_HEADERS');
    expect(message).toContain(name);
    expect(await countEndpointRows()).toBe(before);
  });

  it.each(forbidden)('refuses %s at update with INVALID_HEADERS, keeping the stored headers', async (name) => {
    const { id } = await createOk({ headers: { 'X-Keep': 'kept' } });
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { headers: { [name]: 'value' } } }), 400, 'INVALID_HEADERS');
    expect((await getOk(id)).headers).toEqual({ 'X-Keep': 'kept' });
  });

  it.each([
    ['CR LF', 'a\r\nInjected: yes'],
    ['LF', 'a\nb'],
    ['CR', 'a\rb'],
  ])('refuses a header value with %s at create and update', async (_label, value) => {
    expectError(await create({ url: URL_OK, headers: { 'X-Custom': value } }), 400, 'INVALID_HEADERS');
    const { id } = await createOk({ headers: { 'X-Keep': 'kept' } });
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { headers: { 'X-Custom': value } } }), 400, 'INVALID_HEADERS');
    expect((await getOk(id)).headers).toEqual({ 'X-Keep': 'kept' });
  });

  it('refuses header values that are not strings as INVALID_REQUEST naming headers', async () => {
    expectError(await create({ url: URL_OK, headers: { 'X-Num': 5 } }), 400, 'INVALID_REQUEST', 'headers');
    expectError(await create({ url: URL_OK, headers: ['X-A: b'] }), 400, 'INVALID_REQUEST', 'headers');
  });

  it('stores allowed custom headers and returns them on GET, as given', async () => {
    const headers = { 'X-Api-Token': 'abc123', Authorization: 'Bearer downstream', 'X-Empty': '', 'User-Agent': 'my-relay/1.0' };
    const created = await createOk({ headers });
    expect((await getOk(created.id)).headers).toEqual(headers);
    const [row] = await t.db.sql<{ headers: Record<string, string> }>`SELECT headers FROM endpoints WHERE id = ${created.id}`;
    expect(row!.headers).toEqual(headers);
  });
});

describe('ephemeral endpoints and ttl_minutes', () => {
  it('defaults the TTL to 30 minutes after created_at', async () => {
    const created = await createOk({ ephemeral: true });
    expect(created.ephemeral).toBe(true);
    expect(created.expires_at).toEqual(expect.any(String));
    expect(Math.abs(ms(created.expires_at) - ms(created.created_at) - 30 * MINUTE)).toBeLessThan(5_000);
    const full = await getOk(created.id);
    expect(full.expires_at).toBe(created.expires_at);
    const [row] = await t.db.sql<{ ephemeral: boolean; expires_at: Date }>`SELECT ephemeral, expires_at FROM endpoints WHERE id = ${created.id}`;
    expect(row!.ephemeral).toBe(true);
    expect(row!.expires_at.toISOString()).toBe(created.expires_at);
  });

  it.each([
    [1, MINUTE],
    [45, 45 * MINUTE],
    [1440, 1440 * MINUTE],
  ])('accepts ttl_minutes %s', async (ttl, expected) => {
    const created = await createOk({ ephemeral: true, ttl_minutes: ttl });
    expect(Math.abs(ms(created.expires_at) - ms(created.created_at) - expected)).toBeLessThan(5_000);
  });

  it.each([
    [{ ephemeral: true, ttl_minutes: 0 }],
    [{ ephemeral: true, ttl_minutes: 1441 }],
    [{ ephemeral: true, ttl_minutes: 2.5 }],
    [{ ephemeral: true, ttl_minutes: -5 }],
    [{ ephemeral: true, ttl_minutes: '30' }],
    [{ ephemeral: false, ttl_minutes: 0 }],
    [{ ephemeral: false, ttl_minutes: 1441 }],
    [{ ephemeral: false, ttl_minutes: 2.5 }],
    [{ ttl_minutes: 0 }],
    [{ ttl_minutes: 1441 }],
  ])('refuses %j, naming ttl_minutes', async (body) => {
    expectError(await create({ url: URL_OK, ...body }), 400, 'INVALID_REQUEST', 'ttl_minutes');
  });

  it('ignores a valid ttl_minutes when ephemeral is false', async () => {
    const created = await createOk({ ephemeral: false, ttl_minutes: 10 });
    expect(created.ephemeral).toBe(false);
    expect(created.expires_at).toBeNull();
    expect(await getOk(created.id)).not.toHaveProperty('expires_at');
  });

  it('refuses a non-boolean ephemeral', async () => {
    expectError(await create({ url: URL_OK, ephemeral: 'yes' }), 400, 'INVALID_REQUEST', 'ephemeral');
  });

  it('has expires_at null for a non-ephemeral endpoint in the create response and the list', async () => {
    const created = await createOk();
    expect(created.ephemeral).toBe(false);
    expect(created.expires_at).toBeNull();
    const summary = (await listAll()).find((s) => s.id === created.id);
    expect(summary).toBeDefined();
    expect(summary!.expires_at).toBeNull();
    expect(summary!.ephemeral).toBe(false);
    const [row] = await t.db.sql<{ expires_at: Date | null }>`SELECT expires_at FROM endpoints WHERE id = ${created.id}`;
    expect(row!.expires_at).toBeNull();
  });
});

describe('keyset pagination', () => {
  it('lists newest first and pages through every endpoint once, past ten of them (numeric order)', async () => {
    const other = await t.createProject();
    // Cross a digit boundary (99999 → 100000): text order and numeric order differ there.
    await t.db.sql`ALTER TABLE endpoints ALTER COLUMN seq RESTART WITH 99994`;
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await createOk({ url: `https://example.com/order-${i}` }, other.apiKey)).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const res: TestResponse = await t.request('GET', `/v1/endpoints?limit=5${cursor ? `&cursor=${cursor}` : ''}`, { apiKey: other.apiKey });
      seen.push(...res.body.data.map((e: { id: string }) => e.id));
      cursor = res.body.meta.next_cursor;
      if (cursor === null) break;
    }
    expect(seen).toEqual([...ids].reverse());
  });

  it('pages newest first with an opaque cursor, no overlap, null at the end', async () => {
    const project = await t.createProject();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createOk({ description: `page-${i}` }, project.apiKey)).id);
    const newestFirst = [...ids].reverse();

    const seen: string[] = [];
    const pageSizes: number[] = [];
    const cursors: string[] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 10; guard++) {
      const url: string = `/v1/endpoints?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await t.request('GET', url, { apiKey: project.apiKey });
      expect(res.status, res.raw).toBe(200);
      pageSizes.push(res.body.data.length);
      seen.push(...res.body.data.map((s: { id: string }) => s.id));
      cursor = res.body.meta.next_cursor;
      if (cursor === null) break;
      expect(typeof cursor).toBe('string');
      expect(cursor.length).toBeGreaterThan(0);
      for (const id of ids) expect(cursor).not.toContain(id);
      cursors.push(cursor);
    }
    expect(pageSizes).toEqual([2, 2, 1]);
    expect(new Set(cursors).size).toBe(cursors.length);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(newestFirst);
  });

  it('gives next_cursor null when the last page is exactly full, and defaults to a page of 50', async () => {
    const project = await t.createProject();
    for (let i = 0; i < 3; i++) await createOk({}, project.apiKey);
    const full = await t.request('GET', '/v1/endpoints?limit=3', { apiKey: project.apiKey });
    expect(full.status).toBe(200);
    expect(full.body.data).toHaveLength(3);
    expect(full.body.meta.next_cursor).toBeNull();
    const byDefault = await t.request('GET', '/v1/endpoints', { apiKey: project.apiKey });
    expect(byDefault.body.data).toHaveLength(3);
    expect(byDefault.body.meta.next_cursor).toBeNull();
    const empty = await t.request('GET', '/v1/endpoints', { apiKey: (await t.createProject()).apiKey });
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual([]);
    expect(empty.body.meta.next_cursor).toBeNull();
  });

  it('accepts limit 1 and 200', async () => {
    expect((await t.request('GET', '/v1/endpoints?limit=1')).status).toBe(200);
    expect((await t.request('GET', '/v1/endpoints?limit=200')).status).toBe(200);
  });

  it.each(['0', '201', 'abc', '-1', '1.5', ''])('refuses limit=%s, naming limit', async (limit) => {
    expectError(await t.request('GET', `/v1/endpoints?limit=${limit}`), 400, 'INVALID_REQUEST', 'limit');
  });

  it.each([
    'garbage',
    '!!!not-base64!!!',
    Buffer.from('{"s":"abc"}').toString('base64url'),
    Buffer.from('{"x":1}').toString('base64url'),
    Buffer.from('[1,2]').toString('base64url'),
  ])('refuses the cursor %s with INVALID_REQUEST naming cursor', async (cursor) => {
    expectError(await t.request('GET', `/v1/endpoints?cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_REQUEST', 'cursor');
  });
});

describe('PATCH /v1/endpoints/{id}', () => {
  it('keeps omitted fields, updates each given field and returns the full record', async () => {
    const created = await createOk({ description: 'orig', rate_limit_rps: 5, burst: 10, headers: { 'X-A': '1' } });
    const id = created.id as string;
    let previous = await getOk(id);

    const steps: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ description: 'changed' }, { description: 'changed' }],
      [{ url: 'https://example.net/new' }, { url: 'https://example.net/new' }],
      [{ rate_limit_rps: 7 }, { rate_limit_rps: 7 }],
      [{ burst: 20 }, { burst: 20 }],
      [{ headers: { 'X-B': '2' } }, { headers: { 'X-B': '2' } }],
      [{ paused: true }, { paused: true, paused_reason: 'manual', paused_at: expect.any(String) }],
      // Falsy values are values, not "omitted".
      [
        { description: '', rate_limit_rps: 0, burst: 0, headers: {}, paused: false },
        { description: '', rate_limit_rps: 0, burst: 0, headers: {}, paused: false, paused_reason: null, paused_at: null },
      ],
      [{}, {}],
    ];
    for (const [body, change] of steps) {
      await sleep(5);
      const res = await t.request('PATCH', `/v1/endpoints/${id}`, { body });
      expect(res.status, res.raw).toBe(200);
      const data = res.body.data;
      expect(sorted(Object.keys(data))).toEqual(sorted(FULL_KEYS));
      const { updated_at: _prevUpdated, ...previousRest } = previous;
      const { updated_at: updatedAt, ...rest } = data;
      expect(rest).toEqual({ ...previousRest, ...change });
      if (Object.keys(body).length > 0) expect(ms(updatedAt)).toBeGreaterThan(ms(previous.updated_at));
      else expect(ms(updatedAt)).toBeGreaterThanOrEqual(ms(previous.updated_at));
      expect(data.created_at).toBe(created.created_at);
      expect(res.raw).not.toContain(created.signing_secret);
      expect(await getOk(id)).toEqual(data);
      previous = data;
    }
  });

  it('answers 404 ENDPOINT_NOT_FOUND for an unknown id, whatever the body', async () => {
    const unknown = `ep_${'f'.repeat(32)}`;
    expectError(await t.request('PATCH', `/v1/endpoints/${unknown}`, { body: { description: 'x' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('PATCH', `/v1/endpoints/${unknown}`, { body: { url: 'https://127.0.0.1/x' } }), 404, 'ENDPOINT_NOT_FOUND');
  });

  it('answers 400 INVALID_REQUEST for a malformed id', async () => {
    expectError(await t.request('PATCH', '/v1/endpoints/ep_nothex', { body: { description: 'x' } }), 400, 'INVALID_REQUEST', 'id');
  });

  it('refuses unknown and non-updatable body fields, changing nothing', async () => {
    const created = await createOk({ description: 'stay' });
    expectError(await t.request('PATCH', `/v1/endpoints/${created.id}`, { body: { description: 'new', colour: 'red' } }), 400, 'INVALID_REQUEST', 'colour');
    expectError(await t.request('PATCH', `/v1/endpoints/${created.id}`, { body: { ephemeral: true } }), 400, 'INVALID_REQUEST', 'ephemeral');
    expectError(await t.request('PATCH', `/v1/endpoints/${created.id}`, { body: { id: `ep_${'1'.repeat(32)}` } }), 400, 'INVALID_REQUEST');
    expect((await getOk(created.id)).description).toBe('stay');
  });

  it('refuses wrong types, naming the field', async () => {
    const { id } = await createOk();
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { paused: 'yes' } }), 400, 'INVALID_REQUEST', 'body.paused');
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { description: 5 } }), 400, 'INVALID_REQUEST', 'body.description');
  });
});

describe('pause and resume', () => {
  it('pause and resume answer { id, paused } and GET and the list reflect it', async () => {
    const { id } = await createOk();
    const paused = await t.request('POST', `/v1/endpoints/${id}/pause`);
    expect(paused.status, paused.raw).toBe(200);
    expect(paused.body.data).toEqual({ id, paused: true });
    expect((await getOk(id)).paused).toBe(true);
    expect((await listAll()).find((s) => s.id === id)?.paused).toBe(true);

    const again = await t.request('POST', `/v1/endpoints/${id}/pause`);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ id, paused: true });

    const resumed = await t.request('POST', `/v1/endpoints/${id}/resume`);
    expect(resumed.status, resumed.raw).toBe(200);
    expect(resumed.body.data).toEqual({ id, paused: false });
    expect((await getOk(id)).paused).toBe(false);
    expect((await listAll()).find((s) => s.id === id)?.paused).toBe(false);
  });

  it('a manual pause shows its reason and time on the record; pausing again keeps them, a resume clears them', async () => {
    const { id } = await createOk();
    expect(await getOk(id)).toMatchObject({ paused: false, paused_reason: null, paused_at: null });
    const before = Date.now();
    await t.request('POST', `/v1/endpoints/${id}/pause`);
    const paused = await getOk(id);
    expect(paused).toMatchObject({ paused: true, paused_reason: 'manual' });
    // The database's clock: within a second of the test's.
    expect(ms(paused.paused_at)).toBeGreaterThan(before - 1000);
    expect(ms(paused.paused_at)).toBeLessThan(Date.now() + 1000);

    await sleep(5);
    await t.request('POST', `/v1/endpoints/${id}/pause`);
    const patched = await t.request('PATCH', `/v1/endpoints/${id}`, { body: { paused: true } });
    expect(patched.body.data).toMatchObject({ paused: true, paused_reason: 'manual', paused_at: paused.paused_at });

    await t.request('POST', `/v1/endpoints/${id}/resume`);
    expect(await getOk(id)).toMatchObject({ paused: false, paused_reason: null, paused_at: null });
    await t.request('PATCH', `/v1/endpoints/${id}`, { body: { paused: true } });
    expect(await getOk(id)).toMatchObject({ paused: true, paused_reason: 'manual', paused_at: expect.any(String) });
    await t.request('PATCH', `/v1/endpoints/${id}`, { body: { paused: false } });
    expect(await getOk(id)).toMatchObject({ paused: false, paused_reason: null, paused_at: null });
  });

  it('PATCH { paused: true } pauses too', async () => {
    const { id } = await createOk();
    const res = await t.request('PATCH', `/v1/endpoints/${id}`, { body: { paused: true } });
    expect(res.status).toBe(200);
    expect(res.body.data.paused).toBe(true);
    expect((await getOk(id)).paused).toBe(true);
    const resumed = await t.request('POST', `/v1/endpoints/${id}/resume`);
    expect(resumed.body.data).toEqual({ id, paused: false });
  });

  it('answers 404 for an unknown endpoint and 400 for a malformed id', async () => {
    const unknown = `ep_${'e'.repeat(32)}`;
    expectError(await t.request('POST', `/v1/endpoints/${unknown}/pause`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${unknown}/resume`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', '/v1/endpoints/bad/pause'), 400, 'INVALID_REQUEST');
  });
});

describe('DELETE /v1/endpoints/{id}', () => {
  it('deletes: 200 { id, deleted: true }, then 404 everywhere and gone from the list', async () => {
    const { id } = await createOk();
    const res = await t.request('DELETE', `/v1/endpoints/${id}`);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ id, deleted: true });
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);

    expectError(await get(id), 404, 'ENDPOINT_NOT_FOUND');
    expect((await listAll()).some((s) => s.id === id)).toBe(false);
    expectError(await t.request('DELETE', `/v1/endpoints/${id}`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('PATCH', `/v1/endpoints/${id}`, { body: { description: 'x' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${id}/pause`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${id}/resume`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${id}/rotate-secret`), 404, 'ENDPOINT_NOT_FOUND');
  });

  it('answers 404 for an unknown id and 400 for a malformed one', async () => {
    expectError(await t.request('DELETE', `/v1/endpoints/ep_${'d'.repeat(32)}`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('DELETE', '/v1/endpoints/ep_'), 400, 'INVALID_REQUEST');
  });
});

describe('POST /v1/endpoints/{id}/rotate-secret', () => {
  it('issues a new key, keeps the old one signing for 24 h, and stores both', async () => {
    const created = await createOk();
    const res = await t.request('POST', `/v1/endpoints/${created.id}/rotate-secret`);
    expect(res.status, res.raw).toBe(200);
    const data = res.body.data;
    expect(sorted(Object.keys(data))).toEqual(['key_hint', 'previous_key_expires_at', 'signing_key_id', 'signing_secret']);
    expect(data.signing_key_id).toMatch(/^sk_[a-f0-9]+$/);
    expect(data.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(data.signing_secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(data.key_hint).toBe(data.signing_secret.slice(-4));
    expect(data.signing_key_id).not.toBe(created.signing_key_id);
    expect(data.signing_secret).not.toBe(created.signing_secret);
    const expected = Date.now() + 24 * 60 * MINUTE;
    expect(Math.abs(ms(data.previous_key_expires_at) - expected)).toBeLessThan(MINUTE);

    const rows = await t.db.sql<{ id: string; secret_encrypted: string; key_hint: string; expires_at: Date | null }>`
      SELECT id, secret_encrypted, key_hint, expires_at FROM signing_keys WHERE owner_id = ${created.id}`;
    expect(rows).toHaveLength(2);
    const old = rows.find((r) => r.id === created.signing_key_id);
    const fresh = rows.find((r) => r.id === data.signing_key_id);
    expect(old).toBeDefined();
    expect(fresh).toBeDefined();
    expect(old!.expires_at).not.toBeNull();
    expect(old!.expires_at!.toISOString()).toBe(data.previous_key_expires_at);
    expect(fresh!.expires_at).toBeNull();
    expect(fresh!.key_hint).toBe(data.key_hint);
    expect(t.secretBox.decrypt(fresh!.secret_encrypted)).toBe(data.signing_secret);
    expect(t.secretBox.decrypt(old!.secret_encrypted)).toBe(created.signing_secret);
    expect(fresh!.secret_encrypted).not.toContain(data.signing_secret.slice('whsec_'.length));

    // The full record still never shows a secret.
    const full = await get(created.id);
    expect(full.raw).not.toContain(data.signing_secret);
  });

  it('a second rotation leaves exactly one current key', async () => {
    const created = await createOk();
    const first = await t.request('POST', `/v1/endpoints/${created.id}/rotate-secret`);
    const second = await t.request('POST', `/v1/endpoints/${created.id}/rotate-secret`);
    expect(second.status).toBe(200);
    const rows = await t.db.sql<{ id: string; expires_at: Date | null }>`
      SELECT id, expires_at FROM signing_keys WHERE owner_id = ${created.id}`;
    expect(rows).toHaveLength(3);
    const current = rows.filter((r) => r.expires_at === null);
    expect(current.map((r) => r.id)).toEqual([second.body.data.signing_key_id]);
    expect(rows.find((r) => r.id === first.body.data.signing_key_id)?.expires_at?.toISOString()).toBe(second.body.data.previous_key_expires_at);
  });

  it('answers 404 for an unknown endpoint and 400 for a malformed id', async () => {
    expectError(await t.request('POST', `/v1/endpoints/ep_${'c'.repeat(32)}/rotate-secret`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', '/v1/endpoints/xyz/rotate-secret'), 400, 'INVALID_REQUEST');
  });
});

describe('expiry of ephemeral endpoints', () => {
  it('an ephemeral endpoint past expires_at answers 404 before any sweeper runs', async () => {
    const created = await createOk({ ephemeral: true });
    expect((await get(created.id)).status).toBe(200);
    await t.db.sql`UPDATE endpoints SET expires_at = now() - interval '1 minute' WHERE id = ${created.id}`;

    expectError(await get(created.id), 404, 'ENDPOINT_NOT_FOUND');
    expect((await listAll()).some((s) => s.id === created.id)).toBe(false);
    expectError(await t.request('PATCH', `/v1/endpoints/${created.id}`, { body: { description: 'x' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${created.id}/pause`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${created.id}/rotate-secret`), 404, 'ENDPOINT_NOT_FOUND');
    // Not yet swept: the row itself is untouched.
    expect((await endpointRow(created.id))?.deleted_at).toBeNull();
  });

  // Runs last in this file: the sweep removes every ephemeral endpoint that expires within 31 minutes.
  it('the sweeper soft-deletes expired ephemeral endpoints and leaves the others alone', async () => {
    const expiring = await createOk({ ephemeral: true });
    const longLived = await createOk({ ephemeral: true, ttl_minutes: 1440 });
    const permanent = await createOk();
    for (const e of [expiring, longLived, permanent]) expect((await get(e.id)).status).toBe(200);

    const swept = await runSweeperOnce(t.db, expiredEndpointsSweeper, t.app.services, new Date(Date.now() + 31 * MINUTE));
    expect(swept).toBeGreaterThanOrEqual(1);

    const gone = await endpointRow(expiring.id);
    expect(gone).toBeDefined();
    expect(gone!.deleted_at).toBeInstanceOf(Date);
    expectError(await get(expiring.id), 404, 'ENDPOINT_NOT_FOUND');
    expect((await listAll()).some((s) => s.id === expiring.id)).toBe(false);

    expect((await endpointRow(longLived.id))!.deleted_at).toBeNull();
    expect((await endpointRow(permanent.id))!.deleted_at).toBeNull();
    expect((await get(longLived.id)).status).toBe(200);
    expect((await get(permanent.id)).status).toBe(200);

    // Nothing left to sweep at the same instant.
    expect(await runSweeperOnce(t.db, expiredEndpointsSweeper, t.app.services, new Date(Date.now() + 31 * MINUTE))).toBe(0);
  });
});
