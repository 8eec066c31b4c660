import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PORTAL_TOKEN_PATTERN } from '@hookrelay/shared';
import { PORTAL_ROUTES } from '../../src/plugins/portal-scope.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { routeKey, servedRoutes, type ServedRoute } from '../helpers/routes.js';

/**
 * Portal links and what their tokens may do (docs/api.md, Portal links): owner A's token reaches
 * A's outbound endpoints, events, messages and the live catalogue, and nothing else, on every
 * route of the app's own route table.
 */

let t: TestApp;
const A = 'cus_a';
const B = 'cus_b';
let tokenA: string;
let readOnlyA: string;
/** Endpoints of A, B and the operator's own (no owner), made with the API key. */
const ep: Record<'a' | 'b' | 'op', string> = { a: '', b: '', op: '' };
const msg: Record<'a' | 'b' | 'op', string> = { a: '', b: '', op: '' };
const evt: Record<'a' | 'b', string> = { a: '', b: '' };

async function link(body: Record<string, unknown>) {
  const res = await t.request('POST', '/v1/portal-links', { body });
  expect(res.status, res.raw).toBe(201);
  return res.body.data as { id: string; token: string; url: string; owner_id: string; read_only: boolean; expires_at: string; created_at: string };
}

async function endpoint(owner: string | null): Promise<string> {
  const res = await t.request('POST', '/v1/endpoints', { body: { url: 'https://receiver.example/hook', owner_id: owner } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id as string;
}

async function message(endpointId: string): Promise<string> {
  const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { n: 1 } } });
  expect(res.status, res.raw).toBe(202);
  return res.body.data.message_id as string;
}

async function event(owner: string): Promise<string> {
  const res = await t.request('POST', '/v1/events', { body: { event_type: 'invoice.paid', owner_id: owner, payload: { n: 1 } } });
  expect(res.status, res.raw).toBe(202);
  return res.body.data.event_id as string;
}

beforeAll(async () => {
  t = await createTestApp();
  ep.a = await endpoint(A);
  ep.b = await endpoint(B);
  ep.op = await endpoint(null);
  msg.a = await message(ep.a);
  msg.b = await message(ep.b);
  msg.op = await message(ep.op);
  evt.a = await event(A);
  evt.b = await event(B);
  for (const [name, archived] of [['invoice.paid', false], ['invoice.voided', true]] as const) {
    const res = await t.request('POST', '/v1/event-types', { body: { name, archived } });
    expect(res.status, res.raw).toBe(201);
  }
  tokenA = (await link({ owner_id: A })).token;
  readOnlyA = (await link({ owner_id: A, read_only: true, expires_in_minutes: 5 })).token;
});
afterAll(async () => {
  await t?.close();
});

const as = (token: string, method: string, url: string, body?: unknown) => t.request(method, url, { apiKey: token, ...(body !== undefined ? { body } : {}) });

describe('portal links (API key)', () => {
  it('creates a link whose token is in the URL fragment, stored only as a hash', async () => {
    const before = Date.now();
    const created = await link({ owner_id: 'cus_new', expires_in_minutes: 90 });
    expect(created.token).toMatch(PORTAL_TOKEN_PATTERN);
    expect(created.url).toMatch(/^http:\/\/localhost:\d+\/portal#token=hrp_[a-f0-9]{40}$/);
    expect(created.url.endsWith(`#token=${created.token}`)).toBe(true);
    expect(created).toMatchObject({ owner_id: 'cus_new', read_only: false });
    const minutes = (Date.parse(created.expires_at) - before) / 60_000;
    expect(minutes).toBeGreaterThan(89);
    expect(minutes).toBeLessThan(91);
    const rows = await t.db.sql<{ token_hash: string }>`SELECT token_hash FROM portal_links WHERE id = ${created.id}::uuid`;
    expect(rows[0]!.token_hash).toMatch(/^[a-f0-9]{64}$/);
    expect(JSON.stringify(rows)).not.toContain(created.token);
  });

  it('defaults to 60 minutes and refuses an expiry outside 1–1440 minutes', async () => {
    const created = await link({ owner_id: 'cus_default' });
    const minutes = (Date.parse(created.expires_at) - Date.parse(created.created_at)) / 60_000;
    expect(Math.round(minutes)).toBe(60);
    for (const expires_in_minutes of [0, 1441]) {
      expectError(await t.request('POST', '/v1/portal-links', { body: { owner_id: A, expires_in_minutes } }), 400, 'INVALID_REQUEST', 'expires_in_minutes');
    }
    expectError(await t.request('POST', '/v1/portal-links', { body: {} }), 400, 'INVALID_REQUEST', 'owner_id');
  });

  it('lists an owner\'s links newest first, a page at a time, without their tokens', async () => {
    const first = await as(t.main.apiKey, 'GET', `/v1/portal-links?owner_id=${A}&limit=1`);
    expect(first.status, first.raw).toBe(200);
    expect(first.body.data).toHaveLength(1);
    expect(first.body.data[0].read_only).toBe(true);
    expect(first.raw).not.toContain('hrp_');
    const second = await as(t.main.apiKey, 'GET', `/v1/portal-links?owner_id=${A}&limit=1&cursor=${first.body.meta.next_cursor}`);
    expect(second.body.data.map((l: { read_only: boolean }) => l.read_only)).toEqual([false]);
    expect(second.body.meta.next_cursor).toBeNull();
  });

  it("another project's key cannot list or revoke them", async () => {
    const other = await t.createProject();
    const created = await link({ owner_id: A });
    expect((await as(other.apiKey, 'GET', `/v1/portal-links?owner_id=${A}`)).body.data).toEqual([]);
    expectError(await as(other.apiKey, 'DELETE', `/v1/portal-links/${created.id}`), 404, 'NOT_FOUND');
    expect((await as(created.token, 'GET', '/v1/portal/session')).status).toBe(200);
  });
});

describe("a portal token's session, expiry and revocation", () => {
  it('answers its session', async () => {
    const res = await as(readOnlyA, 'GET', '/v1/portal/session');
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({ owner_id: A, read_only: true });
    expect(res.body.data.project_name).toMatch(/^project-/);
    expectError(await t.request('GET', '/v1/portal/session'), 404, 'NOT_FOUND');
  });

  it('is refused at once when revoked, and when expired', async () => {
    const revoked = await link({ owner_id: A });
    expect((await as(revoked.token, 'GET', '/v1/endpoints')).status).toBe(200);
    const res = await t.request('DELETE', `/v1/portal-links/${revoked.id}`);
    expect(res.status, res.raw).toBe(200);
    expect(typeof res.body.data.revoked_at).toBe('string');
    expectError(await as(revoked.token, 'GET', '/v1/endpoints'), 401, 'UNAUTHORIZED', 'revoked');

    const expired = await link({ owner_id: A, expires_in_minutes: 1 });
    expect((await as(expired.token, 'GET', '/v1/portal/session')).status).toBe(200);
    await t.db.sql`UPDATE portal_links SET expires_at = now() - interval '1 millisecond' WHERE id = ${expired.id}::uuid`;
    expectError(await as(expired.token, 'GET', '/v1/portal/session'), 401, 'UNAUTHORIZED', 'expired');
    expectError(await as('hrp_' + '0'.repeat(40), 'GET', '/v1/portal/session'), 401, 'UNAUTHORIZED');
  });
});

describe("owner A's token", () => {
  it("lists only A's endpoints, events and messages, whatever owner_id the query names", async () => {
    const endpoints = await as(tokenA, 'GET', `/v1/endpoints?owner_id=${B}`);
    expect(endpoints.body.data.map((e: { id: string }) => e.id)).toEqual([ep.a]);
    const events = await as(tokenA, 'GET', `/v1/events?owner_id=${B}`);
    expect(events.body.data.map((e: { event_id: string }) => e.event_id)).toEqual([evt.a]);
    const logs = await as(tokenA, 'GET', `/v1/logs?endpoint_id=${ep.b}`);
    expect(logs.body.data).toEqual([]);
    const own = await as(tokenA, 'GET', '/v1/logs');
    const ids = own.body.data.map((m: { message_id: string }) => m.message_id);
    expect(ids).toContain(msg.a);
    expect(ids).not.toContain(msg.b);
    expect(ids).not.toContain(msg.op);
  });

  it("reads A's own resources", async () => {
    expect((await as(tokenA, 'GET', `/v1/endpoints/${ep.a}`)).status).toBe(200);
    expect((await as(tokenA, 'GET', `/v1/messages/${msg.a}`)).status).toBe(200);
    expect((await as(tokenA, 'GET', `/v1/messages/${msg.a}/attempts`)).status).toBe(200);
    expect((await as(tokenA, 'GET', `/v1/events/${evt.a}`)).status).toBe(200);
    expect((await as(tokenA, 'POST', `/v1/messages/${msg.a}/retry`)).status).toBe(200);
  });

  it("gets 404 on B's and the operator's resources, which stay as they were", async () => {
    for (const id of [ep.b, ep.op]) {
      for (const [method, path, body] of [
        ['GET', ''],
        ['PATCH', '', { description: 'taken' }],
        ['POST', '/pause'],
        ['POST', '/resume'],
        ['POST', '/rotate-secret'],
        ['DELETE', ''],
      ] as const) {
        expectError(await as(tokenA, method, `/v1/endpoints/${id}${path}`, body), 404, 'ENDPOINT_NOT_FOUND');
      }
    }
    for (const id of [msg.b, msg.op]) {
      for (const [method, path] of [['GET', ''], ['GET', '/attempts'], ['POST', '/retry']] as const) {
        expectError(await as(tokenA, method, `/v1/messages/${id}${path}`), 404, 'NOT_FOUND');
      }
    }
    expectError(await as(tokenA, 'GET', `/v1/events/${evt.b}`), 404, 'NOT_FOUND');
    // The same owner_id in another project is another customer.
    const other = await t.createProject();
    const res = await t.request('POST', '/v1/endpoints', { apiKey: other.apiKey, body: { url: 'https://receiver.example/hook', owner_id: A } });
    expectError(await as(tokenA, 'GET', `/v1/endpoints/${res.body.data.id}`), 404, 'ENDPOINT_NOT_FOUND');
    const rows = await t.db.sql<{ id: string; description: string; paused: boolean; deleted_at: Date | null }>`
      SELECT id, description, paused, deleted_at FROM endpoints WHERE id IN (${ep.b}, ${ep.op})`;
    expect(rows.map((r) => [r.description, r.paused, r.deleted_at])).toEqual([['', false, null], ['', false, null]]);
  });

  it('creates endpoints owned by A whatever the body says, behind the same SSRF guard', async () => {
    const res = await as(tokenA, 'POST', '/v1/endpoints', { url: 'https://customer.example/in', owner_id: B, event_types: ['invoice.*'] });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data.owner_id).toBe(A);
    const patched = await as(tokenA, 'PATCH', `/v1/endpoints/${res.body.data.id}`, { owner_id: null, description: 'mine' });
    expect(patched.body.data).toMatchObject({ owner_id: A, description: 'mine' });
    const [row] = await t.db.sql<{ owner_id: string }>`SELECT owner_id FROM endpoints WHERE id = ${res.body.data.id}`;
    expect(row!.owner_id).toBe(A);
    expectError(await as(tokenA, 'POST', '/v1/endpoints', { url: 'https://127.0.0.1/x' }), 400, 'INVALID_REQUEST', 'body.url');
    expectError(await as(tokenA, 'POST', '/v1/endpoints', { url: 'https://customer.example/in', retention_days: 1 }), 400, 'INVALID_REQUEST', 'body.retention_days');
    expectError(await as(tokenA, 'POST', '/v1/endpoints', { url: 'https://customer.example/in', event_types: ['hookrelay.*'] }), 400, 'INVALID_REQUEST', 'body.event_types.0');
  });

  it('reads the live catalogue only: no archived type, none of hookrelay\'s own', async () => {
    const res = await as(tokenA, 'GET', '/v1/event-types?archived=true');
    expect(res.body.data.map((ty: { name: string }) => ty.name)).toEqual(['invoice.paid']);
    expect((await as(tokenA, 'GET', '/v1/event-types/invoice.paid')).status).toBe(200);
    expectError(await as(tokenA, 'GET', '/v1/event-types/invoice.voided'), 404, 'NOT_FOUND');
    expectError(await as(tokenA, 'GET', '/v1/event-types/hookrelay.endpoint.paused'), 404, 'NOT_FOUND');
  });
});

/** /v1 routes that answer without any credential: a portal token gets what anyone gets. */
const PUBLIC_ROUTES = new Set(['GET /v1/openapi.json']);

/** A route's path with every parameter filled: the route check answers before any id is looked at. */
const fill = (route: ServedRoute) => route.path.replace(/:\w+/g, 'x').replace('*', 'x');

describe('the route table fence', () => {
  it('answers a portal token ROUTE_NOT_FOUND on every /v1 route off the portal list, as on a path that does not exist', async () => {
    const v1 = servedRoutes(t.app).filter((route) => route.path.startsWith('/v1/'));
    for (const id of PUBLIC_ROUTES) expect((await t.request(id.split(' ')[0]!, id.split(' ')[1]!, { apiKey: null })).status).toBe(200);
    const closed = v1.filter((route) => !PUBLIC_ROUTES.has(routeKey(route)) && !Object.hasOwn(PORTAL_ROUTES, routeKey(route)));
    expect(closed.length).toBeGreaterThan(50);
    for (const keyed of ['GET /v1/whoami', 'POST /v1/portal-links', 'DELETE /v1/portal-links/:id', 'GET /v1/inbound-endpoints', 'POST /v1/events', 'POST /v1/stream-tickets', 'GET /v1/inbound-endpoints/:id/stream']) {
      expect(closed.map(routeKey)).toContain(keyed);
    }
    const nowhere = await as(tokenA, 'GET', '/v1/no-such-route');
    expectError(nowhere, 404, 'ROUTE_NOT_FOUND');
    for (const route of closed) {
      const res = await as(tokenA, route.method, fill(route), route.method === 'GET' || route.method === 'DELETE' ? undefined : {});
      expect(`${routeKey(route)} ${res.status} ${res.body?.error?.code}`).toBe(`${routeKey(route)} 404 ROUTE_NOT_FOUND`);
      expect(res.body.error.message).toBe(`no route for ${route.method} ${fill(route)}`);
    }
  });

  it('lists only routes the app serves', () => {
    const served = new Set(servedRoutes(t.app).map(routeKey));
    expect(Object.keys(PORTAL_ROUTES).filter((id) => !served.has(id))).toEqual([]);
  });

  it('refuses a read-only token every write on the list, with FORBIDDEN', async () => {
    const writes = Object.entries(PORTAL_ROUTES).filter(([, route]) => route.write);
    expect(writes.length).toBe(9);
    const ids: Record<string, string> = { endpoints: ep.a, messages: msg.a };
    for (const [id] of writes) {
      const [method, path] = id.split(' ') as [string, string];
      const url = path.replace(/\/(\w[\w-]*)\/:id/, (_all, noun: string) => `/${noun}/${ids[noun]}`);
      const res = await as(readOnlyA, method, url, method === 'PATCH' || url === '/v1/endpoints' ? { description: 'x', url: 'https://customer.example/in' } : undefined);
      expectError(res, 403, 'FORBIDDEN', 'read-only');
    }
    const [row] = await t.db.sql<{ description: string; deleted_at: Date | null }>`SELECT description, deleted_at FROM endpoints WHERE id = ${ep.a}`;
    expect(row).toEqual({ description: '', deleted_at: null });
  });
});
