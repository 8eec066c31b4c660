import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../src/db/api-keys.js';
import { backend } from '../helpers/database.js';
import { createTestApp, expectError, type TestApp, type TestResponse } from '../helpers/app.js';
import { builtCommit, serverPackageVersion } from '../helpers/build-info.js';

/**
 * The core API behaviour every route shares: authentication, the envelopes and request ids, body
 * parsing and limits, unknown routes, 5xx answers that leak nothing, health and readiness.
 */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const URL_OK = 'https://example.com/hooks';

async function createEndpoint(): Promise<string> {
  const res = await t.request('POST', '/v1/endpoints', { body: { url: URL_OK } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id;
}

/** Nothing in an error body that tells an outsider about the implementation. */
function expectNoInternals(res: TestResponse): void {
  for (const needle of ['stack', 'at ', 'PGlite', 'pglite', 'postgres', 'Postgres', 'node_modules', '.ts:', '.js:', '/work/', 'file://']) {
    expect(res.raw, `response leaks ${JSON.stringify(needle)}: ${res.raw}`).not.toContain(needle);
  }
  expect(res.raw).not.toMatch(/\/[\w.-]+\/[\w.-]+\/[\w.-]+/);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message']);
}

describe('authentication', () => {
  it('no Authorization header → 401 UNAUTHORIZED mentioning the API key, in the error envelope', async () => {
    const res = await t.request('GET', '/v1/whoami', { apiKey: null });
    expectError(res, 401, 'UNAUTHORIZED');
    expect(res.body.error.message).toMatch(/API key/i);
    expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
    expect(res.body.meta).toEqual({ request_id: res.headers['x-request-id'] });
  });

  it.each([
    ['an unknown key', `Bearer hr_${'0'.repeat(40)}`],
    ['a malformed key', 'Bearer not-a-key'],
    ['Basic credentials', 'Basic x'],
    ['Basic with a real-looking value', 'Basic aHI6c2VjcmV0'],
    ['an empty Bearer', 'Bearer '],
    ['the key without the Bearer scheme', 'KEY'],
  ])('%s → 401 UNAUTHORIZED', async (_label, authorization) => {
    const value = authorization === 'KEY' ? t.main.apiKey : authorization;
    const res = await t.request('GET', '/v1/whoami', { apiKey: null, headers: { authorization: value } });
    expectError(res, 401, 'UNAUTHORIZED');
    expect(res.body.error.message).toMatch(/API key/i);
  });

  it('every /v1 route requires the key', async () => {
    const id = `ep_${'a'.repeat(32)}`;
    for (const [method, url] of [
      ['GET', '/v1/endpoints'],
      ['POST', '/v1/endpoints'],
      ['GET', `/v1/endpoints/${id}`],
      ['PATCH', `/v1/endpoints/${id}`],
      ['DELETE', `/v1/endpoints/${id}`],
      ['POST', `/v1/endpoints/${id}/pause`],
      ['POST', `/v1/endpoints/${id}/resume`],
      ['POST', `/v1/endpoints/${id}/rotate-secret`],
    ] as const) {
      const res = await t.request(method, url, { apiKey: null, ...(method === 'POST' || method === 'PATCH' ? { body: { url: URL_OK } } : {}) });
      expectError(res, 401, 'UNAUTHORIZED');
    }
    const list = await t.request('GET', '/v1/endpoints', { apiKey: t.main.apiKey });
    expect(list.body.data).toEqual([]);
  });

  it('a revoked key → 401', async () => {
    const project = await t.createProject();
    expect((await t.request('GET', '/v1/whoami', { apiKey: project.apiKey })).status).toBe(200);
    await revokeApiKey(t.db.sql, project.apiKeyId);
    expectError(await t.request('GET', '/v1/whoami', { apiKey: project.apiKey }), 401, 'UNAUTHORIZED');
    expectError(await t.request('POST', '/v1/endpoints', { apiKey: project.apiKey, body: { url: URL_OK } }), 401, 'UNAUTHORIZED');
    // Other keys are unaffected.
    expect((await t.request('GET', '/v1/whoami')).status).toBe(200);
  });

  it('accepts the scheme in any case', async () => {
    const res = await t.request('GET', '/v1/whoami', { apiKey: null, headers: { authorization: `bearer ${t.main.apiKey}` } });
    expect(res.status, res.raw).toBe(200);
  });
});

describe('request ids', () => {
  it('every response, success or error, carries meta.request_id equal to X-Request-Id', async () => {
    const id = await createEndpoint();
    const responses: TestResponse[] = [
      await t.request('GET', '/v1/whoami'),
      await t.request('POST', '/v1/endpoints', { body: { url: URL_OK } }),
      await t.request('GET', '/v1/endpoints'),
      await t.request('GET', `/v1/endpoints/${id}`),
      await t.request('POST', `/v1/endpoints/${id}/pause`),
      await t.request('GET', '/healthz', { apiKey: null }),
      await t.request('GET', '/readyz', { apiKey: null }),
      await t.request('GET', '/v1/whoami', { apiKey: null }),
      await t.request('POST', '/v1/endpoints', { body: { url: 'http://example.com/x' } }),
      await t.request('POST', '/v1/endpoints', { body: { url: URL_OK, headers: { Host: 'x' } } }),
      await t.request('GET', `/v1/endpoints/ep_${'b'.repeat(32)}`),
      await t.request('GET', '/nowhere', { apiKey: null }),
      await t.request('POST', '/v1/endpoints', { rawBody: '{', headers: { 'content-type': 'application/json' } }),
    ];
    const ids = new Set<string>();
    for (const res of responses) {
      const header = res.headers['x-request-id'];
      expect(typeof header, res.raw).toBe('string');
      expect((header as string).length).toBeGreaterThan(0);
      expect(res.body.meta.request_id, res.raw).toBe(header);
      ids.add(header as string);
    }
    expect(ids.size).toBe(responses.length);
  });

  it('ignores a request id sent by the client', async () => {
    const res = await t.request('GET', '/v1/whoami', { headers: { 'x-request-id': 'client-chosen' } });
    expect(res.headers['x-request-id']).not.toBe('client-chosen');
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });
});

describe('request bodies', () => {
  it.each([
    ['{"url":'],
    ['{url: "https://example.com/hooks"}'],
    ["{'url':'https://example.com/hooks'}"],
    ['{"url":"https://example.com/hooks",}'],
    ['not json at all'],
  ])('malformed JSON %s → 400 INVALID_REQUEST', async (rawBody) => {
    const res = await t.request('POST', '/v1/endpoints', { rawBody, headers: { 'content-type': 'application/json' } });
    expectError(res, 400, 'INVALID_REQUEST');
    expectNoInternals(res);
  });

  it.each([['[]'], ['[{"url":"https://example.com/hooks"}]'], ['42'], ['"https://example.com/hooks"'], ['null'], ['true']])(
    'JSON %s where an object is expected → 400 INVALID_REQUEST',
    async (rawBody) => {
      const res = await t.request('POST', '/v1/endpoints', { rawBody, headers: { 'content-type': 'application/json' } });
      expectError(res, 400, 'INVALID_REQUEST', 'body');
      const id = await createEndpoint();
      const patch = await t.request('PATCH', `/v1/endpoints/${id}`, { rawBody, headers: { 'content-type': 'application/json' } });
      expectError(patch, 400, 'INVALID_REQUEST', 'body');
    },
  );

  it.each([
    [{ url: 5 }, 'body.url'],
    [{ url: ['https://example.com/hooks'] }, 'body.url'],
    [{ url: URL_OK, description: 7 }, 'body.description'],
    [{ url: URL_OK, rate_limit_rps: '10' }, 'body.rate_limit_rps'],
    [{ url: URL_OK, burst: {} }, 'body.burst'],
    [{ url: URL_OK, headers: 'X-A: 1' }, 'body.headers'],
    [{ url: URL_OK, ephemeral: 1 }, 'body.ephemeral'],
    [{ url: URL_OK, ttl_minutes: '30' }, 'body.ttl_minutes'],
  ])('wrong type %j → 400 naming %s', async (body, field) => {
    const message = expectError(await t.request('POST', '/v1/endpoints', { body }), 400, 'INVALID_REQUEST', field);
    expect(message.length).toBeGreaterThan(field.length);
  });

  it('a body over the limit → 413 PAYLOAD_TOO_LARGE; under it is accepted', async () => {
    const small = await createTestApp({ env: { HOOKRELAY_MAX_BODY_BYTES: '1024' }, db: t.db });
    try {
      const big = { url: URL_OK, description: 'x'.repeat(400), headers: { 'X-Pad': 'p'.repeat(1600) } };
      expect(JSON.stringify(big).length).toBeGreaterThan(2000);
      const res = await small.request('POST', '/v1/endpoints', { body: big });
      expectError(res, 413, 'PAYLOAD_TOO_LARGE');
      expectNoInternals(res);
      const ok = await small.request('POST', '/v1/endpoints', { body: { url: URL_OK, description: 'x'.repeat(400) } });
      expect(ok.status, ok.raw).toBe(201);
    } finally {
      await small.close();
    }
  });

  it.each([
    ['text/plain', '{"url":"https://example.com/hooks"}'],
    ['application/x-www-form-urlencoded', 'url=https%3A%2F%2Fexample.com%2Fhooks'],
    ['application/xml', '<url>https://example.com/hooks</url>'],
  ])('Content-Type %s → 400 INVALID_REQUEST, nothing created', async (contentType, rawBody) => {
    const project = await t.createProject();
    const res = await t.request('POST', '/v1/endpoints', { apiKey: project.apiKey, rawBody, headers: { 'content-type': contentType } });
    expectError(res, 400, 'INVALID_REQUEST');
    const list = await t.request('GET', '/v1/endpoints', { apiKey: project.apiKey });
    expect(list.body.data).toEqual([]);
  });

  it('an empty body with Content-Type application/json on POST pause → 200', async () => {
    const id = await createEndpoint();
    const res = await t.request('POST', `/v1/endpoints/${id}/pause`, { rawBody: '', headers: { 'content-type': 'application/json' } });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ id, paused: true });
    const resumed = await t.request('POST', `/v1/endpoints/${id}/resume`, { rawBody: '', headers: { 'content-type': 'application/json' } });
    expect(resumed.status, resumed.raw).toBe(200);
    expect(resumed.body.data).toEqual({ id, paused: false });
  });

  it('an empty JSON body where one is required → 400, never 500', async () => {
    const res = await t.request('POST', '/v1/endpoints', { rawBody: '', headers: { 'content-type': 'application/json' } });
    expectError(res, 400, 'INVALID_REQUEST');
    const noBody = await t.request('POST', '/v1/endpoints');
    expectError(noBody, 400, 'INVALID_REQUEST');
  });

  it.each([
    ['{"url":"https://example.com/hooks","__proto__":{"polluted":true}}', 'request body has a "__proto__" key, which is refused'],
    ['{"url":"https://example.com/hooks","headers":{"\\u005f_proto__":{"polluted":true}}}', 'request body has a "__proto__" key, which is refused'],
    ['{"url":"https://example.com/hooks","constructor":{"prototype":{"polluted":true}}}', 'request body has a "constructor" key holding a "prototype" key, which is refused'],
    ['{"url":"https://example.com/hooks",', 'request body is not valid JSON'],
  ])('prototype-pollution keys are refused, not merged, and the refusal says why: %s', async (rawBody, message) => {
    const res = await t.request('POST', '/v1/endpoints', { rawBody, headers: { 'content-type': 'application/json' } });
    expect(expectError(res, 400, 'INVALID_REQUEST')).toBe(message);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('unknown routes', () => {
  it.each([
    ['GET', '/nowhere', null],
    ['GET', '/v1/nowhere', 'key'],
    ['POST', '/v2/endpoints', 'key'],
    ['PUT', '/v1/endpoints', 'key'],
    ['GET', '/v1/v1/whoami', 'key'],
    ['GET', '/api/v1/whoami', null],
  ] as const)('%s %s → 404 ROUTE_NOT_FOUND in the envelope, not a resource\'s NOT_FOUND', async (method, url, key) => {
    const res = await t.request(method, url, key === null ? { apiKey: null } : {});
    expect(expectError(res, 404, 'ROUTE_NOT_FOUND')).toBe(`no route for ${method} ${url}`);
    expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
  });
});

describe('health, readiness and whoami', () => {
  it('GET /healthz → 200 without a key, with the package version and the commit of the build', async () => {
    const res = await t.request('GET', '/healthz', { apiKey: null });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ status: 'ok', version: serverPackageVersion(), commit: builtCommit() });
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  it('GET /readyz → 200 naming the database backend', async () => {
    const res = await t.request('GET', '/readyz', { apiKey: null });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.database).toBe(backend());
    expect(res.body.data.status).toBe('ready');
  });

  it('GET /v1/whoami → the project and key behind the API key', async () => {
    const res = await t.request('GET', '/v1/whoami');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ project_id: t.main.projectId, project_name: expect.any(String), api_key_id: t.main.apiKeyId });
    const other = await t.createProject('whoami-other');
    const theirs = await t.request('GET', '/v1/whoami', { apiKey: other.apiKey });
    expect(theirs.body.data).toEqual({ project_id: other.projectId, project_name: 'whoami-other', api_key_id: other.apiKeyId });
  });
});

describe('server errors never leak internals', () => {
  let broken: TestApp;
  beforeAll(async () => {
    broken = await createTestApp();
  });
  afterAll(async () => {
    await broken?.close();
  });

  it('a failing query → 500 INTERNAL_ERROR "internal error", and the transaction is rolled back', async () => {
    await broken.db.sql`DROP TABLE signing_keys`;
    const res = await broken.request('POST', '/v1/endpoints', { body: { url: URL_OK } });
    expectError(res, 500, 'INTERNAL_ERROR');
    expect(res.body.error.message).toBe('internal error');
    expectNoInternals(res);
    expect(res.raw).not.toContain('signing_keys');
    expect(res.raw).not.toContain('relation');
    const [row] = await broken.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM endpoints`;
    expect(row!.n).toBe(0);
  });

  it('a database that is gone → 500 or 503 in the envelope, with nothing internal', async () => {
    await broken.db.close();
    for (const [method, url, body] of [
      ['GET', '/v1/whoami', undefined],
      ['GET', '/v1/endpoints', undefined],
      ['POST', '/v1/endpoints', { url: URL_OK }],
    ] as const) {
      const res = await broken.request(method, url, body ? { body } : {});
      expect([500, 503], res.raw).toContain(res.status);
      expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
      if (res.status === 500) {
        expect(res.body.error.code).toBe('INTERNAL_ERROR');
        expect(res.body.error.message).toBe('internal error');
      } else {
        expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
        expect(res.headers['retry-after']).toBeDefined();
      }
      expectNoInternals(res);
    }
    const ready = await broken.request('GET', '/readyz', { apiKey: null });
    expectError(ready, 503, 'SERVICE_UNAVAILABLE');
    expect(ready.headers['retry-after']).toBeDefined();
    expectNoInternals(ready);
    // Liveness does not depend on the database.
    expect((await broken.request('GET', '/healthz', { apiKey: null })).status).toBe(200);
  });
});
