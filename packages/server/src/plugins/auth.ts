import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiKeyPrincipal } from '../db/api-keys.js';
import { findPrincipalByKeyHash, findPrincipalByKeyId } from '../db/api-keys.js';
import type { PortalLinkPrincipal } from '../db/portal-links.js';
import { findPrincipalByPortalLinkId, findPrincipalByPortalTokenHash } from '../db/portal-links.js';
import { ownValue, PORTAL_TOKEN_PREFIX } from '@hookrelay/shared';
import { AppError } from '../errors.js';
import { sha256Hex } from '../security/crypto.js';
import { admitPortalRequest } from './portal-scope.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key of the request; undefined for a portal token's. */
    principal: ApiKeyPrincipal | undefined;
    /** The portal link of a request made with its token (docs/api.md, Portal links). */
    portal: PortalLinkPrincipal | undefined;
  }
  interface FastifyContextConfig {
    /** The route also takes a stream ticket (`?ticket=`) instead of the Authorization header. */
    acceptsStreamTicket?: boolean;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The API key of a /v1 request (set by the auth hook). A portal token has none: a route that asks
 * for one and was let through to it anyway answers as a route that does not exist, as every route
 * off the portal's list does.
 */
export function principalOf(request: FastifyRequest): ApiKeyPrincipal {
  if (request.principal !== undefined) return request.principal;
  if (request.portal !== undefined) throw new AppError('ROUTE_NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`);
  throw new AppError('UNAUTHORIZED', 'API key is invalid or missing');
}

/** The project of a request made with an API key or a portal token (the routes a portal token reaches). */
export function projectIdOf(request: FastifyRequest): string {
  return request.portal?.project_id ?? principalOf(request).project_id;
}

/** The one owner a portal token's request is held to; undefined for an API key, which reaches every owner. */
export function portalOwnerOf(request: FastifyRequest): string | undefined {
  return request.portal?.owner_id;
}

/**
 * `Authorization: Bearer <key>` on every call of the scope it is registered in; a route marked
 * `acceptsStreamTicket` (a browser's WebSocket) takes a ticket from POST /v1/stream-tickets (a portal
 * link's from POST /v1/portal/stream-tickets) instead.
 * A bearer token with the portal prefix is a portal link's, admitted to the portal's routes only
 * (plugins/portal-scope.ts). Runs in onRequest, before the body is read, so an unauthenticated
 * caller cannot make the server parse a large body.
 */
export function registerApiKeyAuth(app: FastifyInstance): void {
  app.decorateRequest('principal', undefined);
  app.decorateRequest('portal', undefined);
  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization;
    const query = request.query as { ticket?: unknown } | undefined;
    const ticket = query === undefined ? undefined : ownValue(query, 'ticket');
    if (header === undefined && typeof ticket === 'string' && ownValue(request.routeOptions.config, 'acceptsStreamTicket') === true) {
      const redeemed = app.services.streamTickets.redeem(ticket);
      if (redeemed !== undefined && 'portalLinkId' in redeemed) {
        const portal = await findPrincipalByPortalLinkId(app.services.db.sql, redeemed.portalLinkId, redeemed.projectId);
        if (!portal) throw new AppError('UNAUTHORIZED', 'portal link is invalid, expired or revoked: ask for a new link');
        request.portal = portal;
        admitPortalRequest(request);
        return;
      }
      const principal = redeemed && (await findPrincipalByKeyId(app.services.db.sql, redeemed.apiKeyId, redeemed.projectId));
      if (!principal) throw new AppError('UNAUTHORIZED', 'stream ticket is invalid, expired or already used: POST /v1/stream-tickets for a new one');
      request.principal = principal;
      return;
    }
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    if (!match) throw new AppError('UNAUTHORIZED', 'API key is invalid or missing: send Authorization: Bearer <API key>');
    const token = match[1]!;
    if (token.startsWith(PORTAL_TOKEN_PREFIX)) {
      const portal = await findPrincipalByPortalTokenHash(app.services.db.sql, sha256Hex(token));
      if (!portal) throw new AppError('UNAUTHORIZED', 'portal link is invalid, expired or revoked: ask for a new link');
      request.portal = portal;
      admitPortalRequest(request);
      return;
    }
    const principal = await findPrincipalByKeyHash(app.services.db.sql, sha256Hex(token));
    if (!principal) throw new AppError('UNAUTHORIZED', 'API key is invalid or missing');
    request.principal = principal;
  });
}
