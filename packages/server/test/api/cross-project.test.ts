import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Sql } from '../../src/db/database.js';
import { createTestApp, expectError, type TestApp, type TestProjectKey } from '../helpers/app.js';
import { createFixtures, kindOfParam, type FixtureKind, type ProjectFixtures } from '../helpers/fixtures.js';
import { pathParams, routeKey, servedRoutes, type ServedRoute } from '../helpers/routes.js';

/**
 * Project isolation on every route that takes an id (docs/api.md, Status codes): another project's key gets
 * the resource's own "not found" — ENDPOINT_NOT_FOUND for an endpoint in the path, NOT_FOUND for a
 * message or event — exactly as for an id that exists nowhere, and the owner's rows do not change.
 * The routes come from the app's own route table, so a new id route is checked without editing
 * this file (a route with a body needs one in BODIES, or it fails here with a 400).
 * isolation.test.ts and pull-isolation.test.ts look closer at outbound and pull endpoints.
 */

let t: TestApp;
let owner: ProjectFixtures;
let intruder: TestProjectKey;
let intruderOwn: ProjectFixtures;
let before: string[];

/** Ids of the right shape that exist nowhere. */
const NOWHERE: Record<FixtureKind, string> = {
  outbound: `ep_${'0'.repeat(32)}`,
  messages: '01900000-0000-7000-8000-000000000001',
  inbound: '01900000-0000-7000-8000-000000000002',
  inboundMessages: '01900000-0000-7000-8000-000000000003',
  pulls: '01900000-0000-7000-8000-000000000004',
  events: '01900000-0000-7000-8000-000000000005',
  inboundTokens: '0'.repeat(32),
  pullTokens: '0'.repeat(32),
  inboundRejections: '01900000-0000-7000-8000-000000000006',
  pullRejections: '01900000-0000-7000-8000-000000000007',
  eventTypes: 'nowhere.event.type',
  bulkJobs: '01900000-0000-7000-8000-000000000008',
  portalLinks: '01900000-0000-7000-8000-000000000009',
};

const ENDPOINT_KINDS: ReadonlySet<FixtureKind> = new Set(['outbound', 'inbound', 'pulls']);

/** A body each route accepts, so that the request gets past validation to the lookup. */
const BODIES: Record<string, (ids: string[]) => unknown> = {
  'PATCH /v1/endpoints/:id': () => ({ description: 'hijacked', paused: true, headers: { 'X-Hijack': '1' } }),
  'PATCH /v1/inbound-endpoints/:id': () => ({ name: 'hijacked', description: 'hijacked' }),
  'PATCH /v1/pull-endpoints/:id': () => ({ description: 'hijacked', retention_days: 1 }),
  'POST /v1/inbound-endpoints/:id/samples': () => ({ provider: 'github', event: 'ping' }),
  'POST /v1/inbound-messages/:id/result': ([id]) => ({ message_id: id, status: 200, latency_ms: 1, error: null }),
  'POST /v1/pull-endpoints/:id/events/ack-batch': () => ({ event_ids: owner.events }),
  'POST /v1/pull-endpoints/:id/events/delete-batch': () => ({ message_ids: owner.events }),
  'PATCH /v1/event-types/:name': () => ({ description: 'hijacked', archived: true, schema: { type: 'string' } }),
  'POST /v1/inbound-endpoints/:id/replays': () => ({ received_after: '2000-01-01T00:00:00Z' }),
};

/** Every row that belongs to the owner's project, as text: what "unchanged" is compared on. */
async function ownerRows(sql: Sql, projectId: string): Promise<string[]> {
  const rows = await sql<{ row: string }>`
    SELECT 'endpoints ' || to_jsonb(e)::text AS row FROM endpoints e WHERE e.project_id = ${projectId}::uuid
    UNION ALL SELECT 'inbound_endpoints ' || to_jsonb(e)::text FROM inbound_endpoints e WHERE e.project_id = ${projectId}::uuid
    UNION ALL SELECT 'pull_endpoints ' || to_jsonb(e)::text FROM pull_endpoints e WHERE e.project_id = ${projectId}::uuid
    UNION ALL SELECT 'outbound_messages ' || to_jsonb(m)::text FROM outbound_messages m WHERE m.project_id = ${projectId}::uuid
    UNION ALL SELECT 'inbound_messages ' || to_jsonb(m)::text FROM inbound_messages m WHERE m.project_id = ${projectId}::uuid
    UNION ALL SELECT 'pull_events ' || to_jsonb(m)::text FROM pull_events m WHERE m.project_id = ${projectId}::uuid
    UNION ALL SELECT 'ingest_rejections ' || to_jsonb(r)::text FROM ingest_rejections r WHERE r.project_id = ${projectId}::uuid
    UNION ALL SELECT 'event_types ' || to_jsonb(ty)::text FROM event_types ty WHERE ty.project_id = ${projectId}::uuid
    UNION ALL SELECT 'bulk_jobs ' || to_jsonb(b)::text FROM bulk_jobs b WHERE b.project_id = ${projectId}::uuid
    UNION ALL SELECT 'portal_links ' || to_jsonb(l)::text FROM portal_links l WHERE l.project_id = ${projectId}::uuid
    UNION ALL SELECT 'signing_keys ' || to_jsonb(k)::text FROM signing_keys k
      WHERE k.owner_id IN (SELECT id FROM endpoints WHERE project_id = ${projectId}::uuid
                           UNION ALL SELECT id::text FROM inbound_endpoints WHERE project_id = ${projectId}::uuid)
    UNION ALL SELECT 'delivery_jobs ' || to_jsonb(j)::text FROM delivery_jobs j
      WHERE j.message_id IN (SELECT id FROM outbound_messages WHERE project_id = ${projectId}::uuid
                             UNION ALL SELECT id FROM inbound_messages WHERE project_id = ${projectId}::uuid)
    UNION ALL SELECT 'delivery_attempts ' || to_jsonb(a)::text FROM delivery_attempts a
      WHERE a.message_id IN (SELECT id FROM outbound_messages WHERE project_id = ${projectId}::uuid
                             UNION ALL SELECT id FROM inbound_messages WHERE project_id = ${projectId}::uuid)
    ORDER BY 1`;
  return rows.map((r) => r.row);
}

beforeAll(async () => {
  t = await createTestApp();
  owner = await createFixtures(t, t.main.apiKey);
  intruder = await t.createProject();
  intruderOwn = await createFixtures(t, intruder.apiKey);
  before = await ownerRows(t.db.sql, t.main.projectId);
  expect(before.length).toBeGreaterThan(15);
});
afterAll(async () => {
  await t?.close();
});

/** /v1 routes with a path parameter, all but the WebSocket's (it has its own test below). */
function idRoutes(): ServedRoute[] {
  return servedRoutes(t.app).filter((r) => r.path.startsWith('/v1/') && pathParams(r.path).length > 0);
}

function fill(route: ServedRoute, ids: string[]): string {
  let i = 0;
  return route.path.replace(/:(\w+)/g, () => ids[i++]!);
}

function kinds(route: ServedRoute): FixtureKind[] {
  return pathParams(route.path).map((name) => {
    const kind = kindOfParam(route, name);
    if (kind === undefined) throw new Error(`${routeKey(route)}: add the kind of :${name} to KIND_BY_SEGMENT in test/helpers/fixtures.ts`);
    return kind;
  });
}

const notFoundCode = (kind: FixtureKind) => (ENDPOINT_KINDS.has(kind) ? 'ENDPOINT_NOT_FOUND' : 'NOT_FOUND');

async function callAs(apiKey: string, route: ServedRoute, ids: string[]) {
  const body = BODIES[routeKey(route)]?.(ids);
  return t.request(route.method, fill(route, ids), { apiKey, ...(body !== undefined ? { body } : {}) });
}

describe("another project's key, on every route that takes an id", () => {
  it('covers the routes of every kind of resource', () => {
    const covered = new Set(idRoutes().flatMap(kinds));
    expect([...covered].sort()).toEqual(['bulkJobs', 'eventTypes', 'events', 'inbound', 'inboundMessages', 'inboundRejections', 'messages', 'outbound', 'portalLinks', 'pullRejections', 'pulls']);
    expect(idRoutes().length).toBeGreaterThan(25);
  });

  it("gets the resource's own not-found code for the owner's ids, as for ids that exist nowhere", async () => {
    for (const route of idRoutes()) {
      const routeKinds = kinds(route);
      const foreign = await callAs(intruder.apiKey, route, routeKinds.map((k) => owner[k][0]!));
      const message = expectError(foreign, 404, notFoundCode(routeKinds[0]!));
      expect(message, routeKey(route)).not.toMatch(/forbidden|permission|another project/i);
      const nowhere = await callAs(intruder.apiKey, route, routeKinds.map((k) => NOWHERE[k]));
      expect([nowhere.status, nowhere.body?.error?.code], routeKey(route)).toEqual([foreign.status, foreign.body.error.code]);
    }
  });

  it("through one of its own endpoints, gets NOT_FOUND for the owner's message or event", async () => {
    const nested = idRoutes().filter((r) => pathParams(r.path).length > 1);
    expect(nested.length).toBeGreaterThanOrEqual(3);
    for (const route of nested) {
      const routeKinds = kinds(route);
      const ids = routeKinds.map((k, i) => (i < routeKinds.length - 1 ? intruderOwn[k][0]! : owner[k][0]!));
      expectError(await callAs(intruder.apiKey, route, ids), 404, notFoundCode(routeKinds[routeKinds.length - 1]!));
    }
  });

  it("finds none of the owner's ids in lists, filters, batches and message submission", async () => {
    const ownerIds = (Object.keys(owner) as FixtureKind[]).flatMap((k) => owner[k]);
    const as = { apiKey: intruder.apiKey };
    // The routes under /v1/portal/ (the session, the portal's socket) answer portal tokens only
    // (portal.test.ts, portal-watch.test.ts): an API key gets 404 there.
    const lists = servedRoutes(t.app).filter((r) => r.method === 'GET' && r.path.startsWith('/v1/') && pathParams(r.path).length === 0 && !r.path.startsWith('/v1/portal/'));
    expect(lists.length).toBeGreaterThanOrEqual(6);
    const pages = [
      ...(await Promise.all(lists.map((r) => t.request('GET', r.path, as)))),
      await t.request('GET', `/v1/logs?endpoint_id=${owner.outbound[0]}`, as),
      await t.request('GET', `/v1/inbound-logs?inbound_endpoint_id=${owner.inbound[0]}`, as),
      await t.request('GET', `/v1/inbound-endpoints/${intruderOwn.inbound[0]}/listen?after=00000000-0000-7000-8000-000000000000`, as),
      await t.request('GET', `/v1/pull-endpoints/${intruderOwn.pulls[0]}/events?status=stored,fetched,delivered`, as),
    ];
    for (const page of pages) {
      expect(page.status, page.raw).toBe(200);
      for (const id of ownerIds) expect(page.raw).not.toContain(id);
    }
    expect(pages.at(-2)!.body.data.map((m: { message_id: string }) => m.message_id)).toEqual(intruderOwn.inboundMessages.slice(0, 2));

    expectError(await t.request('POST', '/v1/messages', { ...as, body: { endpoint_id: owner.outbound[0], payload: { x: 1 } } }), 404, 'ENDPOINT_NOT_FOUND');
    const batches = [
      await t.request('POST', '/v1/messages/delete-batch', { ...as, body: { message_ids: owner.messages } }),
      await t.request('POST', '/v1/inbound-messages/delete-batch', { ...as, body: { message_ids: owner.inboundMessages } }),
      await t.request('POST', `/v1/pull-endpoints/${intruderOwn.pulls[0]}/events/delete-batch`, { ...as, body: { message_ids: owner.events } }),
      await t.request('POST', `/v1/pull-endpoints/${intruderOwn.pulls[1]}/events/ack-batch`, { ...as, body: { event_ids: owner.events } }),
    ];
    for (const res of batches) {
      expect(res.status, res.raw).toBe(200);
      expect(res.body.data.results.every((r: { outcome: string }) => r.outcome === 'not_found'), res.raw).toBe(true);
    }
    // The intruder's delete-all on its own (empty) endpoint deletes none of the owner's events.
    const all = await t.request('POST', `/v1/pull-endpoints/${intruderOwn.pulls[1]}/events/delete-all`, as);
    expect(all.body.data).toEqual({ deleted: 0, deleted_event_ids: [] });
  });
});

describe("another project's key on the WebSocket stream", () => {
  let baseUrl: string;
  beforeAll(async () => {
    baseUrl = (await t.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
  });

  function connect(endpointId: string, apiKey: string, after?: string): { socket: WebSocket; frames: any[]; opened: Promise<void> } {
    const socket = new WebSocket(`${baseUrl}/v1/inbound-endpoints/${endpointId}/stream${after ? `?after=${after}` : ''}`, { headers: { authorization: `Bearer ${apiKey}` } });
    const frames: any[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(data.toString())));
    const opened = new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return { socket, frames, opened };
  }

  async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it("is refused on the owner's endpoint with 404, before any upgrade", async () => {
    const { opened } = connect(owner.inbound[0]!, intruder.apiKey);
    await expect(opened).rejects.toThrow(/404/);
  });

  it("on its own endpoint streams only its messages, and its result frames cannot touch the owner's", async () => {
    const { socket, frames, opened } = connect(intruderOwn.inbound[0]!, intruder.apiKey, '00000000-0000-7000-8000-000000000000');
    await opened;
    try {
      await until(() => frames.filter((f) => f.type === 'message').length >= 2, 'the two stored messages');
      expect(frames.filter((f) => f.type === 'message').map((f) => f.message.message_id)).toEqual(intruderOwn.inboundMessages.slice(0, 2));
      for (const id of owner.inboundMessages) socket.send(JSON.stringify({ type: 'result', message_id: id, status: 200, latency_ms: 1, error: null }));
      // Its own report after them: once that one is recorded, the others have been handled too.
      socket.send(JSON.stringify({ type: 'result', message_id: intruderOwn.inboundMessages[0], status: 200, latency_ms: 1, error: null }));
      await until(async () => {
        const res = await t.request('GET', `/v1/inbound-messages/${intruderOwn.inboundMessages[0]}`, { apiKey: intruder.apiKey });
        return res.body.data.attempt_count === 1;
      }, "the intruder's own result");
    } finally {
      socket.close();
    }
  });
});

describe("the owner's project", () => {
  it('is unchanged, row for row, after everything the other key tried', async () => {
    expect(await ownerRows(t.db.sql, t.main.projectId)).toEqual(before);
  });
});
