import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isReservedEventTypeName, RESERVED_EVENT_TYPE_PREFIX } from '@hookrelay/shared';
import { findEventType } from '../db/event-types.js';
import { findResourceOwner } from '../db/portal-links.js';
import { AppError, endpointNotFound, invalidRequest, notFound } from '../errors.js';

/** What a route's path parameter names, whose owner must be the portal token's. */
type Owned = 'endpoint' | 'message' | 'event' | 'eventType' | 'bulkJob';

interface PortalRoute {
  /** The route changes something: a read-only link is refused it. */
  write?: true;
  /** `:id` (`:name`) names a resource of this kind, which must be the token's owner's. */
  owns?: Owned;
  /** The body's `endpoint_id` names an outbound endpoint, which must be the token's owner's. */
  bodyOwns?: 'endpoint';
  /**
   * `owner_id` of the body (a create, an update), of the query (a list) or of the body's `filter`
   * (a bulk retry) is set to the token's owner, whatever was sent.
   */
  forceOwner?: 'body' | 'query' | 'filter';
}

/**
 * The one list of what a portal token may call (docs/api.md, Portal links), by Fastify's route id
 * (`METHOD /v1/path/:param`). Every other route answers a portal token ROUTE_NOT_FOUND, exactly
 * as a path that exists nowhere: a route added later is closed to portal tokens until it is added
 * here. What the owner checks cannot see (lists without an owner filter of their own, the catalogue)
 * the route's handler holds to `portalOwnerOf` (plugins/auth.ts).
 */
export const PORTAL_ROUTES: Readonly<Record<string, PortalRoute>> = {
  'GET /v1/portal/session': {},
  'POST /v1/portal/stream-tickets': {},
  'GET /v1/portal/watch': {},
  'POST /v1/portal/test-events': { write: true, bodyOwns: 'endpoint' },
  'GET /v1/endpoints': { forceOwner: 'query' },
  'POST /v1/endpoints': { write: true, forceOwner: 'body' },
  'GET /v1/endpoints/:id': { owns: 'endpoint' },
  'PATCH /v1/endpoints/:id': { write: true, owns: 'endpoint', forceOwner: 'body' },
  'DELETE /v1/endpoints/:id': { write: true, owns: 'endpoint' },
  'POST /v1/endpoints/:id/pause': { write: true, owns: 'endpoint' },
  'POST /v1/endpoints/:id/resume': { write: true, owns: 'endpoint' },
  'POST /v1/endpoints/:id/rotate-secret': { write: true, owns: 'endpoint' },
  'GET /v1/events': { forceOwner: 'query' },
  'GET /v1/events/:id': { owns: 'event' },
  'GET /v1/logs': {},
  'GET /v1/messages/:id': { owns: 'message' },
  'GET /v1/messages/:id/attempts': { owns: 'message' },
  'POST /v1/messages/:id/retry': { write: true, owns: 'message' },
  'POST /v1/bulk-retries': { write: true, forceOwner: 'filter' },
  'GET /v1/bulk-retries/:id': { owns: 'bulkJob' },
  'GET /v1/event-types': {},
  'GET /v1/event-types/:name': { owns: 'eventType' },
};

/** Settings of an outbound endpoint that stay the operator's: a portal write that sets one is refused. */
const OPERATOR_FIELDS = ['retention_days', 'ephemeral', 'ttl_minutes'] as const;

/** A route's id as PORTAL_ROUTES keys it; HEAD is answered by its GET route. */
function routeId(request: FastifyRequest): string {
  const method = request.method === 'HEAD' ? 'GET' : request.method;
  return `${method} ${request.routeOptions.url ?? ''}`;
}

const noSuchRoute = (request: FastifyRequest) => new AppError('ROUTE_NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`);

function portalRoute(request: FastifyRequest): PortalRoute | undefined {
  const id = routeId(request);
  return Object.hasOwn(PORTAL_ROUTES, id) ? PORTAL_ROUTES[id] : undefined;
}

/**
 * The route check of a portal token's request, in the auth hook (before the body is read): a route
 * off the list is 404, as if it did not exist; a write with a read-only link is 403 FORBIDDEN.
 */
export function admitPortalRequest(request: FastifyRequest): void {
  const route = portalRoute(request);
  if (route === undefined) throw noSuchRoute(request);
  if (route.write && request.portal!.read_only) {
    throw new AppError('FORBIDDEN', 'this portal link is read-only: it may read, not change anything');
  }
}

function refuseOperatorFields(body: Record<string, unknown>): void {
  for (const field of OPERATOR_FIELDS) {
    if (body[field] !== undefined) throw invalidRequest(`body.${field}: is set by the operator, not through a portal link`, [{ path: `body.${field}`, message: 'is set by the operator, not through a portal link' }]);
  }
  const globs = body.event_types;
  if (Array.isArray(globs)) {
    const index = globs.findIndex((glob) => typeof glob === 'string' && glob.startsWith(RESERVED_EVENT_TYPE_PREFIX));
    if (index >= 0) {
      const message = `"${RESERVED_EVENT_TYPE_PREFIX}" types are hookrelay's operational events, not a portal's to subscribe to`;
      throw invalidRequest(`body.event_types.${index}: ${message}`, [{ path: `body.event_types.${index}`, message }]);
    }
  }
}

/** The resource a path names, as the route itself answers for one that does not exist. */
async function assertOwned(app: FastifyInstance, request: FastifyRequest, kind: Owned): Promise<void> {
  const portal = request.portal!;
  const params = request.params as Record<string, string>;
  const { sql } = app.services.db;
  if (kind === 'eventType') {
    const name = params.name!;
    const row = isReservedEventTypeName(name) ? undefined : await findEventType(sql, portal.project_id, name);
    if (!row || row.archived) throw notFound('event type', name);
    return;
  }
  const id = params.id!;
  await assertOwnedId(app, request, kind, id);
}

async function assertOwnedId(app: FastifyInstance, request: FastifyRequest, kind: Exclude<Owned, 'eventType'>, id: string): Promise<void> {
  const portal = request.portal!;
  const owner = await findResourceOwner(app.services.db.sql, portal.project_id, kind, id);
  if (owner?.owner_id === portal.owner_id) return;
  throw kind === 'endpoint' ? endpointNotFound(id) : notFound(kind === 'bulkJob' ? 'bulk job' : kind, id);
}

/**
 * Registers the portal scope on the /v1 scope: the owner checks and forced owners of the portal
 * routes (a preHandler, after validation, so that ids and bodies are well formed), and, once every
 * route is registered, a check that each route on PORTAL_ROUTES exists, so that a renamed route
 * cannot leave the portal's list naming nothing.
 */
export function registerPortalScope(app: FastifyInstance): void {
  const registered = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) registered.add(`${method} ${route.url}`);
  });
  app.addHook('onReady', async () => {
    const missing = Object.keys(PORTAL_ROUTES).filter((id) => !registered.has(id));
    if (missing.length > 0) throw new Error(`PORTAL_ROUTES names routes that do not exist: ${missing.join(', ')}`);
  });
  app.addHook('preHandler', async (request) => {
    if (request.portal === undefined) return;
    const route = portalRoute(request);
    if (route === undefined) throw noSuchRoute(request);
    if (route.owns !== undefined) await assertOwned(app, request, route.owns);
    if (route.bodyOwns !== undefined) await assertOwnedId(app, request, route.bodyOwns, (request.body as { endpoint_id: string }).endpoint_id);
    if (route.forceOwner === 'filter') {
      (request.body as { filter: Record<string, unknown> }).filter.owner_id = request.portal.owner_id;
    } else if (route.forceOwner === 'body') {
      const body = (request.body ?? {}) as Record<string, unknown>;
      refuseOperatorFields(body);
      body.owner_id = request.portal.owner_id;
      request.body = body;
    } else if (route.forceOwner === 'query') {
      (request.query as Record<string, unknown>).owner_id = request.portal.owner_id;
    }
  });
}
