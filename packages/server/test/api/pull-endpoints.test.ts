import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createPull, ingestEvent, ingestPull } from '../helpers/pull.js';
import { expiredPullEndpointsSweeper } from '../../src/sweepers/pull.js';
import { runSweeperOnce } from '../../src/sweepers/runner.js';

/** Pull endpoints: CRUD, pause/resume, delete and the state table through the ingestion URL. */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { HOOKRELAY_PUBLIC_URL: 'https://hooks.example.test' } });
});
afterAll(async () => {
  await t?.close();
});

const UNKNOWN = '01900000-0000-7000-8000-000000000000';

describe('POST /v1/pull-endpoints', () => {
  it('creates with defaults and shows the secret token and full ingest URL once', async () => {
    const res = await t.request('POST', '/v1/pull-endpoints', { body: { name: 'stripe events' } });
    expect(res.status, res.raw).toBe(201);
    const d = res.body.data;
    expect(d).toMatchObject({
      name: 'stripe events',
      description: '',
      retention_days: 7,
      event_type_source: null,
      event_type_path: null,
      active: true,
      paused: false,
    });
    expect(d.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(d.secret_token).toMatch(/^[0-9a-f]{32}$/);
    expect(d.ingest_url).toBe(`https://hooks.example.test/pull/${d.id}`);
    expect(d.full_ingest_url).toBe(`${d.ingest_url}/${d.secret_token}`);
    expect(d.event_counts).toBeUndefined();
    expect(Date.parse(d.created_at)).not.toBeNaN();
    expect(d.updated_at).toBe(d.created_at);

    // Stored as a SHA-256 hash only, and never shown again.
    const [row] = await t.db.sql<{ secret_token_hash: string }>`SELECT secret_token_hash FROM pull_endpoints WHERE id = ${d.id}`;
    expect(row!.secret_token_hash).toBe(createHash('sha256').update(d.secret_token).digest('hex'));
    const dump = JSON.stringify((await t.db.sql`SELECT * FROM pull_endpoints WHERE id = ${d.id}`)[0]);
    expect(dump).not.toContain(d.secret_token);
    const get = await t.request('GET', `/v1/pull-endpoints/${d.id}`);
    expect(get.raw).not.toContain(d.secret_token);
    expect(get.body.data.secret_token).toBeUndefined();
    expect(get.body.data.full_ingest_url).toBeUndefined();
    const list = await t.request('GET', '/v1/pull-endpoints');
    expect(list.raw).not.toContain(d.secret_token);
  });

  it('takes description, retention_days and extraction settings', async () => {
    const res = await t.request('POST', '/v1/pull-endpoints', {
      body: { name: 'gh', description: 'GitHub events', retention_days: 90, event_type_source: 'header', event_type_path: 'X-GitHub-Event' },
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data).toMatchObject({ description: 'GitHub events', retention_days: 90, event_type_source: 'header', event_type_path: 'X-GitHub-Event' });
  });

  it('validates retention_days (1–90), name and extraction settings, naming the field', async () => {
    const post = (body: Record<string, unknown>) => t.request('POST', '/v1/pull-endpoints', { body });
    expect((await post({ name: 'a', retention_days: 1 })).status).toBe(201);
    expectError(await post({ name: 'a', retention_days: 0 }), 400, 'INVALID_REQUEST', 'body.retention_days');
    expectError(await post({ name: 'a', retention_days: 91 }), 400, 'INVALID_REQUEST', 'body.retention_days');
    expectError(await post({ name: 'a', retention_days: 7.5 }), 400, 'INVALID_REQUEST', 'body.retention_days');
    expectError(await post({}), 400, 'INVALID_REQUEST', 'body.name');
    expectError(await post({ name: 'a', event_type_source: 'body' }), 400, 'INVALID_REQUEST', 'body.event_type_path');
    expectError(await post({ name: 'a', event_type_source: 'xml', event_type_path: 'a' }), 400, 'INVALID_REQUEST', 'body.event_type_source');
    expectError(await post({ name: 'a', event_type_source: 'body', event_type_path: 'a..b' }), 400, 'INVALID_REQUEST', 'body.event_type_path');
    expectError(await post({ name: 'a', event_type_source: 'header', event_type_path: 'X Bad' }), 400, 'INVALID_REQUEST', 'body.event_type_path');
    expectError(await post({ name: 'a', secret_token: 'c'.repeat(32) }), 400, 'INVALID_REQUEST', 'secret_token');
    expectError(await t.request('POST', '/v1/pull-endpoints', { body: { name: 'a' }, apiKey: null }), 401, 'UNAUTHORIZED');
  });
});

describe('GET /v1/pull-endpoints/{id}', () => {
  it('returns the record with event_counts by status and deleted', async () => {
    const ep = await createPull(t);
    const empty = await t.request('GET', `/v1/pull-endpoints/${ep.id}`);
    expect(empty.status).toBe(200);
    expect(empty.body.data.event_counts).toEqual({ stored: 0, fetched: 0, delivered: 0, deleted: 0 });
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await ingestEvent(t, ep));
    await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${ids[0]}`);
    await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${ids[1]}`);
    await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${ids[1]}/ack`);
    await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${ids[2]}`);
    const res = await t.request('GET', `/v1/pull-endpoints/${ep.id}`);
    expect(res.body.data).toMatchObject({ id: ep.id, ingest_url: ep.ingestUrl, active: true, paused: false });
    expect(res.body.data.event_counts).toEqual({ stored: 2, fetched: 1, delivered: 1, deleted: 1 });
  });

  it('is 404 ENDPOINT_NOT_FOUND for unknown ids, 400 for malformed ones', async () => {
    expectError(await t.request('GET', `/v1/pull-endpoints/${UNKNOWN}`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('GET', '/v1/pull-endpoints/nope'), 400, 'INVALID_REQUEST', 'path.id');
  });
});

describe('GET /v1/pull-endpoints', () => {
  it('lists newest first without event_counts, pages with limit and cursor, next_cursor null at the end', async () => {
    const other = await t.createProject();
    const created = [];
    for (let i = 0; i < 5; i++) created.push((await createPull(t, { name: `list ${i}` }, other.apiKey)).id);
    const first = await t.request('GET', '/v1/pull-endpoints?limit=2', { apiKey: other.apiKey });
    expect(first.status).toBe(200);
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual([created[4], created[3]]);
    expect(first.body.data[0].event_counts).toBeUndefined();
    expect(first.body.data[0]).toMatchObject({ name: 'list 4', retention_days: 7, active: true, paused: false });
    expect(first.body.data[0].ingest_url).toMatch(/\/pull\/[0-9a-f-]{36}$/);
    const ids = [...first.body.data.map((e: { id: string }) => e.id)];
    let cursor = first.body.meta.next_cursor;
    while (cursor) {
      const next = await t.request('GET', `/v1/pull-endpoints?limit=2&cursor=${cursor}`, { apiKey: other.apiKey });
      ids.push(...next.body.data.map((e: { id: string }) => e.id));
      cursor = next.body.meta.next_cursor;
    }
    expect(ids).toEqual([...created].reverse());
    const all = await t.request('GET', '/v1/pull-endpoints', { apiKey: other.apiKey });
    expect(all.body.data).toHaveLength(5);
    expect(all.body.meta.next_cursor).toBeNull();
  });

  it('validates limit 1–200 and the cursor', async () => {
    expect((await t.request('GET', '/v1/pull-endpoints?limit=1')).status).toBe(200);
    expect((await t.request('GET', '/v1/pull-endpoints?limit=200')).status).toBe(200);
    expectError(await t.request('GET', '/v1/pull-endpoints?limit=0'), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await t.request('GET', '/v1/pull-endpoints?limit=201'), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await t.request('GET', '/v1/pull-endpoints?cursor=garbage'), 400, 'INVALID_REQUEST', 'query.cursor');
  });
});

describe('PATCH /v1/pull-endpoints/{id}', () => {
  it('changes the given settings, keeps the others, and returns the record', async () => {
    const ep = await createPull(t, { description: 'before', retention_days: 3 });
    const res = await t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body: { description: 'after', retention_days: 30 } });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({ id: ep.id, name: 'pull test', description: 'after', retention_days: 30, ingest_url: ep.ingestUrl });
    expect(res.body.data.event_counts).toBeUndefined();
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(res.body.data.created_at));
    const renamed = await t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body: { name: 'renamed' } });
    expect(renamed.body.data).toMatchObject({ name: 'renamed', description: 'after', retention_days: 30 });
    expectError(await t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body: { retention_days: 91 } }), 400, 'INVALID_REQUEST', 'body.retention_days');
    expectError(await t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body: { paused: true } }), 400, 'INVALID_REQUEST', 'paused');
    expectError(await t.request('PATCH', `/v1/pull-endpoints/${UNKNOWN}`, { body: { description: 'x' } }), 404, 'ENDPOINT_NOT_FOUND');
  });

  it('configures, changes and clears event type extraction', async () => {
    const ep = await createPull(t);
    const patch = (body: Record<string, unknown>) => t.request('PATCH', `/v1/pull-endpoints/${ep.id}`, { body });
    const set = await patch({ event_type_source: 'body', event_type_path: 'data.type' });
    expect(set.body.data).toMatchObject({ event_type_source: 'body', event_type_path: 'data.type' });
    // A new path alone keeps the stored source, and must suit it.
    expect((await patch({ event_type_path: 'kind' })).body.data).toMatchObject({ event_type_source: 'body', event_type_path: 'kind' });
    expectError(await patch({ event_type_path: 'a..b' }), 400, 'INVALID_REQUEST', 'body.event_type_path');
    // A new source alone keeps the stored path, and the path must suit the new source.
    expect((await patch({ event_type_source: 'header' })).body.data).toMatchObject({ event_type_source: 'header', event_type_path: 'kind' });
    await patch({ event_type_source: 'body', event_type_path: 'a.b' });
    expect((await patch({ event_type_source: 'header' })).status).toBe(200); // "a.b" is a valid header name
    await patch({ event_type_source: 'header', event_type_path: 'X-Type' });
    expect((await patch({ event_type_source: 'body' })).body.data).toMatchObject({ event_type_source: 'body', event_type_path: 'X-Type' });
    // "" clears both.
    const cleared = await patch({ event_type_source: '' });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toMatchObject({ event_type_source: null, event_type_path: null });
    expect((await patch({ event_type_source: '', event_type_path: '' })).status).toBe(200);
    // With nothing stored, one half alone is not enough.
    expectError(await patch({ event_type_path: 'type' }), 400, 'INVALID_REQUEST', 'body.event_type_source');
    expectError(await patch({ event_type_source: 'body' }), 400, 'INVALID_REQUEST', 'body.event_type_path');
    expectError(await patch({ event_type_path: '' }), 400, 'INVALID_REQUEST', 'body.event_type_path');
    expect((await t.request('GET', `/v1/pull-endpoints/${ep.id}`)).body.data).toMatchObject({ event_type_source: null, event_type_path: null });
  });
});

describe('state table through the ingestion URL', () => {
  it('active → paused: 503 ENDPOINT_PAUSED with Retry-After, nothing stored, existing events retrievable', async () => {
    const ep = await createPull(t);
    const before = await ingestEvent(t, ep, { body: '{"n":1}' });
    const pause = await t.request('POST', `/v1/pull-endpoints/${ep.id}/pause`);
    expect(pause.status).toBe(200);
    expect(pause.body.data).toEqual({ id: ep.id, paused: true });
    expect((await t.request('POST', `/v1/pull-endpoints/${ep.id}/pause`)).body.data).toEqual({ id: ep.id, paused: true });
    expect((await t.request('GET', `/v1/pull-endpoints/${ep.id}`)).body.data.paused).toBe(true);

    for (const method of ['POST', 'PUT', 'PATCH']) {
      const res = await ingestPull(t, ep, { method, body: '{"n":2}' });
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('ENDPOINT_PAUSED');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    const { n } = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM pull_events WHERE endpoint_id = ${ep.id}`)[0]!;
    expect(n).toBe(1);
    const { p } = (await t.db.sql<{ p: number }>`SELECT count(*)::int AS p FROM payloads WHERE key LIKE 'pull/%' AND key = ${`pull/${before}`}`)[0]!;
    expect(p).toBe(1);

    const list = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events`);
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([before]);
    const fetched = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${before}`);
    expect(fetched.body.data.body).toEqual({ n: 1 });
    expect((await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${before}/ack`)).status).toBe(200);

    const resume = await t.request('POST', `/v1/pull-endpoints/${ep.id}/resume`);
    expect(resume.body.data).toEqual({ id: ep.id, paused: false });
    expect((await t.request('POST', `/v1/pull-endpoints/${ep.id}/resume`)).body.data).toEqual({ id: ep.id, paused: false });
    const after = await ingestEvent(t, ep, { body: '{"n":3}' });
    expect((await t.request('GET', `/v1/pull-endpoints/${ep.id}/events`)).body.data.map((e: { id: string }) => e.id)).toEqual([after]);
  });

  it('once a pause or delete has answered, no further event is stored, even with webhooks in flight', async () => {
    for (const action of ['pause', 'delete'] as const) {
      const ep = await createPull(t);
      const inFlight = Array.from({ length: 80 }, (_, i) => ingestPull(t, ep, { body: JSON.stringify({ i }) }));
      await new Promise((r) => setImmediate(r));
      const res = action === 'pause' ? await t.request('POST', `/v1/pull-endpoints/${ep.id}/pause`) : await t.request('DELETE', `/v1/pull-endpoints/${ep.id}`);
      expect(res.status).toBe(200);
      const { n: atAnswer } = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM pull_events WHERE endpoint_id = ${ep.id}`)[0]!;
      const answers = await Promise.all(inFlight);
      const { n: afterAll } = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM pull_events WHERE endpoint_id = ${ep.id}`)[0]!;
      expect(afterAll).toBe(atAnswer);
      const stored = answers.filter((a) => a.statusCode === 200).length;
      expect(stored).toBe(afterAll);
      const refused = answers.filter((a) => a.statusCode !== 200);
      expect(refused.every((a) => a.statusCode === (action === 'pause' ? 503 : 410))).toBe(true);
      expect(stored + refused.length).toBe(80);
    }
  });

  it('active or paused → deleted: 410 GONE at the ingestion URL, 404 ENDPOINT_NOT_FOUND everywhere in the API, gone from the list', async () => {
    for (const pausedFirst of [false, true]) {
      const ep = await createPull(t);
      const eventId = await ingestEvent(t, ep);
      if (pausedFirst) await t.request('POST', `/v1/pull-endpoints/${ep.id}/pause`);
      const del = await t.request('DELETE', `/v1/pull-endpoints/${ep.id}`);
      expect(del.status).toBe(200);
      expect(del.body.data).toEqual({ id: ep.id, deleted: true });

      const gone = await ingestPull(t, ep, { body: '{}' });
      expect(gone.statusCode).toBe(410);
      expect(gone.json().error.code).toBe('GONE');
      // The state is told only to a caller holding the token.
      expect((await ingestPull(t, { path: `/pull/${ep.id}/${'0'.repeat(32)}` })).statusCode).toBe(404);
      const { n } = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM pull_events WHERE endpoint_id = ${ep.id}`)[0]!;
      expect(n).toBe(1);

      const base = `/v1/pull-endpoints/${ep.id}`;
      expectError(await t.request('GET', base), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('PATCH', base, { body: { description: 'x' } }), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('POST', `${base}/pause`), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('POST', `${base}/resume`), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('DELETE', base), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('GET', `${base}/events`), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('GET', `${base}/events/${eventId}`), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('POST', `${base}/events/${eventId}/ack`), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('DELETE', `${base}/events/${eventId}`), 404, 'ENDPOINT_NOT_FOUND');
      expectError(await t.request('POST', `${base}/events/delete-all`), 404, 'ENDPOINT_NOT_FOUND');
      const list = await t.request('GET', '/v1/pull-endpoints?limit=200');
      expect(list.body.data.map((e: { id: string }) => e.id)).not.toContain(ep.id);
    }
  });
});

describe('ephemeral pull endpoints', () => {
  const MINUTE = 60_000;
  const ms = (iso: string) => Date.parse(iso);
  const create = (body: Record<string, unknown>) => t.request('POST', '/v1/pull-endpoints', { body: { name: 'ephemeral', ...body } });

  it('expire 30 minutes after creation by default, ttl_minutes sets another TTL, and the record shows ephemeral and expires_at', async () => {
    const created = await create({ ephemeral: true });
    expect(created.status, created.raw).toBe(201);
    const d = created.body.data;
    expect(d.ephemeral).toBe(true);
    expect(Math.abs(ms(d.expires_at) - ms(d.created_at) - 30 * MINUTE)).toBeLessThan(5_000);
    const got = await t.request('GET', `/v1/pull-endpoints/${d.id}`);
    expect(got.body.data).toMatchObject({ ephemeral: true, expires_at: d.expires_at });
    const listed = (await t.request('GET', '/v1/pull-endpoints?limit=200')).body.data.find((e: { id: string }) => e.id === d.id);
    expect(listed).toMatchObject({ ephemeral: true, expires_at: d.expires_at });
    const custom = (await create({ ephemeral: true, ttl_minutes: 1440 })).body.data;
    expect(Math.abs(ms(custom.expires_at) - ms(custom.created_at) - 1440 * MINUTE)).toBeLessThan(5_000);
    const plain = (await create({ ttl_minutes: 10 })).body.data;
    expect(plain).toMatchObject({ ephemeral: false, expires_at: null });
  });

  it.each([0, 1441, 2.5, '30'])('refuses ttl_minutes %j', async (ttl) => {
    expectError(await create({ ephemeral: true, ttl_minutes: ttl }), 400, 'INVALID_REQUEST', 'ttl_minutes');
  });

  it('is gone once its TTL has elapsed (410 at the ingestion URL, 404 in the API), and the sweeper deletes it at its expiry', async () => {
    const eph = await createPull(t, { ephemeral: true, ttl_minutes: 1 });
    const keep = await createPull(t, { ephemeral: true, ttl_minutes: 1440 });
    const eventId = await ingestEvent(t, eph);
    await t.db.sql`UPDATE pull_endpoints SET expires_at = now() - interval '1 second' WHERE id = ${eph.id}`;
    const gone = await ingestPull(t, eph, { body: '{}' });
    expect(gone.statusCode).toBe(410);
    expect(gone.json().error.code).toBe('GONE');
    const base = `/v1/pull-endpoints/${eph.id}`;
    expectError(await t.request('GET', base), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('PATCH', base, { body: { description: 'x' } }), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('POST', `${base}/pause`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('DELETE', base), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('GET', `${base}/events`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('GET', `${base}/events/${eventId}`), 404, 'ENDPOINT_NOT_FOUND');
    expectError(await t.request('GET', `${base}/rejections`), 404, 'ENDPOINT_NOT_FOUND');
    const list = await t.request('GET', '/v1/pull-endpoints?limit=200');
    expect(list.body.data.map((e: { id: string }) => e.id)).not.toContain(eph.id);

    const swept = await runSweeperOnce(t.db, expiredPullEndpointsSweeper, t.app.services);
    expect(swept).toBeGreaterThanOrEqual(1);
    const rows = await t.db.sql<{ id: string; deleted_at: Date | null; expires_at: Date }>`SELECT id, deleted_at, expires_at FROM pull_endpoints WHERE id IN (${eph.id}, ${keep.id})`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(eph.id)!.deleted_at?.toISOString()).toBe(byId.get(eph.id)!.expires_at.toISOString());
    expect(byId.get(keep.id)!.deleted_at).toBeNull();
    expect((await t.request('GET', `/v1/pull-endpoints/${keep.id}`)).status).toBe(200);
    expect(await runSweeperOnce(t.db, expiredPullEndpointsSweeper, t.app.services)).toBe(0);
  });
});
