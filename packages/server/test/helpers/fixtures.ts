import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { createPull, ingestEvent } from './pull.js';
import type { ServedRoute } from './routes.js';

/** Ids of every kind of resource one project owns: two of each, so that every list has a second page. */
export interface ProjectFixtures {
  outbound: string[];
  messages: string[];
  /** The first is in cli mode, the second in forward mode. */
  inbound: string[];
  /** Two of the cli endpoint's messages, then one of the forward endpoint's. */
  inboundMessages: string[];
  pulls: string[];
  /** Events of the first pull endpoint. */
  events: string[];
  inboundTokens: string[];
  pullTokens: string[];
  /** A request refused at the cli endpoint's ingest URL. */
  inboundRejections: string[];
  /** A request refused at the first pull endpoint's ingest URL. */
  pullRejections: string[];
  /** Names in the event-type catalogue, the first with a schema; unlike another project's. */
  eventTypes: string[];
  /** Bulk jobs: an outbound retry (running: no worker takes it here), then a replay of the cli endpoint. */
  bulkJobs: string[];
  /** Portal links: a read-write one and a read-only one, of two owners. */
  portalLinks: string[];
}

export type FixtureKind = keyof ProjectFixtures;

async function data(t: TestApp, apiKey: string, method: string, url: string, body?: unknown): Promise<any> {
  const res = await t.request(method, url, { apiKey, ...(body !== undefined ? { body } : {}) });
  expect(res.status, `${method} ${url}: ${res.raw}`).toBeLessThan(300);
  return res.body.data;
}

async function ingest(t: TestApp, token: string, body: string): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}/hooks?x=1`, payload: body, headers: { 'content-type': 'application/json' } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id;
}

/** One project's resources of every kind, made through the API and the ingest URLs. */
export async function createFixtures(t: TestApp, apiKey: string): Promise<ProjectFixtures> {
  const endpoint = await data(t, apiKey, 'POST', '/v1/endpoints', { url: 'https://example.com/fixture', headers: { 'X-Fixture': '1' } });
  const second = await data(t, apiKey, 'POST', '/v1/endpoints', { url: 'https://example.com/fixture/2', rate_limit_rps: 5 });
  const messages = [
    await data(t, apiKey, 'POST', '/v1/messages', { endpoint_id: endpoint.id, payload: { fixture: true } }),
    await data(t, apiKey, 'POST', '/v1/messages', { endpoint_id: second.id, body: 'plain', content_type: 'text/plain', event_type: 'fixture.x' }),
  ];
  const cli = await data(t, apiKey, 'POST', '/v1/inbound-endpoints', { name: 'fixture cli', mode: 'cli' });
  const forward = await data(t, apiKey, 'POST', '/v1/inbound-endpoints', { name: 'fixture forward', url: `https://example.com/fwd/${cli.id}` });
  // Verifies GitHub's signature, so that the samples route signs and ingests instead of refusing.
  const signed = await data(t, apiKey, 'POST', '/v1/inbound-endpoints', { name: 'fixture signed', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'fixture-secret' });
  const pull = await createPull(t, { event_type_source: 'body', event_type_path: 'type' }, apiKey);
  const secondPull = await createPull(t, { event_type_source: 'header', event_type_path: 'X-Event-Type' }, apiKey);
  const inboundMessages = [await ingest(t, cli.secret_token, '{"a":1}'), await ingest(t, cli.secret_token, 'not json'), await ingest(t, forward.secret_token, '{"b":2}')];
  const events = [await ingestEvent(t, pull, { body: '{"type":"x"}' }), await ingestEvent(t, pull, { body: '[1,2]' })];
  expect((await t.app.inject({ method: 'TRACE', url: `/in/${cli.secret_token}` })).statusCode).toBe(405);
  expect((await t.app.inject({ method: 'TRACE', url: pull.path })).statusCode).toBe(405);
  await t.app.engines.ingest!.rejections.idle();
  const inboundRejections = (await data(t, apiKey, 'GET', `/v1/inbound-endpoints/${cli.id}/rejections`)).map((r: { id: string }) => r.id);
  const pullRejections = (await data(t, apiKey, 'GET', `/v1/pull-endpoints/${pull.id}/rejections`)).map((r: { id: string }) => r.id);
  const suffix = randomBytes(4).toString('hex');
  const eventTypes = [
    (await data(t, apiKey, 'POST', '/v1/event-types', { name: `fixture.typed.${suffix}`, schema: { type: 'object' }, example: { a: 1 } })).name,
    (await data(t, apiKey, 'POST', '/v1/event-types', { name: `fixture/plain:${suffix}` })).name,
  ];
  const since = new Date(Date.now() - 60_000).toISOString();
  const bulkJobs = [
    (await data(t, apiKey, 'POST', '/v1/bulk-retries', { filter: { created_after: since, status: ['queued'] } })).id,
    (await data(t, apiKey, 'POST', `/v1/inbound-endpoints/${cli.id}/replays`, { received_after: since })).id,
  ];
  const portalLinks = [
    (await data(t, apiKey, 'POST', '/v1/portal-links', { owner_id: 'fixture_owner' })).id,
    (await data(t, apiKey, 'POST', '/v1/portal-links', { owner_id: 'fixture_other', read_only: true })).id,
  ];
  return {
    outbound: [endpoint.id, second.id],
    messages: messages.map((m) => m.message_id as string),
    inbound: [cli.id, forward.id, signed.id],
    inboundMessages,
    pulls: [pull.id, secondPull.id],
    events,
    inboundTokens: [cli.secret_token, forward.secret_token, signed.secret_token],
    pullTokens: [pull.token, secondPull.token],
    inboundRejections,
    pullRejections,
    eventTypes,
    bulkJobs,
    portalLinks,
  };
}

/** The kind of id a path parameter takes, from the path segment before it (`/pull-endpoints/:id`). */
const KIND_BY_SEGMENT: Record<string, FixtureKind> = {
  endpoints: 'outbound',
  messages: 'messages',
  'inbound-endpoints': 'inbound',
  'inbound-messages': 'inboundMessages',
  'pull-endpoints': 'pulls',
  events: 'events',
  pull: 'pulls',
  'event-types': 'eventTypes',
  'bulk-retries': 'bulkJobs',
  'portal-links': 'portalLinks',
};

/** The fixture kind of a route's path parameter, or undefined for a kind this table does not know yet. */
export function kindOfParam(route: ServedRoute, name: string): FixtureKind | undefined {
  if (name === 'token') return route.path.startsWith('/pull/') ? 'pullTokens' : 'inboundTokens';
  if (name === 'rejection_id') return route.path.startsWith('/v1/pull-endpoints/') ? 'pullRejections' : 'inboundRejections';
  const segments = route.path.split('/');
  return KIND_BY_SEGMENT[segments[segments.indexOf(`:${name}`) - 1] ?? ''];
}
