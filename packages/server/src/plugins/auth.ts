import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiKeyPrincipal } from '../db/api-keys.js';
import { findPrincipalByKeyHash, findPrincipalByKeyId } from '../db/api-keys.js';
import { ownValue } from '@hookrelay/shared';
import { AppError } from '../errors.js';
import { sha256Hex } from '../security/crypto.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: ApiKeyPrincipal | undefined;
  }
  interface FastifyContextConfig {
    /** The route also takes a stream ticket (`?ticket=`) instead of the Authorization header. */
    acceptsStreamTicket?: boolean;
  }
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The authenticated principal of a /v1 request (set by the auth hook). */
export function principalOf(request: FastifyRequest): ApiKeyPrincipal {
  if (request.principal === undefined) throw new AppError('UNAUTHORIZED', 'API key is invalid or missing');
  return request.principal;
}

/**
 * `Authorization: Bearer <key>` on every call of the scope it is registered in; a route marked
 * `acceptsStreamTicket` (a browser's WebSocket) takes a ticket from POST /v1/stream-tickets instead. Runs in onRequest,
 * before the body is read, so an unauthenticated caller cannot make the server parse a large body.
 */
export function registerApiKeyAuth(app: FastifyInstance): void {
  app.decorateRequest('principal', undefined);
  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization;
    const query = request.query as { ticket?: unknown } | undefined;
    const ticket = query === undefined ? undefined : ownValue(query, 'ticket');
    if (header === undefined && typeof ticket === 'string' && ownValue(request.routeOptions.config, 'acceptsStreamTicket') === true) {
      const redeemed = app.services.streamTickets.redeem(ticket);
      const principal = redeemed && (await findPrincipalByKeyId(app.services.db.sql, redeemed.apiKeyId, redeemed.projectId));
      if (!principal) throw new AppError('UNAUTHORIZED', 'stream ticket is invalid, expired or already used: POST /v1/stream-tickets for a new one');
      request.principal = principal;
      return;
    }
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    if (!match) throw new AppError('UNAUTHORIZED', 'API key is invalid or missing: send Authorization: Bearer <API key>');
    const principal = await findPrincipalByKeyHash(app.services.db.sql, sha256Hex(match[1]!));
    if (!principal) throw new AppError('UNAUTHORIZED', 'API key is invalid or missing');
    request.principal = principal;
  });
}
