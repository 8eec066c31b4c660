import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../src/db/database.js';
import { DatabasePayloadStore, PayloadUnavailableError } from '../../src/storage/payload-store.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { createPull, ingestEvent, listAll, seedEvents } from '../helpers/pull.js';

/** The events list (filters, boundaries, keyset paging), fetch, ack and the timing fields. */

class FlakyStore extends DatabasePayloadStore {
  failReads = false;
  override async get(sql: Sql, key: string) {
    if (this.failReads) throw new PayloadUnavailableError('store down');
    return super.get(sql, key);
  }
}

const store = new FlakyStore();
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ payloadStore: store });
});
afterAll(async () => {
  await t?.close();
});

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((e) => e.id);
const events = (endpointId: string, query = '') => t.request('GET', `/v1/pull-endpoints/${endpointId}/events${query ? `?${query}` : ''}`);

async function setStatus(id: string, status: 'stored' | 'fetched' | 'delivered') {
  await t.db.sql`
    UPDATE pull_events SET status = ${status},
      fetched_at = CASE WHEN ${status} = 'stored' THEN NULL ELSE received_at + interval '1 second' END,
      delivered_at = CASE WHEN ${status} = 'delivered' THEN received_at + interval '2 seconds' ELSE NULL END
    WHERE id = ${id}::uuid`;
}

describe('GET /v1/pull-endpoints/{id}/events', () => {
  it('lists stored events oldest first, metadata only, with the four timing fields', async () => {
    const ep = await createPull(t);
    const a = await ingestEvent(t, ep, { body: '{"a":1}', headers: { 'content-type': 'application/json', 'x-secret': 'no' } });
    const b = await ingestEvent(t, ep, { body: 'plain', headers: { 'content-type': 'text/plain' } });
    const res = await events(ep.id);
    expect(res.status, res.raw).toBe(200);
    expect(ids(res)).toEqual([a, b]);
    expect(res.body.meta).toEqual({ request_id: res.headers['x-request-id'], has_more: false, next_cursor: '' });
    const first = res.body.data[0];
    expect(Object.keys(first).sort()).toEqual(
      [
        'id',
        'endpoint_id',
        'status',
        'event_type',
        'content_type',
        'size_bytes',
        'payload_sha256',
        'received_at',
        'fetched_at',
        'delivered_at',
        'ingest_processing_ms',
        'time_to_first_fetch_ms',
        'fetch_to_ack_ms',
        'total_time_ms',
      ].sort(),
    );
    expect(first).toMatchObject({
      id: a,
      endpoint_id: ep.id,
      status: 'stored',
      event_type: null,
      content_type: 'application/json',
      size_bytes: 7,
      fetched_at: null,
      delivered_at: null,
      time_to_first_fetch_ms: null,
      fetch_to_ack_ms: null,
      total_time_ms: null,
    });
    expect(first.ingest_processing_ms).toBeGreaterThanOrEqual(0);
    expect(res.raw).not.toContain('x-secret');
  });

  it('an endpoint without events lists nothing', async () => {
    const ep = await createPull(t);
    const res = await events(ep.id);
    expect(res.body.data).toEqual([]);
    expect(res.body.meta).toMatchObject({ has_more: false, next_cursor: '' });
  });

  it('filters by status: default stored, a comma list, a repeated parameter; unknown values are 400', async () => {
    const ep = await createPull(t);
    const [s, f, d, s2] = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2, T0 + 3] });
    await setStatus(f!, 'fetched');
    await setStatus(d!, 'delivered');
    expect(ids(await events(ep.id))).toEqual([s, s2]);
    expect(ids(await events(ep.id, 'status=stored'))).toEqual([s, s2]);
    expect(ids(await events(ep.id, 'status=fetched'))).toEqual([f]);
    expect(ids(await events(ep.id, 'status=delivered'))).toEqual([d]);
    expect(ids(await events(ep.id, 'status=delivered,stored'))).toEqual([s, d, s2]);
    expect(ids(await events(ep.id, 'status=stored,fetched,delivered'))).toEqual([s, f, d, s2]);
    expect(ids(await events(ep.id, 'status=fetched&status=delivered'))).toEqual([f, d]);
    expectError(await events(ep.id, 'status=acked'), 400, 'INVALID_REQUEST', 'query.status');
    expectError(await events(ep.id, 'status=stored,deleted'), 400, 'INVALID_REQUEST', 'query.status');
    expectError(await events(ep.id, 'status='), 400, 'INVALID_REQUEST', 'query.status');
    expectError(await events(ep.id, 'statuses=stored'), 400, 'INVALID_REQUEST', 'statuses');
  });

  it('filters by exact event_type', async () => {
    const ep = await createPull(t);
    const types = ['push', 'push.tag', 'Push', null, 'push'];
    const seeded = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4], eventType: (i) => types[i]! });
    expect(ids(await events(ep.id, 'event_type=push'))).toEqual([seeded[0], seeded[4]]);
    expect(ids(await events(ep.id, 'event_type=push.tag'))).toEqual([seeded[1]]);
    expect(ids(await events(ep.id, 'event_type=pus'))).toEqual([]);
    expect(ids(await events(ep.id, 'event_type=push&status=stored,fetched'))).toEqual([seeded[0], seeded[4]]);
    expectError(await events(ep.id, 'event_type='), 400, 'INVALID_REQUEST', 'query.event_type');
  });

  it('received_after is inclusive and received_before exclusive, to the millisecond and below', async () => {
    const ep = await createPull(t);
    const [e0, e1, e2, e3] = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2, T0 + 1000] });
    const q = (s: string) => events(ep.id, s).then(ids);
    expect(await q(`received_after=${iso(T0 + 1)}`)).toEqual([e1, e2, e3]);
    expect(await q(`received_before=${iso(T0 + 1)}`)).toEqual([e0]);
    expect(await q(`received_after=${iso(T0 + 1)}&received_before=${iso(T0 + 2)}`)).toEqual([e1]);
    expect(await q(`received_after=${iso(T0)}&received_before=${iso(T0 + 1000)}`)).toEqual([e0, e1, e2]);
    expect(await q(`received_after=${iso(T0 + 1001)}`)).toEqual([]);
    expect(await q(`received_before=${iso(T0)}`)).toEqual([]);
    expect(await q(`received_after=${iso(T0 + 2)}&received_before=${iso(T0 + 2)}`)).toEqual([]);
    expect(await q(`received_after=${iso(T0 + 5)}&received_before=${iso(T0 + 1)}`)).toEqual([]);
    // Sub-millisecond bounds and other offsets.
    expect(await q('received_after=2026-03-01T12:00:00.0005Z')).toEqual([e1, e2, e3]);
    expect(await q('received_before=2026-03-01T12:00:00.0015Z')).toEqual([e0, e1]);
    expect(await q('received_after=2026-03-01T14:00:00.001%2B02:00&received_before=2026-03-01T12:00:00.002Z')).toEqual([e1]);
    expect(await q('received_after=1969-12-31T00:00:00Z')).toEqual([e0, e1, e2, e3]);
    expect(await q('received_before=1969-12-31T00:00:00Z')).toEqual([]);
    expect(await q('received_before=9999-12-31T23:59:59Z')).toEqual([e0, e1, e2, e3]);
    expectError(await events(ep.id, 'received_after=yesterday'), 400, 'INVALID_REQUEST', 'query.received_after');
    expectError(await events(ep.id, 'received_before=2026-03-01'), 400, 'INVALID_REQUEST', 'query.received_before');
  });

  it('limit: default 100, 1 to 1000; 0, 1001 and non-integers are 400', async () => {
    const ep = await createPull(t);
    const seeded = await seedEvents(t.db, ep, t.main.projectId, { times: Array.from({ length: 1001 }, (_, i) => T0 + i) });
    const byDefault = await events(ep.id);
    expect(byDefault.body.data).toHaveLength(100);
    expect(byDefault.body.meta.has_more).toBe(true);
    const one = await events(ep.id, 'limit=1');
    expect(ids(one)).toEqual([seeded[0]]);
    expect(one.body.meta.has_more).toBe(true);
    const max = await events(ep.id, 'limit=1000');
    expect(ids(max)).toEqual(seeded.slice(0, 1000));
    expect(max.body.meta.has_more).toBe(true);
    const last = await events(ep.id, `limit=1000&cursor=${max.body.meta.next_cursor}`);
    expect(ids(last)).toEqual([seeded[1000]]);
    expect(last.body.meta).toMatchObject({ has_more: false, next_cursor: '' });
    expectError(await events(ep.id, 'limit=0'), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await events(ep.id, 'limit=1001'), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await events(ep.id, 'limit=-1'), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await events(ep.id, 'limit=2.5'), 400, 'INVALID_REQUEST', 'query.limit');
    expectError(await events(ep.id, 'limit=ten'), 400, 'INVALID_REQUEST', 'query.limit');
  });

  it('a page of exactly the remaining events has has_more false and next_cursor ""', async () => {
    const ep = await createPull(t);
    await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2, T0 + 3] });
    const first = await events(ep.id, 'limit=2');
    expect(first.body.meta.has_more).toBe(true);
    const second = await events(ep.id, `limit=2&cursor=${first.body.meta.next_cursor}`);
    expect(second.body.data).toHaveLength(2);
    expect(second.body.meta).toMatchObject({ has_more: false, next_cursor: '' });
  });

  it('refuses a cursor it did not produce', async () => {
    const ep = await createPull(t);
    const endpointCursor = Buffer.from(JSON.stringify({ s: '5' })).toString('base64url');
    const wrongId = Buffer.from(JSON.stringify({ e: 'not-a-uuid' })).toString('base64url');
    for (const cursor of ['garbage', '%%%', endpointCursor, wrongId, Buffer.from('[]').toString('base64url')]) {
      expectError(await events(ep.id, `cursor=${cursor}`), 400, 'INVALID_REQUEST', 'query.cursor');
    }
    expectError(await events(ep.id, `cursor=${'a'.repeat(600)}`), 400, 'INVALID_REQUEST', 'query.cursor');
  });

  it('pages through 2,500 events with limit 1000: each once, in order', async () => {
    const ep = await createPull(t);
    // Several events per millisecond, too: ties are broken by id, never lost or repeated.
    const seeded = await seedEvents(t.db, ep, t.main.projectId, { times: Array.from({ length: 2500 }, (_, i) => T0 + Math.floor(i / 3)) });
    const { ids: listed, pages } = await listAll(t, ep.id, 'limit=1000');
    expect(pages).toBe(3);
    expect(listed).toHaveLength(2500);
    expect(new Set(listed).size).toBe(2500);
    expect(listed).toEqual([...seeded].sort());
  });

  it('pages in id order across several statuses and with time filters', async () => {
    const ep = await createPull(t);
    const seeded = await seedEvents(t.db, ep, t.main.projectId, {
      times: Array.from({ length: 60 }, (_, i) => T0 + i * 10),
      eventType: (i) => (i % 2 === 0 ? 'even' : 'odd'),
    });
    const statuses = ['stored', 'fetched', 'delivered'] as const;
    for (let i = 0; i < seeded.length; i++) if (i % 3 !== 0) await setStatus(seeded[i]!, statuses[i % 3]!);
    const all = await listAll(t, ep.id, 'status=stored,fetched,delivered&limit=7');
    expect(all.ids).toEqual(seeded);
    const twoStatuses = await listAll(t, ep.id, 'status=delivered,stored&limit=4');
    expect(twoStatuses.ids).toEqual(seeded.filter((_, i) => i % 3 !== 1));
    const filtered = await listAll(t, ep.id, `status=stored,fetched,delivered&event_type=odd&received_after=${iso(T0 + 100)}&received_before=${iso(T0 + 500)}&limit=3`);
    expect(filtered.ids).toEqual(seeded.filter((_, i) => i % 2 === 1 && i >= 10 && i < 50));
  });

  it('leaves deleted events out', async () => {
    const ep = await createPull(t);
    const [a, b] = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1] });
    await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${a}`);
    expect(ids(await events(ep.id, 'status=stored,fetched,delivered'))).toEqual([b]);
  });
});

describe('GET /v1/pull-endpoints/{id}/events/{event_id}', () => {
  it('returns the payload (JSON embedded) and headers, and moves stored → fetched once', async () => {
    const ep = await createPull(t);
    const id = await ingestEvent(t, ep, { body: '{"hello":"world"}', headers: { 'content-type': 'application/json', 'x-test': 'yes' }, query: 'a=1' });
    const res = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    expect(res.status, res.raw).toBe(200);
    const e = res.body.data;
    expect(e).toMatchObject({ id, endpoint_id: ep.id, status: 'fetched', body: { hello: 'world' }, method: 'POST', query: 'a=1', size_bytes: 17 });
    expect(e.body_encoding).toBeUndefined();
    expect(e.deleted_at).toBeUndefined();
    expect(e.headers['x-test']).toBe('yes');
    expect(e.raw_headers).toContainEqual(['x-test', 'yes']);
    expect(e.fetched_at).not.toBeNull();
    expect(e.time_to_first_fetch_ms).toBe(Date.parse(e.fetched_at) - Date.parse(e.received_at));
    expect(e.time_to_first_fetch_ms).toBeGreaterThanOrEqual(0);
    expect(e.fetch_to_ack_ms).toBeNull();
    // A second fetch keeps the first fetched_at.
    await new Promise((r) => setTimeout(r, 5));
    const again = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    expect(again.body.data).toMatchObject({ status: 'fetched', fetched_at: e.fetched_at, body: { hello: 'world' } });
    expect(ids(await events(ep.id))).toEqual([]);
    expect(ids(await events(ep.id, 'status=fetched'))).toEqual([id]);
  });

  it('returns other bodies, or any body when asked, as base64', async () => {
    const ep = await createPull(t);
    const bin = await ingestEvent(t, ep, { body: Buffer.from([0, 1, 2, 255]), headers: { 'content-type': 'application/octet-stream' } });
    const res = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${bin}`);
    expect(res.body.data.body_encoding).toBe('base64');
    expect(Buffer.from(res.body.data.body, 'base64')).toEqual(Buffer.from([0, 1, 2, 255]));
    const json = await ingestEvent(t, ep, { body: '{"a": 1}' });
    const forced = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${json}?body_encoding=base64`);
    expect(forced.body.data.body_encoding).toBe('base64');
    expect(Buffer.from(forced.body.data.body, 'base64').toString()).toBe('{"a": 1}');
    const broken = await ingestEvent(t, ep, { body: '{"a":', headers: { 'content-type': 'application/json' } });
    const brokenRes = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${broken}`);
    expect(Buffer.from(brokenRes.body.data.body, 'base64').toString()).toBe('{"a":');
    expectError(await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${json}?body_encoding=hex`), 400, 'INVALID_REQUEST', 'query.body_encoding');
  });

  it('never moves a delivered event back', async () => {
    const ep = await createPull(t);
    const id = await ingestEvent(t, ep);
    await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${id}/ack`);
    const res = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    expect(res.body.data).toMatchObject({ status: 'delivered', fetched_at: null, body: {} });
  });

  it('answers body_error when the store fails, and leaves the event stored', async () => {
    const ep = await createPull(t);
    const id = await ingestEvent(t, ep, { body: '{"a":1}' });
    store.failReads = true;
    try {
      const res = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`);
      expect(res.status).toBe(200);
      expect(res.body.data.body_error).toBe('payload_unavailable');
      expect(res.body.data.body).toBeUndefined();
      expect(res.body.data.status).toBe('stored');
    } finally {
      store.failReads = false;
    }
    expect((await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`)).body.data).toMatchObject({ status: 'fetched', body: { a: 1 } });
  });

  it('answers a deleted event with its metadata, deleted_at and no body, and does not move it', async () => {
    const ep = await createPull(t);
    const id = await ingestEvent(t, ep, { body: '{"secret":true}' });
    await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    const res = await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id, status: 'stored', fetched_at: null, deleted_by_api_key_id: t.main.apiKeyId, deleted_by_user_id: null });
    expect(Date.parse(res.body.data.deleted_at)).not.toBeNaN();
    expect(res.body.data.body).toBeUndefined();
    expect(res.body.data.body_encoding).toBeUndefined();
    expect(res.raw).not.toContain('secret');
  });

  it('is 404 NOT_FOUND for unknown events and events of another endpoint, 400 for malformed ids', async () => {
    const ep = await createPull(t);
    const other = await createPull(t);
    const theirs = await ingestEvent(t, other);
    expectError(await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/01900000-0000-7000-8000-000000000000`), 404, 'NOT_FOUND');
    expectError(await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${theirs}`), 404, 'NOT_FOUND');
    expectError(await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/nope`), 400, 'INVALID_REQUEST', 'path.event_id');
    expect((await t.request('GET', `/v1/pull-endpoints/${other.id}/events/${theirs}`)).body.data.status).toBe('fetched');
  });
});

describe('ack', () => {
  it('moves an event to delivered; a repeat reports already_delivered with the first time', async () => {
    const ep = await createPull(t);
    const id = await ingestEvent(t, ep);
    await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`);
    const res = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${id}/ack`);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({ event_id: id, status: 'delivered', already_delivered: false });
    const again = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${id}/ack`);
    expect(again.body.data).toEqual({ event_id: id, status: 'delivered', delivered_at: res.body.data.delivered_at, already_delivered: true });
    const detail = (await t.request('GET', `/v1/pull-endpoints/${ep.id}/events/${id}`)).body.data;
    expect(detail).toMatchObject({ status: 'delivered', delivered_at: res.body.data.delivered_at });
    expect(detail.fetch_to_ack_ms).toBe(Date.parse(detail.delivered_at) - Date.parse(detail.fetched_at));
    expect(detail.total_time_ms).toBe(Date.parse(detail.delivered_at) - Date.parse(detail.received_at));
    expect(ids(await events(ep.id, 'status=delivered'))).toEqual([id]);
  });

  it('acks a stored event that was never fetched (fetched_at stays null)', async () => {
    const ep = await createPull(t);
    const id = await ingestEvent(t, ep);
    await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${id}/ack`);
    const [row] = (await events(ep.id, 'status=delivered')).body.data;
    expect(row).toMatchObject({ status: 'delivered', fetched_at: null, time_to_first_fetch_ms: null, fetch_to_ack_ms: null });
    expect(row.total_time_ms).toBeGreaterThanOrEqual(0);
  });

  it('is 404 NOT_FOUND for deleted, unknown and other endpoints’ events', async () => {
    const ep = await createPull(t);
    const other = await createPull(t);
    const deleted = await ingestEvent(t, ep);
    await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${deleted}`);
    const theirs = await ingestEvent(t, other);
    expectError(await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${deleted}/ack`), 404, 'NOT_FOUND');
    expectError(await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${theirs}/ack`), 404, 'NOT_FOUND');
    expectError(await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/01900000-0000-7000-8000-000000000000/ack`), 404, 'NOT_FOUND');
    const [row] = await t.db.sql<{ status: string }>`SELECT status FROM pull_events WHERE id = ${theirs}`;
    expect(row!.status).toBe('stored');
  });

  it('ack-batch reports one outcome per id and the three counts', async () => {
    const ep = await createPull(t);
    const other = await createPull(t);
    const [a, b, c, deleted] = await seedEvents(t.db, ep, t.main.projectId, { times: [T0, T0 + 1, T0 + 2, T0 + 3] });
    await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/${c}/ack`);
    await t.request('DELETE', `/v1/pull-endpoints/${ep.id}/events/${deleted}`);
    const [theirs] = await seedEvents(t.db, other, t.main.projectId, { times: [T0] });
    const unknown = '01900000-0000-7000-8000-000000000000';
    const res = await t.request('POST', `/v1/pull-endpoints/${ep.id}/events/ack-batch`, {
      body: { event_ids: [a, b!.toUpperCase(), c, deleted, theirs, unknown, a] },
    });
    expect(res.status, res.raw).toBe(200);
    const d = res.body.data;
    expect(d.results.map((r: { event_id: string; outcome: string }) => [r.event_id, r.outcome])).toEqual([
      [a, 'delivered'],
      [b, 'delivered'],
      [c, 'already_delivered'],
      [deleted, 'not_found'],
      [theirs, 'not_found'],
      [unknown, 'not_found'],
    ]);
    expect(d.results[0].delivered_at).toBeDefined();
    expect(d.results[3].delivered_at).toBeUndefined();
    expect([d.delivered_count, d.already_delivered_count, d.not_found_count]).toEqual([2, 1, 3]);
    expect(ids(await events(ep.id, 'status=delivered'))).toEqual([a, b, c]);
  });

  it('ack-batch takes 1 to 1000 UUIDs in event_ids', async () => {
    const ep = await createPull(t);
    const path = `/v1/pull-endpoints/${ep.id}/events/ack-batch`;
    const many = (n: number) => Array.from({ length: n }, (_, i) => `01900000-0000-7000-8000-${i.toString(16).padStart(12, '0')}`);
    expect((await t.request('POST', path, { body: { event_ids: many(1000) } })).body.data.not_found_count).toBe(1000);
    expectError(await t.request('POST', path, { body: { event_ids: many(1001) } }), 400, 'INVALID_REQUEST', 'body.event_ids');
    expectError(await t.request('POST', path, { body: { event_ids: [] } }), 400, 'INVALID_REQUEST', 'body.event_ids');
    expectError(await t.request('POST', path, { body: { event_ids: ['x'] } }), 400, 'INVALID_REQUEST', 'body.event_ids');
    expectError(await t.request('POST', path, { body: { message_ids: many(1) } }), 400, 'INVALID_REQUEST');
  });
});

describe('timing fields', () => {
  it('are computed from received_at, fetched_at and delivered_at', async () => {
    const ep = await createPull(t);
    const [id] = await seedEvents(t.db, ep, t.main.projectId, { times: [T0] });
    await t.db.sql`
      UPDATE pull_events SET status = 'delivered', ingest_processing_ms = 3,
        fetched_at = received_at + interval '1500 milliseconds', delivered_at = received_at + interval '4000 milliseconds'
      WHERE id = ${id}::uuid`;
    const [row] = (await events(ep.id, 'status=delivered')).body.data;
    expect(row).toMatchObject({
      received_at: iso(T0),
      fetched_at: iso(T0 + 1500),
      delivered_at: iso(T0 + 4000),
      ingest_processing_ms: 3,
      time_to_first_fetch_ms: 1500,
      fetch_to_ack_ms: 2500,
      total_time_ms: 4000,
    });
    await t.db.sql`UPDATE pull_events SET ingest_processing_ms = NULL WHERE id = ${id}::uuid`;
    expect((await events(ep.id, 'status=delivered')).body.data[0].ingest_processing_ms).toBeNull();
  });
});
