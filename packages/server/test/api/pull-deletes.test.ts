import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { DatabasePayloadStore } from '../../src/storage/payload-store.js';
import { DEFAULT_SWEEPERS, runSweeperOnce } from '../../src/sweepers/runner.js';
import { deletedPullPayloadsSweeper, expiredPullEventsSweeper } from '../../src/sweepers/pull.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';
import { createPull, failingDatabase, ingestEvent, seedEvents } from '../helpers/pull.js';

/** Single, batch and delete-all deletes of pull events, their failures, and the sweepers. */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const UNKNOWN = '01900000-0000-7000-8000-000000000000';

async function rowsOf(ids: readonly string[]) {
  return t.db.sql<{ id: string; status: string; deleted_at: Date | null; deleted_by_api_key_id: string | null; payload_key: string | null }>`
    SELECT id, status, deleted_at, deleted_by_api_key_id, payload_key FROM pull_events WHERE id = ANY(${[...ids]}::uuid[]) ORDER BY id`;
}

async function payloadCount(ids: readonly string[]): Promise<number> {
  const [row] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM payloads WHERE key = ANY(${ids.map((id) => `pull/${id}`)}::text[])`;
  return row!.n;
}

async function setStatus(id: string, status: 'fetched' | 'delivered') {
  await t.db.sql`UPDATE pull_events SET status = ${status}, fetched_at = received_at, delivered_at = CASE WHEN ${status} = 'delivered' THEN received_at END WHERE id = ${id}::uuid`;
}

describe('DELETE /v1/pull-endpoints/{id}/events/{event_id}', () => {
  it('soft-deletes: 200, metadata stays, payload unreachable at once, principal recorded; a repeat reports the first time', async () => {
    const ep = await createPull(t);
    const id = await ingestEvent(t, ep, { body: '{"card":"4242"}' });
    const first = await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    expect(first.status, first.raw).toBe(200);
    expect(first.body.data).toMatchObject({ event_id: id, already_deleted: false });
    const deletedAt = first.body.data.deleted_at;
    expect(Date.parse(deletedAt)).not.toBeNaN();
    const second = await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    expect(second.status).toBe(200);
    expect(second.body.data).toEqual({ event_id: id, deleted_at: deletedAt, already_deleted: true });

    const [row] = await rowsOf([id]);
    expect(row).toMatchObject({ status: 'stored', deleted_by_api_key_id: t.main.apiKeyId });
    const detail = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    expect(detail.body.data).toMatchObject({ id, deleted_at: deletedAt, size_bytes: 15 });
    expect(detail.raw).not.toContain('4242');
  });

  it('is 404 NOT_FOUND for unknown events and events of another endpoint, 400 for malformed ids', async () => {
    const ep = await createPull(t);
    const other = await createPull(t);
    const theirs = await ingestEvent(t, other);
    expectError(await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${UNKNOWN}`), 404, 'NOT_FOUND');
    expectError(await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${theirs}`), 404, 'NOT_FOUND');
    expectError(await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/zzz`), 400, 'INVALID_REQUEST');
    expect((await rowsOf([theirs]))[0]!.deleted_at).toBeNull();
  });
});

describe('POST /v1/pull-endpoints/{id}/events/delete-batch', () => {
  it('takes message_ids, reports event_id outcomes and the three counts', async () => {
    const ep = await createPull(t);
    const other = await createPull(t);
    const [a, b, gone] = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2] });
    const [theirs] = await seedEvents(t.db, other, t.main.projectId, { times: [T0] });
    const goneAt = (await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${gone}`)).body.data.deleted_at;
    const res = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-batch`, {
      body: { message_ids: [a, b!.toUpperCase(), gone, theirs, UNKNOWN, a] },
    });
    expect(res.status, res.raw).toBe(200);
    const d = res.body.data;
    expect(d.results.map((r: { event_id: string; outcome: string }) => [r.event_id, r.outcome])).toEqual([
      [a, 'deleted'],
      [b, 'deleted'],
      [gone, 'already_deleted'],
      [theirs, 'not_found'],
      [UNKNOWN, 'not_found'],
    ]);
    expect(d.results[2].deleted_at).toBe(goneAt);
    expect(d.results[0].deleted_at).toBeDefined();
    expect(d.results[3].deleted_at).toBeUndefined();
    expect(d.results[0].message_id).toBeUndefined();
    expect([d.deleted_count, d.already_deleted_count, d.not_found_count]).toEqual([2, 1, 2]);
    const rows = await rowsOf([a!, b!]);
    expect(rows.every((r) => r.deleted_at !== null && r.deleted_by_api_key_id === t.main.apiKeyId)).toBe(true);
    expect((await rowsOf([theirs!]))[0]!.deleted_at).toBeNull();
  });

  it('takes 1 to 100 UUIDs', async () => {
    const ep = await createPull(t);
    const path = `/v1/pull-endpoints/${ep.id}/events/delete-batch`;
    const many = (n: number) => Array.from({ length: n }, (_, i) => `01900000-0000-7000-8000-${i.toString(16).padStart(12, '0')}`);
    expect((await t.request('POST', path, { body: { message_ids: many(100) } })).body.data.not_found_count).toBe(100);
    expectError(await t.request('POST', path, { body: { message_ids: many(101) } }), 400, 'INVALID_REQUEST', 'body.message_ids');
    expectError(await t.request('POST', path, { body: { message_ids: [] } }), 400, 'INVALID_REQUEST', 'body.message_ids');
    expectError(await t.request('POST', path, { body: { message_ids: ['nope'] } }), 400, 'INVALID_REQUEST', 'body.message_ids');
    expectError(await t.request('POST', path, { body: { event_ids: many(1) } }), 400, 'INVALID_REQUEST');
    expectError(await t.request('POST', path, {}), 400, 'INVALID_REQUEST');
  });
});

describe('POST /v1/pull-endpoints/{id}/events/delete-all', () => {
  it('without status deletes every status, oldest first, and returns the count and ids', async () => {
    const ep = await createPull(t);
    const seeded = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2, T0 + 3] });
    await setStatus(seeded[1]!, 'fetched');
    await setStatus(seeded[2]!, 'delivered');
    await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${seeded[3]}`);
    const res = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ deleted: 3, deleted_event_ids: seeded.slice(0, 3) });
    expect(res.body.error).toBeUndefined();
    const rows = await rowsOf(seeded.slice(0, 3));
    expect(rows.map((r) => r.status)).toEqual(['stored', 'fetched', 'delivered']);
    expect(rows.every((r) => r.deleted_at !== null && r.deleted_by_api_key_id === t.main.apiKeyId)).toBe(true);
    const again = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`);
    expect(again.body.data).toEqual({ deleted: 0, deleted_event_ids: [] });
    for (const id of seeded.slice(0, 3)) expect((await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`)).body.data.body).toBeUndefined();
  });

  it('applies status, event_type and time filters from the query string', async () => {
    const ep = await createPull(t);
    const seeded = await seedEvents(t.db, ep, t.main.projectId, {
      times: Array.from({ length: 8 }, (_, i) => T0 + i),
      eventType: (i) => (i % 2 === 0 ? 'a' : 'b'),
    });
    await setStatus(seeded[2]!, 'delivered');
    await setStatus(seeded[4]!, 'delivered');
    const base = `/v1/pull-endpoints/${ep.id}/events/delete-all`;
    const delivered = await t.request('POST', `${base}?status=delivered&event_type=a&received_after=${iso(T0 + 3)}`);
    expect(delivered.body.data).toEqual({ deleted: 1, deleted_event_ids: [seeded[4]] });
    const windowed = await t.request('POST', `${base}?status=stored&received_after=${iso(T0 + 1)}&received_before=${iso(T0 + 6)}&event_type=b`);
    expect(windowed.body.data.deleted_event_ids).toEqual([seeded[1], seeded[3], seeded[5]]);
    const remaining = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events?status=stored,fetched,delivered`);
    expect(remaining.body.data.map((e: { id: string }) => e.id)).toEqual([seeded[0], seeded[2], seeded[6], seeded[7]]);
  });

  it('takes the same parameters as a JSON body; the body wins over the query string', async () => {
    const ep = await createPull(t);
    const seeded = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2], eventType: (i) => (i === 1 ? 'keep' : 'drop') });
    const res = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all?event_type=keep`, {
      body: { event_type: 'drop', status: ['stored'], limit: 1 },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toEqual({ deleted: 1, deleted_event_ids: [seeded[0]] });
    const bodyStatus = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`, { body: { status: 'stored,fetched', event_type: 'drop' } });
    expect(bodyStatus.body.data.deleted_event_ids).toEqual([seeded[2]]);
    expectError(
      await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`, { body: { limit: '5' } }),
      400,
      'INVALID_REQUEST',
      'body.limit',
    );
    expectError(await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`, { body: { status: 'gone' } }), 400, 'INVALID_REQUEST', 'body.status');
    expectError(await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`, { body: { ids: [] } }), 400, 'INVALID_REQUEST', 'body.ids');
    expectError(await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`, { rawBody: '{oops', headers: { 'content-type': 'application/json' } }), 400, 'INVALID_REQUEST');
    expect((await rowsOf([seeded[1]!]))[0]!.deleted_at).toBeNull();
  });

  it('limit: 1 to 1000, default 1000, spread over chunks of 100; 0 and 1001 are 400', async () => {
    const ep = await createPull(t);
    const seeded = await seedEvents(t.db, ep, t.main.projectId, { times: Array.from({ length: 1205 }, (_, i) => T0 + Math.floor(i / 2)) });
    const base = `/v1/pull-endpoints/${ep.id}/events/delete-all`;
    expectError(await t.request('POST', `${base}?limit=0`), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await t.request('POST', `${base}?limit=1001`), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await t.request('POST', base, { body: { limit: 0 } }), 400, 'INVALID_REQUEST', 'body.limit');
    expectError(await t.request('POST', base, { body: { limit: 1001 } }), 400, 'INVALID_REQUEST', 'body.limit');
    const sorted = [...seeded].sort();
    const one = await t.request('POST', `${base}?limit=1`);
    expect(one.body.data).toEqual({ deleted: 1, deleted_event_ids: [sorted[0]] });
    const partialChunk = await t.request('POST', `${base}?limit=150`);
    expect(partialChunk.body.data.deleted_event_ids).toEqual(sorted.slice(1, 151));
    const byDefault = await t.request('POST', base);
    expect(byDefault.body.data.deleted).toBe(1000);
    expect(byDefault.body.data.deleted_event_ids).toEqual(sorted.slice(151, 1151));
    const rest = await t.request('POST', `${base}?limit=1000`);
    expect(rest.body.data.deleted_event_ids).toEqual(sorted.slice(1151));
    const { n } = (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM pull_events WHERE endpoint_id = ${ep.id} AND deleted_at IS NULL`)[0]!;
    expect(n).toBe(0);
  });

  it('leaves other endpoints alone', async () => {
    const ep = await createPull(t);
    const other = await createPull(t);
    const [theirs] = await seedEvents(t.db, other, t.main.projectId, { times: [T0] });
    await seedEvents(t.db, ep, t.main.projectId, { times: [T0] });
    expect((await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`)).body.data.deleted).toBe(1);
    expect((await rowsOf([theirs!]))[0]!.deleted_at).toBeNull();
  });
});

describe('delete-all failures (an injected database error on the Nth chunk)', () => {
  let db: Database;
  let f: TestApp;
  let failOnChunk = 0;
  let chunk = 0;
  beforeAll(async () => {
    db = await createTestDatabase();
    const failing = failingDatabase(db, (text) => {
      if (!text.includes('UPDATE pull_events e SET deleted_at')) return false;
      chunk++;
      return failOnChunk !== 0 && chunk === failOnChunk;
    });
    f = await createTestApp({ db: failing });
  });
  afterAll(async () => {
    await f?.close();
    await db?.close();
  });

  it('DELETE_FAILED (500) when nothing was committed, with data { deleted: 0, deleted_event_ids: [] }', async () => {
    const ep = await createPull(f);
    const seeded = await seedEvents(db, ep, f.main.projectId, { times: Array.from({ length: 250 }, (_, i) => T0 + i) });
    chunk = 0;
    failOnChunk = 1;
    const res = await f.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`);
    expect(res.status, res.raw).toBe(500);
    expect(res.body.error).toEqual({ code: 'DELETE_FAILED', message: expect.any(String) });
    expect(res.body.data).toEqual({ deleted: 0, deleted_event_ids: [] });
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
    expect(res.raw).not.toContain('injected');
    const { n } = (await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM pull_events WHERE endpoint_id = ${ep.id} AND deleted_at IS NULL`)[0]!;
    expect(n).toBe(seeded.length);
  });

  it('PARTIAL_DELETE_FAILURE (500) when earlier chunks committed, reporting exactly the committed ids', async () => {
    const ep = await createPull(f);
    const seeded = (await seedEvents(db, ep, f.main.projectId, { times: Array.from({ length: 250 }, (_, i) => T0 + i) })).sort();
    chunk = 0;
    failOnChunk = 3;
    const res = await f.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`);
    expect(res.status, res.raw).toBe(500);
    expect(res.body.error.code).toBe('PARTIAL_DELETE_FAILURE');
    expect(typeof res.body.error.message).toBe('string');
    expect(res.body.data).toEqual({ deleted: 200, deleted_event_ids: seeded.slice(0, 200) });
    const deleted = await db.sql<{ id: string }>`SELECT id FROM pull_events WHERE endpoint_id = ${ep.id} AND deleted_at IS NOT NULL ORDER BY id`;
    expect(deleted.map((r) => r.id)).toEqual(seeded.slice(0, 200));

    // Without the failure the rest goes.
    failOnChunk = 0;
    const rest = await f.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-all`);
    expect(rest.status).toBe(200);
    expect(rest.body.data.deleted_event_ids).toEqual(seeded.slice(200));
  });
});

describe('sweepers', () => {
  const deps = { payloadStore: new DatabasePayloadStore() };

  it('are registered, each with its own advisory lock key', () => {
    expect(DEFAULT_SWEEPERS).toContain(expiredPullEventsSweeper);
    expect(DEFAULT_SWEEPERS).toContain(deletedPullPayloadsSweeper);
    const keys = DEFAULT_SWEEPERS.map((s) => s.lockKey);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('remove the stored payloads of soft-deleted events, keeping their metadata', async () => {
    const ep = await createPull(t);
    const ids = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2] });
    await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/delete-batch`, { body: { message_ids: ids.slice(0, 2) } });
    expect(await payloadCount(ids)).toBe(3);
    let removed = 0;
    for (let run = 0; run < 10; run++) {
      const n = await runSweeperOnce(t.db, deletedPullPayloadsSweeper, deps);
      if (!n) break;
      removed += n;
    }
    expect(removed).toBeGreaterThanOrEqual(2);
    expect(await payloadCount(ids.slice(0, 2))).toBe(0);
    expect(await payloadCount(ids.slice(2))).toBe(1);
    const rows = await rowsOf(ids);
    expect(rows.map((r) => [r.deleted_at !== null, r.payload_key !== null])).toEqual([
      [true, false],
      [true, false],
      [false, true],
    ]);
    const detail = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${ids[0]}`);
    expect(detail.status).toBe(200);
    expect(detail.body.data.body).toBeUndefined();
    expect(detail.body.data.deleted_at).toBeDefined();
  });

  it('remove events past their endpoint’s retention, rows and payloads, and keep younger ones', async () => {
    const day = 24 * 60 * 60 * 1000;
    const now = Date.now();
    const short = await createPull(t, { retention_days: 1 });
    const long = await createPull(t, { retention_days: 90 });
    const [oldShort, youngShort] = await seedEvents(t.db, short, t.main.projectId, { times: [now - day - 60_000, now - day + 60_000] });
    const [oldLong, youngLong] = await seedEvents(t.db, long, t.main.projectId, { times: [now - 90 * day - 60_000, now - 89 * day] });
    // A soft-deleted event past retention goes too.
    await t.request('DELETE', `/v1/pull-endpoints/${short.id}/events/${oldShort}`);
    let removed = 0;
    for (let run = 0; run < 20; run++) {
      const n = await runSweeperOnce(t.db, expiredPullEventsSweeper, deps, new Date(now));
      if (!n) break;
      removed += n;
    }
    expect(removed).toBeGreaterThanOrEqual(2);
    const left = (await rowsOf([oldShort!, youngShort!, oldLong!, youngLong!])).map((r) => r.id);
    expect(left.sort()).toEqual([youngShort!, youngLong!].sort());
    expect(await payloadCount([oldShort!, oldLong!])).toBe(0);
    expect(await payloadCount([youngShort!, youngLong!])).toBe(2);
    // A shorter retention applies from the next run.
    await t.request('PATCH', `/v1/pull-endpoints/${long.id}`, { body: { retention_days: 1 } });
    await runSweeperOnce(t.db, expiredPullEventsSweeper, deps, new Date(now));
    expect(await rowsOf([youngLong!])).toEqual([]);
  });

  it('remove every event of a deleted endpoint', async () => {
    const ep = await createPull(t);
    const ids = await seedEvents(t.db, ep, t.main.projectId, { times: [Date.now() - 1000, Date.now()] });
    await t.request('DELETE', `/v1/pull-endpoints/${ep.id}`);
    await runSweeperOnce(t.db, expiredPullEventsSweeper, deps, new Date(Date.now() + 1000));
    expect(await rowsOf(ids)).toEqual([]);
    expect(await payloadCount(ids)).toBe(0);
  });

  it('drain a backlog in batches of 500 per run', async () => {
    const ep = await createPull(t, { retention_days: 1 });
    const old = Date.now() - 3 * 24 * 60 * 60 * 1000;
    const ids = await seedEvents(t.db, ep, t.main.projectId, { times: Array.from({ length: 700 }, (_, i) => old + i) });
    const first = await runSweeperOnce(t.db, expiredPullEventsSweeper, deps);
    expect(first).toBe(500);
    expect(await runSweeperOnce(t.db, expiredPullEventsSweeper, deps)).toBeGreaterThanOrEqual(200);
    expect(await rowsOf(ids)).toEqual([]);
  });
});
