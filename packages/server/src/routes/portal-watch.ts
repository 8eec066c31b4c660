import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { StreamTicketOut, WatchQuery, successEnvelope } from '@hookrelay/shared';
import type { PortalLinkPrincipal } from '../db/portal-links.js';
import { AppError } from '../errors.js';
import { keepAlive } from '../stream/heartbeat.js';
import { PortalWatcher } from '../stream/portal-watch.js';
import type { SocketSlot } from '../stream/sockets.js';

/** An API key has no portal socket: for it these routes are ones that do not exist. */
function portalOf(request: FastifyRequest): PortalLinkPrincipal {
  if (request.portal === undefined) throw new AppError('NOT_FOUND', 'an API key has no portal socket: this route answers portal tokens');
  return request.portal;
}

/**
 * The portal page's live socket (docs/api.md, Portal links): a ticket from the portal token, then
 * a socket that carries only the token owner's endpoints, messages and attempts, closed when the
 * link expires or is revoked.
 */
export async function portalWatchRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const slots = new WeakMap<FastifyRequest, SocketSlot>();
  const heartbeatMs = services.config.streamHeartbeatSeconds * 1000;

  app.post(
    '/portal/stream-tickets',
    { schema: { response: { 201: successEnvelope(StreamTicketOut) } } },
    async (request, reply) => {
      const { ticket, expiresAt } = services.streamTickets.issuePortal(portalOf(request));
      reply.status(201);
      return { data: { ticket, expires_at: expiresAt.toISOString() }, meta: { request_id: request.id } };
    },
  );

  app.get(
    '/portal/watch',
    {
      websocket: true,
      config: { acceptsStreamTicket: true },
      schema: { querystring: WatchQuery },
      preHandler: async (request) => {
        const portal = portalOf(request);
        if (!request.ws) throw new AppError('INVALID_REQUEST', 'GET /v1/portal/watch is a WebSocket: send Upgrade: websocket');
        slots.set(request, services.sockets.reservePortal(portal, request.raw.socket));
      },
    },
    (socket, request) => {
      const slot = slots.get(request)!;
      const watcher = new PortalWatcher(socket, services.db.sql, request.portal!, request.log);
      slot.attach(socket, () => watcher.close());
      keepAlive(socket, heartbeatMs, () => watcher.close());
      watcher.start();
    },
  );
}
