import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { IdParams, StreamTicketOut, WatchQuery, successEnvelope } from '@hookrelay/shared';
import { findInboundEndpoint } from '../db/inbound-endpoints.js';
import { AppError, endpointNotFound } from '../errors.js';
import { principalOf } from '../plugins/auth.js';
import { keepAlive } from '../stream/heartbeat.js';
import type { SocketSlot } from '../stream/sockets.js';
import type { WatchHub } from '../stream/watch.js';
import { watchFrameText } from '../stream/frames.js';

/**
 * What a browser needs for live views: a ticket to open a WebSocket without the Authorization
 * header, and a watch socket announcing an endpoint's new messages (both modes) without taking
 * part in their delivery.
 */
export async function watchRoutes(fastify: FastifyInstance, { watch: hub }: { watch: WatchHub }): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.post(
    '/stream-tickets',
    { schema: { response: { 201: successEnvelope(StreamTicketOut) } } },
    async (request, reply) => {
      const { ticket, expiresAt } = services.streamTickets.issue(principalOf(request));
      reply.status(201);
      return { data: { ticket, expires_at: expiresAt.toISOString() }, meta: { request_id: request.id } };
    },
  );

  const cursors = new WeakMap<FastifyRequest, { id: string; cursor: string | null; slot: SocketSlot }>();
  const heartbeatMs = services.config.streamHeartbeatSeconds * 1000;

  app.get(
    '/inbound-endpoints/:id/watch',
    {
      websocket: true,
      config: { acceptsStreamTicket: true },
      schema: { params: IdParams, querystring: WatchQuery },
      preHandler: async (request) => {
        const { id } = request.params as { id: string };
        const endpoint = await findInboundEndpoint(sql, principalOf(request).project_id, id);
        if (!endpoint) throw endpointNotFound(id);
        if (!request.ws) throw new AppError('INVALID_REQUEST', `GET /v1/inbound-endpoints/${id}/watch is a WebSocket: send Upgrade: websocket`);
        const slot = services.sockets.reserve(principalOf(request), request.raw.socket);
        // Read before the watcher exists; its first read picks up anything committed since.
        cursors.set(request, { id: endpoint.id, cursor: endpoint.last_message_id, slot });
      },
    },
    (socket, request) => {
      const { id, cursor, slot } = cursors.get(request)!;
      const watcher = hub.watch(id, socket, cursor);
      slot.attach(socket, () => hub.unwatch(watcher));
      keepAlive(socket, heartbeatMs, () => hub.unwatch(watcher));
      socket.send(watchFrameText({ type: 'ready', cursor }));
      watcher.wake();
    },
  );
}
