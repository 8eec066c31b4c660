import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp, type TestProjectKey } from '../helpers/app.js';
import { createPull, ingestEvent, type TestPullEndpoint } from '../helpers/pull.js';

/**
 * Project isolation of pull endpoints and events (docs/api.md, Status codes): another project's endpoint and
 * its events are "not found" on every route, exactly as ids that exist nowhere, and stay untouched.
 */

let t: TestApp;
let other: TestProjectKey;
let mine: TestPullEndpoint;
let eventId: string;
beforeAll(async () => {
  t = await createTestApp();
  other = await t.createProject();
  mine = await createPull(t, { description: 'first project' });
  eventId = await ingestEvent(t, mine, { body: '{"private":true}' });
});
afterAll(async () => {
  await t?.close();
});

const NOWHERE = '01900000-0000-7000-8000-000000000000';

function routes(endpointId: string, event: string): [string, string, unknown?][] {
  const base = `/v1/pull-endpoints/${endpointId}`;
  return [
    ['GET', base],
    ['PATCH', base, { description: 'hijacked', retention_days: 1 }],
    ['POST', `${base}/pause`],
    ['POST', `${base}/resume`],
    ['DELETE', base],
    ['GET', `${base}/events`],
    ['GET', `${base}/events?status=stored,fetched,delivered`],
    ['GET', `${base}/events/${event}`],
    ['POST', `${base}/events/${event}/ack`],
    ['POST', `${base}/events/ack-batch`, { event_ids: [event] }],
    ['DELETE', `${base}/events/${event}`],
    ['POST', `${base}/events/delete-batch`, { message_ids: [event] }],
    ['POST', `${base}/events/delete-all`],
    ['POST', `${base}/events/delete-all`, { status: 'stored' }],
  ];
}

describe("another project's key", () => {
  it('gets 404 ENDPOINT_NOT_FOUND on every route, as for an endpoint that exists nowhere', async () => {
    for (const [method, url, body] of routes(mine.id, eventId)) {
      const foreign = await t.request(method, url, { apiKey: other.apiKey, ...(body !== undefined ? { body } : {}) });
      const message = expectError(foreign, 404, 'ENDPOINT_NOT_FOUND');
      expect(message).not.toMatch(/forbidden|permission|another project/i);
      expect(foreign.raw).not.toContain('private');
    }
    for (const [method, url, body] of routes(NOWHERE, eventId)) {
      expectError(await t.request(method, url, body !== undefined ? { body } : {}), 404, 'ENDPOINT_NOT_FOUND');
    }
  });

  it("cannot reach the first project's event through an endpoint of its own", async () => {
    const theirs = await createPull(t, {}, other.apiKey);
    const base = `/v1/pull-endpoints/${theirs.id}/events`;
    const as = { apiKey: other.apiKey };
    expectError(await t.request('GET', `${base}/${eventId}`, as), 404, 'NOT_FOUND');
    expectError(await t.request('POST', `${base}/${eventId}/ack`, as), 404, 'NOT_FOUND');
    expectError(await t.request('DELETE', `${base}/${eventId}`, as), 404, 'NOT_FOUND');
    const ack = await t.request('POST', `${base}/ack-batch`, { ...as, body: { event_ids: [eventId] } });
    expect(ack.body.data.not_found_count).toBe(1);
    const del = await t.request('POST', `${base}/delete-batch`, { ...as, body: { message_ids: [eventId] } });
    expect(del.body.data.not_found_count).toBe(1);
    expect((await t.request('POST', `${base}/delete-all`, as)).body.data).toEqual({ deleted: 0, deleted_event_ids: [] });
    expect((await t.request('GET', base, as)).body.data).toEqual([]);
  });

  it('sees only its own endpoints in the list', async () => {
    const res = await t.request('GET', '/v1/pull-endpoints?limit=200', { apiKey: other.apiKey });
    expect(res.body.data.map((e: { id: string }) => e.id)).not.toContain(mine.id);
    const own = await t.request('GET', '/v1/pull-endpoints?limit=200');
    expect(own.body.data.map((e: { id: string }) => e.id)).toContain(mine.id);
  });

  it("left the first project's endpoint and event untouched", async () => {
    const endpoint = await t.request('GET', `/v1/pull-endpoints/${mine.id}`);
    expect(endpoint.status, endpoint.raw).toBe(200);
    expect(endpoint.body.data).toMatchObject({ description: 'first project', retention_days: 7, paused: false });
    expect(endpoint.body.data.event_counts).toEqual({ stored: 1, fetched: 0, delivered: 0, deleted: 0 });
    const [row] = await t.db.sql<{ status: string; deleted_at: Date | null }>`SELECT status, deleted_at FROM pull_events WHERE id = ${eventId}`;
    expect(row).toEqual({ status: 'stored', deleted_at: null });
  });
});
