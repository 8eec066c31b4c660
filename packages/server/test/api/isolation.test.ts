import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp, type TestProjectKey } from '../helpers/app.js';

/**
 * Project isolation (docs/api.md, Status codes): a key sees only its own
 * project's endpoints; another project's endpoint is "not found", never "forbidden".
 */

let t: TestApp;
let other: TestProjectKey;
let mine: Record<string, any>;
beforeAll(async () => {
  t = await createTestApp();
  other = await t.createProject();
  const res = await t.request('POST', '/v1/endpoints', {
    body: { url: 'https://example.com/mine', description: 'first project', rate_limit_rps: 3, headers: { 'X-Mine': '1' } },
  });
  expect(res.status, res.raw).toBe(201);
  mine = res.body.data;
});
afterAll(async () => {
  await t?.close();
});

async function listIds(apiKey: string): Promise<string[]> {
  const res = await t.request('GET', '/v1/endpoints?limit=200', { apiKey });
  expect(res.status, res.raw).toBe(200);
  return res.body.data.map((s: { id: string }) => s.id);
}

describe("another project's key", () => {
  it("cannot read, change, pause, resume, rotate or delete the first project's endpoint", async () => {
    const as = { apiKey: other.apiKey };
    const base = `/v1/endpoints/${mine.id}`;
    const get = expectError(await t.request('GET', base, as), 404, 'ENDPOINT_NOT_FOUND');
    expect(get).not.toMatch(/forbidden|permission|another project/i);
    expectError(await t.request('PATCH', base, { ...as, body: { description: 'hijacked', paused: true } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('PATCH', base, { ...as, body: { url: 'https://evil.example/x' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `${base}/pause`, as), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `${base}/resume`, as), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `${base}/rotate-secret`, as), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('DELETE', base, as), 404, 'ENDPOINT_NOT_FOUND');
  });

  it('answers exactly as for an id that exists nowhere', async () => {
    const nowhere = await t.request('GET', `/v1/endpoints/ep_${'0'.repeat(32)}`, { apiKey: other.apiKey });
    const foreign = await t.request('GET', `/v1/endpoints/${mine.id}`, { apiKey: other.apiKey });
    expect(foreign.status).toBe(nowhere.status);
    expect(foreign.body.error.code).toBe(nowhere.body.error.code);
  });

  it('sees an empty list', async () => {
    const res = await t.request('GET', '/v1/endpoints', { apiKey: other.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(res.body.meta.next_cursor).toBeNull();
  });

  it("left the first project's endpoint untouched", async () => {
    const res = await t.request('GET', `/v1/endpoints/${mine.id}`);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({
      id: mine.id,
      url: 'https://example.com/mine',
      description: 'first project',
      rate_limit_rps: 3,
      headers: { 'X-Mine': '1' },
      paused: false,
    });
    const keys = await t.db.sql<{ id: string; expires_at: Date | null }>`SELECT id, expires_at FROM signing_keys WHERE owner_id = ${mine.id}`;
    expect(keys).toEqual([{ id: mine.signing_key_id, expires_at: null }]);
    const [row] = await t.db.sql<{ deleted_at: Date | null }>`SELECT deleted_at FROM endpoints WHERE id = ${mine.id}`;
    expect(row!.deleted_at).toBeNull();
  });
});

describe('in the other direction', () => {
  it("the first project neither lists nor reaches the second project's endpoints", async () => {
    const created = await t.request('POST', '/v1/endpoints', { apiKey: other.apiKey, body: { url: 'https://example.com/theirs' } });
    expect(created.status, created.raw).toBe(201);
    const theirs = created.body.data.id as string;

    expect(await listIds(other.apiKey)).toEqual([theirs]);
    const mineList = await listIds(t.main.apiKey);
    expect(mineList).toContain(mine.id);
    expect(mineList).not.toContain(theirs);

    expectError(await t.request('GET', `/v1/endpoints/${theirs}`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('PATCH', `/v1/endpoints/${theirs}`, { body: { description: 'x' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${theirs}/pause`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `/v1/endpoints/${theirs}/rotate-secret`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('DELETE', `/v1/endpoints/${theirs}`), 404, 'ENDPOINT_NOT_FOUND');

    const still = await t.request('GET', `/v1/endpoints/${theirs}`, { apiKey: other.apiKey });
    expect(still.status).toBe(200);
    expect(still.body.data.paused).toBe(false);
  });

  it('pagination cursors do not leak across projects', async () => {
    const third = await t.createProject();
    for (let i = 0; i < 3; i++) {
      expect((await t.request('POST', '/v1/endpoints', { apiKey: third.apiKey, body: { url: `https://example.com/third/${i}` } })).status).toBe(201);
    }
    const page = await t.request('GET', '/v1/endpoints?limit=1', { apiKey: third.apiKey });
    const cursor = page.body.meta.next_cursor as string;
    expect(typeof cursor).toBe('string');
    // The third project's cursor, used with the first project's key, still lists only the first project's endpoints.
    const res = await t.request('GET', `/v1/endpoints?limit=200&cursor=${encodeURIComponent(cursor)}`);
    expect(res.status).toBe(200);
    const thirdIds = await listIds(third.apiKey);
    expect(thirdIds).toHaveLength(3);
    const ids = (res.body.data as { id: string }[]).map((s) => s.id);
    expect(ids).toContain(mine.id);
    for (const id of ids) expect(thirdIds).not.toContain(id);
  });
});
