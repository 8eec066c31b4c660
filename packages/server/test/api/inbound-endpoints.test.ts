import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newUuidv7 } from '@hookrelay/shared';
import type { Resolver } from '../../src/security/ssrf.js';
import { runSweeperOnce } from '../../src/sweepers/runner.js';
import { expiredInboundEndpointsSweeper } from '../../src/sweepers/inbound-endpoints.js';
import { createTestApp, expectError, type TestApp, type TestProjectKey, type TestResponse } from '../helpers/app.js';

/**
 * Inbound endpoints API (docs/api.md, Inbound endpoints): every rule has a test here that fails when
 * the rule is broken.
 */

const resolveHost: Resolver = async (hostname) => {
  if (hostname === 'internal.example') return ['10.0.0.5'];
  return ['93.184.216.34'];
};

const URL_A = 'https://example.com/inbound-a';
const MINUTE = 60_000;
const CREATE_KEYS = ['id', 'name', 'url', 'mode', 'ingest_url', 'secret_token', 'ephemeral', 'expires_at', 'created_at'];
const SIGNING_KEYS = ['signing_key_id', 'signing_secret', 'key_hint'];
const FULL_KEYS = [
  'id', 'name', 'description', 'url', 'mode', 'active', 'paused',
  'verify_static_token', 'static_token_header_name', 'static_token_query_param',
  'verify_hmac', 'hmac_scheme', 'hmac_header_name', 'timestamp_header_name', 'timestamp_tolerance_seconds',
  'verify_ip_allowlist', 'allowed_cidrs', 'ingest_response_code', 'max_body_bytes', 'retention_days', 'idempotency_header_names',
  'signing_enabled', 'signing_key_id', 'key_hint', 'resign_late', 'ingest_url', 'ephemeral', 'rejected_count', 'rejections_dropped_count', 'created_at', 'updated_at',
  'event_type_source', 'event_type_path', 'connected_listeners', 'messages_24h',
];
const SUMMARY_KEYS = ['id', 'name', 'description', 'url', 'mode', 'active', 'paused', 'ephemeral', 'expires_at', 'connected_listeners', 'messages_24h', 'created_at'];

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ resolveHost });
});
afterAll(async () => {
  await t?.close();
});

const sorted = (keys: string[]) => [...keys].sort();
const ms = (iso: string) => new Date(iso).getTime();
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
let counter = 0;
/** A URL no other test uses, so DUPLICATE_URL never links tests together by accident. */
const uniqueUrl = () => `https://example.com/hooks/${process.pid}-${++counter}-${Math.random().toString(16).slice(2)}`;
const as = (project?: TestProjectKey) => (project ? { apiKey: project.apiKey } : {});

async function create(body: Record<string, unknown>, project?: TestProjectKey): Promise<TestResponse> {
  return t.request('POST', '/v1/inbound-endpoints', { body, ...as(project) });
}

async function createOk(body: Record<string, unknown> = {}, project?: TestProjectKey): Promise<Record<string, any>> {
  const res = await create({ name: 'hooks', ...body }, project);
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}

async function get(id: string, project?: TestProjectKey): Promise<TestResponse> {
  return t.request('GET', `/v1/inbound-endpoints/${id}`, as(project));
}

async function getOk(id: string, project?: TestProjectKey): Promise<Record<string, any>> {
  const res = await get(id, project);
  expect(res.status, res.raw).toBe(200);
  return res.body.data;
}

async function patch(id: string, body: unknown, project?: TestProjectKey): Promise<TestResponse> {
  return t.request('PATCH', `/v1/inbound-endpoints/${id}`, { body, ...as(project) });
}

async function patchOk(id: string, body: unknown, project?: TestProjectKey): Promise<void> {
  const res = await patch(id, body, project);
  expect(res.status, res.raw).toBe(200);
  expect(res.body.data).toEqual({ id, updated: true });
}

async function rawRow(id: string): Promise<Record<string, any>> {
  const [row] = await t.db.sql`SELECT * FROM inbound_endpoints WHERE id = ${id}`;
  expect(row).toBeDefined();
  return row!;
}

async function rowJson(id: string): Promise<string> {
  const [row] = await t.db.sql<{ j: string }>`SELECT row_to_json(e)::text AS j FROM inbound_endpoints e WHERE id = ${id}`;
  return row!.j;
}

async function countRows(): Promise<number> {
  const [row] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_endpoints`;
  return row!.n;
}

async function listAll(project?: TestProjectKey): Promise<Record<string, any>[]> {
  const all: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor ? `?limit=200&cursor=${encodeURIComponent(cursor)}` : '?limit=200';
    const res = await t.request('GET', `/v1/inbound-endpoints${query}`, as(project));
    expect(res.status, res.raw).toBe(200);
    all.push(...res.body.data);
    cursor = res.body.meta.next_cursor;
  } while (cursor);
  return all;
}

describe('POST /v1/inbound-endpoints: create', () => {
  it('creates a cli endpoint from only name and mode, with exactly the create fields', async () => {
    const before = await countRows();
    const res = await create({ name: 'local dev', mode: 'cli' });
    expect(res.status, res.raw).toBe(201);
    const data = res.body.data;
    expect(sorted(Object.keys(data))).toEqual(sorted(CREATE_KEYS));
    expect(data.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(data.name).toBe('local dev');
    expect(data.mode).toBe('cli');
    expect(data.url).toBe('');
    expect(data.secret_token).toMatch(/^[a-f0-9]{32}$/);
    expect(data.ingest_url).toBe(`${t.app.services.receiveBase()}/in/${data.secret_token}`);
    expect(data.ephemeral).toBe(false);
    expect(data.expires_at).toBeNull();
    expect(Math.abs(ms(data.created_at) - Date.now())).toBeLessThan(MINUTE);
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
    expect(await countRows()).toBe(before + 1);
  });

  it('gives every endpoint its own id and secret token', async () => {
    const a = await createOk();
    const b = await createOk();
    expect(a.id).not.toBe(b.id);
    expect(a.secret_token).not.toBe(b.secret_token);
  });

  it('defaults mode to forward when a url is given', async () => {
    const url = uniqueUrl();
    const data = await createOk({ url });
    expect(data.mode).toBe('forward');
    expect(data.url).toBe(url);
    expect((await getOk(data.id)).url).toBe(url);
  });

  it('defaults mode to cli when no url is given', async () => {
    const data = await createOk();
    expect(data.mode).toBe('cli');
    expect((await getOk(data.id)).mode).toBe('cli');
  });

  it('refuses forward mode without a url, naming url, and stores nothing', async () => {
    const before = await countRows();
    expectError(await create({ name: 'x', mode: 'forward' }), 400, 'INVALID_REQUEST', 'url');
    expect(await countRows()).toBe(before);
  });

  it('refuses a body without a name, an empty name and unknown fields', async () => {
    expectError(await create({ mode: 'cli' }), 400, 'INVALID_REQUEST', 'name');
    expectError(await create({ name: '  ', mode: 'cli' }), 400, 'INVALID_REQUEST', 'name');
    expectError(await create({ name: 'x', colour: 'red' }), 400, 'INVALID_REQUEST', 'colour');
    expectError(await create({ name: 'x', mode: 'push' }), 400, 'INVALID_REQUEST', 'mode');
  });

  it('keeps a url given in cli mode but shows it as "" everywhere', async () => {
    const url = uniqueUrl();
    const data = await createOk({ mode: 'cli', url });
    expect(data.mode).toBe('cli');
    expect(data.url).toBe('');
    expect((await getOk(data.id)).url).toBe('');
    expect((await listAll()).find((s) => s.id === data.id)?.url).toBe('');
    expect((await rawRow(data.id)).url).toBe(url);
  });
});

describe('url rules', () => {
  it.each(['http://example.com/hooks', 'ftp://example.com/hooks', 'not-a-url', 'https://a.b'])('refuses %s on create and PATCH', async (url) => {
    expectError(await create({ name: 'x', url }), 400, 'INVALID_REQUEST', 'url');
    const stored = uniqueUrl();
    const { id } = await createOk({ url: stored });
    expectError(await patch(id, { url }), 400, 'INVALID_REQUEST', 'url');
    expect((await getOk(id)).url).toBe(stored);
  });

  it.each(['https://10.0.0.1/x', 'https://127.0.0.1/x', 'https://169.254.169.254/latest', 'https://[::1]/x', 'https://localhost/x', 'https://internal.example/x'])(
    'refuses the private destination %s on create (storing nothing) and on PATCH',
    async (url) => {
      const before = await countRows();
      expectError(await create({ name: 'x', url }), 400, 'INVALID_REQUEST', 'url');
      expectError(await create({ name: 'x', mode: 'cli', url }), 400, 'INVALID_REQUEST', 'url');
      expect(await countRows()).toBe(before);
      const stored = uniqueUrl();
      const { id } = await createOk({ url: stored });
      expectError(await patch(id, { url }), 400, 'INVALID_REQUEST', 'url');
      expect((await getOk(id)).url).toBe(stored);
    },
  );

  it('answers 404 rather than 400 for a private url on an unknown endpoint', async () => {
    expectError(await patch(newUuidv7(), { url: 'https://10.0.0.1/x' }), 404, 'ENDPOINT_NOT_FOUND');
  });
});

describe('DUPLICATE_URL', () => {
  it('refuses a second endpoint with the same url in the project (409), storing nothing', async () => {
    const url = uniqueUrl();
    await createOk({ url });
    const before = await countRows();
    expectError(await create({ name: 'again', url }), 409, 'DUPLICATE_URL', 'url');
    expect(await countRows()).toBe(before);
  });

  it('refuses a PATCH that takes another endpoint\'s url (409), keeping the url', async () => {
    const taken = uniqueUrl();
    const own = uniqueUrl();
    await createOk({ url: taken });
    const { id } = await createOk({ url: own });
    expectError(await patch(id, { url: taken }), 409, 'DUPLICATE_URL', 'url');
    expect((await getOk(id)).url).toBe(own);
  });

  it('lets a PATCH keep its own url', async () => {
    const url = uniqueUrl();
    const { id } = await createOk({ url });
    await patchOk(id, { url, name: 'same url' });
  });

  it('never clashes cli endpoints without a url', async () => {
    await createOk({ mode: 'cli' });
    await createOk({ mode: 'cli' });
    await createOk({});
  });

  it('counts a url stored on a cli endpoint (it is used if the endpoint goes back to forward)', async () => {
    const url = uniqueUrl();
    await createOk({ mode: 'cli', url });
    expectError(await create({ name: 'x', url }), 409, 'DUPLICATE_URL');
  });

  it('lets another project use the same url', async () => {
    const url = uniqueUrl();
    await createOk({ url });
    const other = await t.createProject();
    const data = await createOk({ url }, other);
    expect(data.url).toBe(url);
  });

  it('frees the url of a deleted endpoint', async () => {
    const url = uniqueUrl();
    const first = await createOk({ url });
    expect((await t.request('DELETE', `/v1/inbound-endpoints/${first.id}`)).status).toBe(200);
    const second = await createOk({ url });
    expect(second.url).toBe(url);
    const third = await createOk({ url: uniqueUrl() });
    await patchOk(third.id, { url: uniqueUrl() });
  });

  it('frees the url of an expired ephemeral endpoint before any sweeper runs', async () => {
    const url = uniqueUrl();
    const old = await createOk({ url, ephemeral: true });
    await t.db.sql`UPDATE inbound_endpoints SET expires_at = now() - interval '1 second' WHERE id = ${old.id}`;
    const fresh = await createOk({ url });
    expect(fresh.url).toBe(url);
    expect((await rawRow(old.id)).deleted_at).not.toBeNull();

    const url2 = uniqueUrl();
    const old2 = await createOk({ url: url2, ephemeral: true });
    await t.db.sql`UPDATE inbound_endpoints SET expires_at = now() - interval '1 second' WHERE id = ${old2.id}`;
    const other = await createOk({ url: uniqueUrl() });
    await patchOk(other.id, { url: url2 });
  });

  it('lets a cli endpoint give its stored url up with url ""', async () => {
    const url = uniqueUrl();
    const { id } = await createOk({ mode: 'cli', url });
    await patchOk(id, { url: '' });
    expect((await rawRow(id)).url).toBe('');
    expect((await createOk({ url })).url).toBe(url);
  });

  it('lets only one of two concurrent creates with the same url win', async () => {
    const url = uniqueUrl();
    const results = await Promise.all([create({ name: 'a', url }), create({ name: 'b', url })]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(results.find((r) => r.status === 409)!.body.error.code).toBe('DUPLICATE_URL');
  });
});

describe('PATCH /v1/inbound-endpoints/{id}', () => {
  it('answers exactly { id, updated: true }', async () => {
    const { id } = await createOk();
    const res = await patch(id, { name: 'renamed' });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ id, updated: true });
    expect(sorted(Object.keys(res.body.meta))).toEqual(['request_id']);
  });

  it('keeps every omitted field, changing only what is given', async () => {
    const created = await createOk({
      name: 'full',
      description: 'all settings',
      url: uniqueUrl(),
      verify_static_token: true,
      static_token_header_name: 'X-Token',
      static_token_query_param: 'token',
      static_token: 'static-secret-1',
      verify_hmac: true,
      hmac_scheme: 'hex',
      hmac_header_name: 'X-Signature',
      hmac_secret: 'hmac-secret-1',
      timestamp_header_name: 'X-Timestamp',
      timestamp_tolerance_seconds: 120,
      verify_ip_allowlist: true,
      allowed_cidrs: ['203.0.113.0/24', '2001:db8::/32'],
      idempotency_header_names: ['X-Request-Id', 'Idempotency-Key'],
      ingest_response_code: 202,
      signing_enabled: true,
    });
    const before = await getOk(created.id);
    const rowBefore = await rawRow(created.id);
    const changes: Record<string, unknown>[] = [
      { name: 'renamed' },
      { description: 'new description' },
      { ingest_response_code: 204 },
      { idempotency_header_names: ['X-Other'] },
      { timestamp_tolerance_seconds: 60 },
    ];
    let expected = before;
    for (const change of changes) {
      await patchOk(created.id, change);
      const after = await getOk(created.id);
      expected = { ...expected, ...change };
      const { updated_at: _a, ...rest } = after;
      const { updated_at: _b, ...expectedRest } = expected;
      expect(rest).toEqual(expectedRest);
      expect(ms(after.updated_at)).toBeGreaterThanOrEqual(ms(before.updated_at));
    }
    // Secrets not named in any PATCH are untouched.
    const rowAfter = await rawRow(created.id);
    expect(rowAfter.static_token_hash).toBe(rowBefore.static_token_hash);
    expect(rowAfter.hmac_secret_encrypted).toBe(rowBefore.hmac_secret_encrypted);
    expect(rowAfter.secret_token_encrypted).toBe(rowBefore.secret_token_encrypted);
    expect(rowAfter.secret_token_hash).toBe(rowBefore.secret_token_hash);
    // An empty PATCH changes nothing.
    await patchOk(created.id, {});
    const { updated_at: _c, ...finalRest } = await getOk(created.id);
    const { updated_at: _d, ...expectedFinal } = expected;
    expect(finalRest).toEqual(expectedFinal);
  });

  it('treats false, 0-like and empty values as values, not omissions', async () => {
    const { id } = await createOk({ verify_ip_allowlist: true, allowed_cidrs: ['198.51.100.7'], idempotency_header_names: ['X-Id'], description: 'd' });
    await patchOk(id, { verify_ip_allowlist: false, idempotency_header_names: [], description: '' });
    const full = await getOk(id);
    expect(full.verify_ip_allowlist).toBe(false);
    expect(full.idempotency_header_names).toEqual([]);
    expect(full.description).toBe('');
    expect(full.allowed_cidrs).toEqual(['198.51.100.7']);
  });

  it('clears the optional text settings with ""', async () => {
    const { id } = await createOk({
      static_token_header_name: 'X-Token',
      static_token_query_param: 'tok',
      hmac_header_name: 'X-Sig',
      timestamp_header_name: 'X-Ts',
    });
    await patchOk(id, { static_token_header_name: '', static_token_query_param: '', hmac_header_name: '', timestamp_header_name: '' });
    const full = await getOk(id);
    expect(full.static_token_header_name).toBeNull();
    expect(full.static_token_query_param).toBeNull();
    expect(full.hmac_header_name).toBeNull();
    expect(full.timestamp_header_name).toBeNull();
    const row = await rawRow(id);
    expect(row.static_token_header_name).toBeNull();
    expect(row.timestamp_header_name).toBeNull();
  });

  it('refuses a switch to forward when neither the request nor the endpoint has a url', async () => {
    const { id } = await createOk({ mode: 'cli' });
    expectError(await patch(id, { mode: 'forward' }), 400, 'INVALID_REQUEST', 'url');
    expect((await getOk(id)).mode).toBe('cli');
  });

  it('accepts a switch to forward with the url in the request', async () => {
    const { id } = await createOk({ mode: 'cli' });
    const url = uniqueUrl();
    await patchOk(id, { mode: 'forward', url });
    const full = await getOk(id);
    expect(full.mode).toBe('forward');
    expect(full.url).toBe(url);
  });

  it('accepts a switch back to forward using the stored url', async () => {
    const url = uniqueUrl();
    const { id } = await createOk({ url });
    await patchOk(id, { mode: 'cli' });
    const asCli = await getOk(id);
    expect(asCli.mode).toBe('cli');
    expect(asCli.url).toBe('');
    expect(asCli).toHaveProperty('latest_message_id', null);
    await patchOk(id, { mode: 'forward' });
    const back = await getOk(id);
    expect(back.mode).toBe('forward');
    expect(back.url).toBe(url);
    expect(back).not.toHaveProperty('latest_message_id');
  });

  it('refuses clearing the url of a forward endpoint, and forward with url "" in one request', async () => {
    const url = uniqueUrl();
    const { id } = await createOk({ url });
    expectError(await patch(id, { url: '' }), 400, 'INVALID_REQUEST', 'url');
    expectError(await patch(id, { mode: 'forward', url: '' }), 400, 'INVALID_REQUEST', 'url');
    expect((await getOk(id)).url).toBe(url);
  });

  it('refuses to switch a cli endpoint whose url was given up back to forward', async () => {
    const { id } = await createOk({ mode: 'cli', url: uniqueUrl() });
    await patchOk(id, { url: '' });
    expectError(await patch(id, { mode: 'forward' }), 400, 'INVALID_REQUEST', 'url');
  });

  it('answers 404 ENDPOINT_NOT_FOUND for an unknown id and 400 for an id that is not a UUID', async () => {
    expectError(await patch(newUuidv7(), { name: 'x' }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await patch('not-a-uuid', { name: 'x' }), 400, 'INVALID_REQUEST', 'id');
  });

  it('refuses unknown fields and read-only ones', async () => {
    const { id } = await createOk();
    expectError(await patch(id, { colour: 'red' }), 400, 'INVALID_REQUEST', 'colour');
    expectError(await patch(id, { secret_token: 'a'.repeat(32) }), 400, 'INVALID_REQUEST', 'secret_token');
    expectError(await patch(id, { ephemeral: true }), 400, 'INVALID_REQUEST', 'ephemeral');
  });
});

describe('secret token and ingest_url', () => {
  it('shows ingest_url on GET but never secret_token or any other secret', async () => {
    const created = await createOk({
      verify_static_token: true,
      static_token_header_name: 'X-Token',
      static_token: 'my-static-token-value',
      verify_hmac: true,
      hmac_scheme: 'github',
      hmac_secret: 'my-hmac-secret-value',
      signing_enabled: true,
    });
    expect(created.ingest_url.endsWith(`/in/${created.secret_token}`)).toBe(true);
    const res = await get(created.id);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.ingest_url).toBe(created.ingest_url);
    expect(res.body.data).not.toHaveProperty('secret_token');
    expect(res.body.data).not.toHaveProperty('static_token');
    expect(res.body.data).not.toHaveProperty('hmac_secret');
    expect(res.body.data).not.toHaveProperty('signing_secret');
    expect(res.raw).not.toContain('my-static-token-value');
    expect(res.raw).not.toContain('my-hmac-secret-value');
    expect(res.raw).not.toContain(created.signing_secret);
    expect(res.raw).not.toContain(sha256('my-static-token-value'));
    expect(res.raw).not.toContain(sha256(created.secret_token));
    // The token appears once: inside ingest_url.
    expect(res.raw.split(created.secret_token)).toHaveLength(2);
    const list = await t.request('GET', '/v1/inbound-endpoints?limit=200');
    expect(list.raw).not.toContain(created.secret_token);
  });

  it('stores no secret in plain text: token encrypted plus hash, static token hashed, hmac secret encrypted', async () => {
    const created = await createOk({
      verify_static_token: true,
      static_token_query_param: 'token',
      static_token: 'plain-static-token',
      verify_hmac: true,
      hmac_scheme: 'hex',
      hmac_header_name: 'X-Sig',
      hmac_secret: 'plain-hmac-secret',
    });
    const row = await rawRow(created.id);
    expect(row.secret_token_hash).toBe(sha256(created.secret_token));
    expect(row.secret_token_encrypted).not.toContain(created.secret_token);
    expect(t.secretBox.decrypt(row.secret_token_encrypted)).toBe(created.secret_token);
    expect(row.static_token_hash).toBe(sha256('plain-static-token'));
    expect(row.hmac_secret_encrypted).not.toContain('plain-hmac-secret');
    expect(t.secretBox.decrypt(row.hmac_secret_encrypted)).toBe('plain-hmac-secret');
    const json = await rowJson(created.id);
    expect(json).not.toContain(created.secret_token);
    expect(json).not.toContain('plain-static-token');
    expect(json).not.toContain('plain-hmac-secret');
  });

  it('hashes and seals secrets given on PATCH too', async () => {
    const { id } = await createOk();
    await patchOk(id, {
      verify_static_token: true,
      static_token_header_name: 'X-Token',
      static_token: 'patched-static',
      verify_hmac: true,
      hmac_scheme: 'slack',
      hmac_secret: 'patched-hmac',
    });
    const row = await rawRow(id);
    expect(row.static_token_hash).toBe(sha256('patched-static'));
    expect(t.secretBox.decrypt(row.hmac_secret_encrypted)).toBe('patched-hmac');
    const json = await rowJson(id);
    expect(json).not.toContain('patched-static');
    expect(json).not.toContain('patched-hmac');
  });
});

describe('signing_enabled', () => {
  it('generates an sk_/whsec_ key shown once, with key_hint the last 4 characters', async () => {
    const res = await create({ name: 'signed', url: uniqueUrl(), signing_enabled: true });
    expect(res.status, res.raw).toBe(201);
    const data = res.body.data;
    expect(sorted(Object.keys(data))).toEqual(sorted([...CREATE_KEYS, ...SIGNING_KEYS]));
    expect(data.signing_key_id).toMatch(/^sk_[a-f0-9]+$/);
    expect(data.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(data.signing_secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(data.key_hint).toBe(data.signing_secret.slice(-4));
    const keys = await t.db.sql<{ id: string; secret_encrypted: string; key_hint: string }>`
      SELECT id, secret_encrypted, key_hint FROM signing_keys WHERE owner_id = ${data.id}`;
    expect(keys).toHaveLength(1);
    expect(keys[0]!.id).toBe(data.signing_key_id);
    expect(keys[0]!.secret_encrypted).not.toContain(data.signing_secret.slice('whsec_'.length));
    expect(t.secretBox.decrypt(keys[0]!.secret_encrypted)).toBe(data.signing_secret);
    const full = await getOk(data.id);
    expect(full.signing_enabled).toBe(true);
    expect(full.signing_key_id).toBe(data.signing_key_id);
    expect(full.key_hint).toBe(data.key_hint);
  });

  it('has no signing fields and no key without signing_enabled', async () => {
    const data = await createOk({ url: uniqueUrl() });
    for (const key of SIGNING_KEYS) expect(data).not.toHaveProperty(key);
    const full = await getOk(data.id);
    expect(full.signing_enabled).toBe(false);
    expect(full.signing_key_id).toBeNull();
    expect(full.key_hint).toBeNull();
    const [n] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM signing_keys WHERE owner_id = ${data.id}`;
    expect(n!.n).toBe(0);
  });

  it('creates a key when PATCH turns signing on (secret not returned), once; rotate-secret shows a new one', async () => {
    const { id } = await createOk({ url: uniqueUrl() });
    const res = await patch(id, { signing_enabled: true });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ id, updated: true });
    const full = await getOk(id);
    expect(full.signing_enabled).toBe(true);
    expect(full.signing_key_id).toMatch(/^sk_[a-f0-9]+$/);
    expect(full.key_hint).toHaveLength(4);
    // Off and on again keeps the same key: receivers verifying with it keep working.
    await patchOk(id, { signing_enabled: false });
    await patchOk(id, { signing_enabled: true });
    const keys = await t.db.sql<{ id: string }>`SELECT id FROM signing_keys WHERE owner_id = ${id}`;
    expect(keys.map((k) => k.id)).toEqual([full.signing_key_id]);

    const rotated = await t.request('POST', `/v1/inbound-endpoints/${id}/rotate-secret`);
    expect(rotated.status, rotated.raw).toBe(200);
    expect(rotated.body.data.signing_key_id).not.toBe(full.signing_key_id);
    expect(rotated.body.data.signing_secret).toMatch(/^whsec_/);
    expect(rotated.body.data.key_hint).toBe(rotated.body.data.signing_secret.slice(-4));
    expect(ms(rotated.body.data.previous_key_expires_at) - Date.now()).toBeGreaterThan(23 * 60 * MINUTE);
    const after = await getOk(id);
    expect(after.signing_key_id).toBe(rotated.body.data.signing_key_id);
    expect(after.key_hint).toBe(rotated.body.data.key_hint);
    expectError(await t.request('POST', `/v1/inbound-endpoints/${newUuidv7()}/rotate-secret`), 404, 'ENDPOINT_NOT_FOUND');
  });
});

describe('retention_days', () => {
  it('is null (the server default) unless given, set by create and PATCH, cleared by null; the list shows none', async () => {
    const plain = await createOk();
    expect((await getOk(plain.id)).retention_days).toBeNull();
    const kept = await createOk({ retention_days: 14 });
    expect((await getOk(kept.id)).retention_days).toBe(14);
    expect((await getOk((await createOk({ retention_days: null })).id)).retention_days).toBeNull();

    await patchOk(kept.id, { retention_days: 1 });
    expect((await getOk(kept.id)).retention_days).toBe(1);
    // A PATCH without the field keeps it.
    await patchOk(kept.id, { description: 'd' });
    expect((await getOk(kept.id)).retention_days).toBe(1);
    await patchOk(kept.id, { retention_days: null });
    expect((await getOk(kept.id)).retention_days).toBeNull();
    expect((await rawRow(kept.id)).retention_days).toBeNull();

    const summary = (await listAll()).find((e) => e.id === kept.id)!;
    expect(sorted(Object.keys(summary))).toEqual(sorted(SUMMARY_KEYS));
  });

  it.each([1, 3650])('accepts %s', async (value) => {
    expect((await getOk((await createOk({ retention_days: value })).id)).retention_days).toBe(value);
  });

  it.each([0, -1, 3651, 2.5, '30', false, []])('refuses %j on create and PATCH, naming the field', async (value) => {
    const created = await create({ name: 'hooks', retention_days: value });
    expectError(created, 400, 'INVALID_REQUEST', 'retention_days');
    expect(created.body.error.details.map((d: { path: string }) => d.path)).toContain('body.retention_days');
    const { id } = await createOk({ retention_days: 5 });
    expectError(await patch(id, { retention_days: value }), 400, 'INVALID_REQUEST', 'retention_days');
    expect((await getOk(id)).retention_days).toBe(5);
  });
});

describe('ingest_response_code', () => {
  it('defaults to 200', async () => {
    const { id } = await createOk();
    expect((await getOk(id)).ingest_response_code).toBe(200);
    expect((await rawRow(id)).ingest_response_code).toBe(200);
  });

  it.each([200, 201, 202, 204, 299])('accepts %s', async (code) => {
    const { id } = await createOk({ ingest_response_code: code });
    expect((await getOk(id)).ingest_response_code).toBe(code);
  });

  it.each([199, 300, 404, 500, 200.5, '200'])('refuses %j on create and PATCH', async (code) => {
    expectError(await create({ name: 'x', ingest_response_code: code }), 400, 'INVALID_REQUEST', 'ingest_response_code');
    const { id } = await createOk({ ingest_response_code: 201 });
    expectError(await patch(id, { ingest_response_code: code }), 400, 'INVALID_REQUEST', 'ingest_response_code');
    expect((await getOk(id)).ingest_response_code).toBe(201);
  });
});

describe('verification settings', () => {
  it('defaults: no checks, hex scheme, tolerance 300, no names, empty lists', async () => {
    const full = await getOk((await createOk()).id);
    expect(full).toMatchObject({
      verify_static_token: false,
      static_token_header_name: null,
      static_token_query_param: null,
      verify_hmac: false,
      hmac_scheme: 'hex',
      hmac_header_name: null,
      timestamp_header_name: null,
      timestamp_tolerance_seconds: 300,
      verify_ip_allowlist: false,
      allowed_cidrs: [],
      idempotency_header_names: [],
      signing_enabled: false,
      paused: false,
      active: true,
    });
  });

  it('stores IPv4 and IPv6 CIDRs and idempotency header names in the order given', async () => {
    const cidrs = ['2001:db8::/32', '203.0.113.0/24', '198.51.100.7', '::ffff:10.0.0.0/104'];
    const names = ['X-Zeta', 'Idempotency-Key', 'X-Alpha'];
    const { id } = await createOk({ verify_ip_allowlist: true, allowed_cidrs: cidrs, idempotency_header_names: names });
    const full = await getOk(id);
    expect(full.allowed_cidrs).toEqual(cidrs);
    expect(full.idempotency_header_names).toEqual(names);
    const row = await rawRow(id);
    expect(row.allowed_cidrs).toEqual(cidrs);
    expect(row.idempotency_header_names).toEqual(names);
  });

  it.each(['10.0.0.0/33', '300.1.1.1/8', 'example.com', '2001:db8::/129', 'fe80::1%eth0', '10.0.0.0/8/8', ''])(
    'refuses the CIDR %j on create and PATCH, naming allowed_cidrs.1',
    async (bad) => {
      expectError(await create({ name: 'x', verify_ip_allowlist: true, allowed_cidrs: ['192.0.2.0/24', bad] }), 400, 'INVALID_REQUEST', 'allowed_cidrs.1');
      const { id } = await createOk({ verify_ip_allowlist: true, allowed_cidrs: ['192.0.2.0/24'] });
      expectError(await patch(id, { allowed_cidrs: ['192.0.2.0/24', bad] }), 400, 'INVALID_REQUEST', 'allowed_cidrs.1');
      expect((await getOk(id)).allowed_cidrs).toEqual(['192.0.2.0/24']);
    },
  );

  it('refuses an allowlist switched on without any CIDR, on create and PATCH', async () => {
    expectError(await create({ name: 'x', verify_ip_allowlist: true }), 400, 'INVALID_REQUEST', 'allowed_cidrs');
    const { id } = await createOk({ verify_ip_allowlist: true, allowed_cidrs: ['192.0.2.0/24'] });
    expectError(await patch(id, { allowed_cidrs: [] }), 400, 'INVALID_REQUEST', 'allowed_cidrs');
    const plain = await createOk();
    expectError(await patch(plain.id, { verify_ip_allowlist: true }), 400, 'INVALID_REQUEST', 'allowed_cidrs');
  });

  it.each(['github', 'stripe', 'slack', 'standard_webhooks'])('accepts hmac_scheme %s without hmac_header_name', async (scheme) => {
    const secret = scheme === 'standard_webhooks' ? `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}` : 'shh';
    const { id } = await createOk({ verify_hmac: true, hmac_scheme: scheme, hmac_secret: secret });
    const full = await getOk(id);
    expect(full.verify_hmac).toBe(true);
    expect(full.hmac_scheme).toBe(scheme);
    expect(full.hmac_header_name).toBeNull();
  });

  it.each(['hex', 'base64'])('requires hmac_header_name for hmac_scheme %s', async (scheme) => {
    expectError(await create({ name: 'x', verify_hmac: true, hmac_scheme: scheme, hmac_secret: 'shh' }), 400, 'INVALID_REQUEST', 'hmac_header_name');
    const { id } = await createOk({ verify_hmac: true, hmac_scheme: scheme, hmac_secret: 'shh', hmac_header_name: 'X-Sig' });
    expectError(await patch(id, { hmac_header_name: '' }), 400, 'INVALID_REQUEST', 'hmac_header_name');
    const preset = await createOk({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'shh' });
    expectError(await patch(preset.id, { hmac_scheme: scheme }), 400, 'INVALID_REQUEST', 'hmac_header_name');
  });

  it('requires an hmac secret, given now or stored, when verify_hmac is on', async () => {
    expectError(await create({ name: 'x', verify_hmac: true, hmac_scheme: 'github' }), 400, 'INVALID_REQUEST', 'hmac_secret');
    const { id } = await createOk();
    expectError(await patch(id, { verify_hmac: true, hmac_scheme: 'github' }), 400, 'INVALID_REQUEST', 'hmac_secret');
    // A secret stored earlier, with the flag off, is enough to switch it on later.
    const kept = await createOk({ hmac_scheme: 'github', hmac_secret: 'stored' });
    await patchOk(kept.id, { verify_hmac: true });
    expect((await getOk(kept.id)).verify_hmac).toBe(true);
  });

  it('refuses a standard_webhooks secret that is not whsec_ + base64', async () => {
    expectError(await create({ name: 'x', verify_hmac: true, hmac_scheme: 'standard_webhooks', hmac_secret: 'not base64!' }), 400, 'INVALID_REQUEST', 'hmac_secret');
    const { id } = await createOk({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'plain text secret' });
    expectError(await patch(id, { hmac_scheme: 'standard_webhooks' }), 400, 'INVALID_REQUEST', 'hmac_secret');
    await patchOk(id, { hmac_scheme: 'standard_webhooks', hmac_secret: `whsec_${Buffer.from('x'.repeat(24)).toString('base64')}` });
  });

  it('requires a static token and a header or query name when verify_static_token is on', async () => {
    expectError(await create({ name: 'x', verify_static_token: true, static_token_header_name: 'X-T' }), 400, 'INVALID_REQUEST', 'static_token');
    expectError(await create({ name: 'x', verify_static_token: true, static_token: 'tok' }), 400, 'INVALID_REQUEST', 'static_token_header_name');
    const viaQuery = await createOk({ verify_static_token: true, static_token: 'tok', static_token_query_param: 'key' });
    expect((await getOk(viaQuery.id)).static_token_query_param).toBe('key');
    expectError(await patch(viaQuery.id, { static_token_query_param: '' }), 400, 'INVALID_REQUEST', 'static_token_header_name');
    const plain = await createOk();
    expectError(await patch(plain.id, { verify_static_token: true, static_token_header_name: 'X-T' }), 400, 'INVALID_REQUEST', 'static_token');
  });

  it('validates timestamp_tolerance_seconds and keeps the timestamp header', async () => {
    const { id } = await createOk({ timestamp_header_name: 'X-Ts', timestamp_tolerance_seconds: 30 });
    const full = await getOk(id);
    expect(full.timestamp_header_name).toBe('X-Ts');
    expect(full.timestamp_tolerance_seconds).toBe(30);
    expectError(await create({ name: 'x', timestamp_tolerance_seconds: 0 }), 400, 'INVALID_REQUEST', 'timestamp_tolerance_seconds');
    expectError(await patch(id, { timestamp_tolerance_seconds: 1.5 }), 400, 'INVALID_REQUEST', 'timestamp_tolerance_seconds');
  });
});

describe('GET /v1/inbound-endpoints/{id}', () => {
  it('has every field of the full record; a new cli endpoint has rejected_count 0 and latest_message_id null', async () => {
    const created = await createOk({ name: 'cli one', mode: 'cli', description: 'desc' });
    const res = await get(created.id);
    expect(res.status, res.raw).toBe(200);
    const data = res.body.data;
    expect(sorted(Object.keys(data))).toEqual(sorted([...FULL_KEYS, 'latest_message_id']));
    expect(data).toMatchObject({ id: created.id, name: 'cli one', description: 'desc', url: '', mode: 'cli', active: true, paused: false });
    expect(data.rejected_count).toBe(0);
    expect(data.latest_message_id).toBeNull();
    expect(data.ephemeral).toBe(false);
    expect(data).not.toHaveProperty('expires_at');
    expect(data.created_at).toBe(created.created_at);
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  it('shows rejected_count and latest_message_id from the endpoint row; forward mode has no latest_message_id', async () => {
    const created = await createOk({ mode: 'cli' });
    const messageId = newUuidv7();
    await t.db.sql`UPDATE inbound_endpoints SET rejected_count = 7, last_message_id = ${messageId} WHERE id = ${created.id}`;
    const full = await getOk(created.id);
    expect(full.rejected_count).toBe(7);
    expect(full.latest_message_id).toBe(messageId);
    const forward = await createOk({ url: uniqueUrl() });
    const data = await getOk(forward.id);
    expect(sorted(Object.keys(data))).toEqual(sorted(FULL_KEYS));
    expect(data.rejected_count).toBe(0);
  });

  it('answers 404 ENDPOINT_NOT_FOUND for an unknown id and 400 INVALID_REQUEST for a malformed one', async () => {
    expectError(await get(newUuidv7()), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await get('not-a-uuid'), 400, 'INVALID_REQUEST', 'id');
    expectError(await get(`ep_${'0'.repeat(32)}`), 400, 'INVALID_REQUEST', 'id');
    expectError(await t.request('DELETE', '/v1/inbound-endpoints/123'), 400, 'INVALID_REQUEST', 'id');
    expectError(await t.request('POST', '/v1/inbound-endpoints/xyz/pause'), 400, 'INVALID_REQUEST', 'id');
  });

  it('requires an API key', async () => {
    expectError(await t.request('GET', '/v1/inbound-endpoints', { apiKey: null }), 401, 'UNAUTHORIZED');
    expectError(await t.request('POST', '/v1/inbound-endpoints', { apiKey: null, body: { name: 'x' } }), 401, 'UNAUTHORIZED');
  });
});

describe('pause and resume', () => {
  it('answer { id, paused } and the record follows', async () => {
    const { id } = await createOk();
    const paused = await t.request('POST', `/v1/inbound-endpoints/${id}/pause`);
    expect(paused.status, paused.raw).toBe(200);
    expect(paused.body.data).toEqual({ id, paused: true });
    expect((await getOk(id)).paused).toBe(true);
    expect((await listAll()).find((s) => s.id === id)?.paused).toBe(true);
    // Pausing twice is fine and stays paused.
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/pause`)).body.data).toEqual({ id, paused: true });
    const resumed = await t.request('POST', `/v1/inbound-endpoints/${id}/resume`);
    expect(resumed.status, resumed.raw).toBe(200);
    expect(resumed.body.data).toEqual({ id, paused: false });
    expect((await getOk(id)).paused).toBe(false);
  });

  it('answer 404 for an unknown endpoint', async () => {
    expectError(await t.request('POST', `/v1/inbound-endpoints/${newUuidv7()}/pause`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/inbound-endpoints/${newUuidv7()}/resume`), 404, 'ENDPOINT_NOT_FOUND');
  });
});

describe('DELETE /v1/inbound-endpoints/{id}', () => {
  it('soft-deletes: { id, deleted: true }, then GET, PATCH, pause and a second DELETE answer 404', async () => {
    const { id } = await createOk();
    const res = await t.request('DELETE', `/v1/inbound-endpoints/${id}`);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ id, deleted: true });
    expectError(await get(id), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await patch(id, { name: 'x' }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/inbound-endpoints/${id}/pause`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('DELETE', `/v1/inbound-endpoints/${id}`), 404, 'ENDPOINT_NOT_FOUND');
    expect((await listAll()).some((s) => s.id === id)).toBe(false);
    const row = await rawRow(id);
    expect(row.deleted_at).not.toBeNull();
  });
});

describe('every change of settings or state reaches ingestion', () => {
  it('awaits inboundEndpointChanged after PATCH, pause, resume, rotate-secret and DELETE', async () => {
    const { id } = await createOk({ url: uniqueUrl() });
    const spy = vi.spyOn(t.app.services, 'inboundEndpointChanged');
    try {
      await patchOk(id, { name: 'changed' });
      expect(spy).toHaveBeenLastCalledWith(id);
      await t.request('POST', `/v1/inbound-endpoints/${id}/pause`);
      await t.request('POST', `/v1/inbound-endpoints/${id}/resume`);
      await t.request('POST', `/v1/inbound-endpoints/${id}/rotate-secret`);
      await t.request('DELETE', `/v1/inbound-endpoints/${id}`);
      expect(spy.mock.calls.map((c) => c[0])).toEqual([id, id, id, id, id]);
      // A refused change changes nothing and tells nobody.
      spy.mockClear();
      const other = await createOk();
      await patch(other.id, { ingest_response_code: 300 });
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});

describe('project isolation', () => {
  it("answers 404 ENDPOINT_NOT_FOUND for another project's endpoint, whatever the operation", async () => {
    const created = await createOk({ url: uniqueUrl() });
    const other = await t.createProject();
    const base = `/v1/inbound-endpoints/${created.id}`;
    const opt = { apiKey: other.apiKey };
    expectError(await t.request('GET', base, opt), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('PATCH', base, { ...opt, body: { name: 'hijacked' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `${base}/pause`, opt), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `${base}/resume`, opt), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `${base}/rotate-secret`, opt), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('DELETE', base, opt), 404, 'ENDPOINT_NOT_FOUND');
    expect(await listAll(other)).toEqual([]);
    const full = await getOk(created.id);
    expect(full.name).toBe('hooks');
    expect(full.paused).toBe(false);
  });
});

describe('GET /v1/inbound-endpoints: list', () => {
  it('pages newest first with summaries, an opaque cursor, and null at the end', async () => {
    const project = await t.createProject();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createOk({ name: `page-${i}` }, project)).id);
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 10; guard++) {
      const url: string = `/v1/inbound-endpoints?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await t.request('GET', url, { apiKey: project.apiKey });
      expect(res.status, res.raw).toBe(200);
      expect(sorted(Object.keys(res.body.meta))).toEqual(['next_cursor', 'request_id']);
      for (const summary of res.body.data) expect(sorted(Object.keys(summary))).toEqual(sorted(SUMMARY_KEYS));
      sizes.push(res.body.data.length);
      seen.push(...res.body.data.map((s: { id: string }) => s.id));
      cursor = res.body.meta.next_cursor;
      if (cursor === null) break;
      for (const id of ids) expect(cursor).not.toContain(id);
    }
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual([...ids].reverse());
    const full = await t.request('GET', '/v1/inbound-endpoints?limit=5', { apiKey: project.apiKey });
    expect(full.body.data).toHaveLength(5);
    expect(full.body.meta.next_cursor).toBeNull();
  });

  it('shows summary values, expires_at null unless ephemeral', async () => {
    const project = await t.createProject();
    const url = uniqueUrl();
    const plain = await createOk({ name: 'plain', description: 'd', url }, project);
    const eph = await createOk({ name: 'eph', ephemeral: true }, project);
    const list = await listAll(project);
    expect(list.find((s) => s.id === plain.id)).toEqual({
      id: plain.id,
      name: 'plain',
      description: 'd',
      url,
      mode: 'forward',
      active: true,
      paused: false,
      ephemeral: false,
      expires_at: null,
      connected_listeners: 0,
      messages_24h: 0,
      created_at: plain.created_at,
    });
    expect(list.find((s) => s.id === eph.id)?.expires_at).toBe(eph.expires_at);
  });

  it.each(['0', '201', 'abc'])('refuses limit=%s', async (limit) => {
    expectError(await t.request('GET', `/v1/inbound-endpoints?limit=${limit}`), 400, 'INVALID_REQUEST', 'limit');
  });

  it('refuses a cursor it did not produce', async () => {
    expectError(await t.request('GET', `/v1/inbound-endpoints?cursor=${Buffer.from('{"x":1}').toString('base64url')}`), 400, 'INVALID_REQUEST', 'cursor');
  });
});

describe('ephemeral endpoints', () => {
  it('expire 30 minutes after creation by default, and ttl_minutes sets another TTL', async () => {
    const created = await createOk({ ephemeral: true });
    expect(created.ephemeral).toBe(true);
    expect(Math.abs(ms(created.expires_at) - ms(created.created_at) - 30 * MINUTE)).toBeLessThan(5_000);
    const full = await getOk(created.id);
    expect(full.ephemeral).toBe(true);
    expect(full.expires_at).toBe(created.expires_at);
    const custom = await createOk({ ephemeral: true, ttl_minutes: 1440 });
    expect(Math.abs(ms(custom.expires_at) - ms(custom.created_at) - 1440 * MINUTE)).toBeLessThan(5_000);
    const ignored = await createOk({ ephemeral: false, ttl_minutes: 10 });
    expect(ignored.expires_at).toBeNull();
  });

  it.each([0, 1441, 2.5, '30'])('refuses ttl_minutes %j', async (ttl) => {
    expectError(await create({ name: 'x', ephemeral: true, ttl_minutes: ttl }), 400, 'INVALID_REQUEST', 'ttl_minutes');
  });

  it('is gone (404) once expired, and the sweeper soft-deletes it at its expiry', async () => {
    const eph = await createOk({ ephemeral: true });
    const keep = await createOk({ ephemeral: true, ttl_minutes: 1440 });
    const plain = await createOk();
    const future = new Date(Date.now() + 31 * MINUTE);
    const swept = await runSweeperOnce(t.db, expiredInboundEndpointsSweeper, t.app.services, future);
    expect(swept).toBeGreaterThanOrEqual(1);
    const row = await rawRow(eph.id);
    expect(row.deleted_at).not.toBeNull();
    expect((row.deleted_at as Date).toISOString()).toBe(eph.expires_at);
    expect((await rawRow(keep.id)).deleted_at).toBeNull();
    expect((await rawRow(plain.id)).deleted_at).toBeNull();
    expectError(await get(eph.id), 404, 'ENDPOINT_NOT_FOUND');
    expect((await getOk(keep.id)).ephemeral).toBe(true);
    expect(await runSweeperOnce(t.db, expiredInboundEndpointsSweeper, t.app.services, future)).toBe(0);
  });

  it('answers 404 as soon as the TTL has elapsed, before any sweep', async () => {
    const eph = await createOk({ ephemeral: true });
    await t.db.sql`UPDATE inbound_endpoints SET expires_at = now() - interval '1 second' WHERE id = ${eph.id}`;
    expectError(await get(eph.id), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await patch(eph.id, { name: 'x' }), 404, 'ENDPOINT_NOT_FOUND');
    expect((await listAll()).some((s) => s.id === eph.id)).toBe(false);
  });
});
