import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CliMessageOut,
  IdParams,
  InboundMessageOut,
  InboundResultIn,
  ListenQuery,
  StreamQuery,
  StreamResultFrame,
  successEnvelope,
} from '@hookrelay/shared';
import { findInboundEndpoint, findInboundEndpointMode, type InboundEndpointDetailRow } from '../db/inbound-endpoints.js';
import { findInboundMessage, listInboundMessagesAfter, recordInboundResult } from '../db/inbound-messages.js';
import { AppError, endpointNotFound, notFound } from '../errors.js';
import { principalOf } from '../plugins/auth.js';
import { toCliMessages } from '../stream/cli-message.js';
import { StreamHub } from '../stream/hub.js';
import { toInboundMessageOut } from './inbound-messages.js';

/** Messages per listen page (interface rule 6). */
export const LISTEN_PAGE_SIZE = 50;

const ListenMeta = z.object({ request_id: z.string(), next_cursor: z.string().nullable() });

async function cliEndpoint(fastify: FastifyInstance, request: FastifyRequest, id: string): Promise<InboundEndpointDetailRow> {
  const endpoint = await findInboundEndpoint(fastify.services.db.sql, principalOf(request).project_id, id);
  if (!endpoint) throw endpointNotFound(id);
  if (endpoint.mode !== 'cli') {
    throw new AppError('INVALID_REQUEST', `inbound endpoint ${id} is in forward mode: listen and stream serve cli-mode endpoints only`);
  }
  return endpoint;
}

/**
 * The CLI's side of cli-mode endpoints (decisions.md §5): the listen page for polling, the
 * WebSocket stream, and the result report of the local app's answer.
 */
export async function listenRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  const hub = new StreamHub(services.db, services.payloadStore, fastify.log);
  await hub.start();
  fastify.addHook('onClose', async () => {
    await hub.stop();
  });

  app.get(
    '/inbound-endpoints/:id/listen',
    { schema: { params: IdParams, querystring: ListenQuery, response: { 200: successEnvelope(z.array(CliMessageOut), ListenMeta) } } },
    async (request) => {
      const endpoint = await cliEndpoint(fastify, request, request.params.id);
      const rows = await listInboundMessagesAfter(sql, endpoint.id, request.query.after?.toLowerCase() ?? null, LISTEN_PAGE_SIZE);
      const messages = await toCliMessages(services.payloadStore, sql, rows, request.query.body_encoding === 'base64');
      const last = rows[rows.length - 1];
      return { data: messages, meta: { request_id: request.id, next_cursor: last ? last.id : null } };
    },
  );

  const streamEndpoints = new WeakMap<FastifyRequest, InboundEndpointDetailRow>();
  const heartbeatMs = services.config.streamHeartbeatSeconds * 1000;

  app.get(
    '/inbound-endpoints/:id/stream',
    {
      websocket: true,
      schema: { params: IdParams, querystring: StreamQuery },
      // Before the upgrade: a bad key, an unknown endpoint or a forward-mode one is a plain HTTP error.
      preHandler: async (request) => {
        const { id } = request.params as { id: string };
        streamEndpoints.set(request, await cliEndpoint(fastify, request, id));
      },
    },
    (socket, request) => {
      const endpoint = streamEndpoints.get(request)!;
      const principal = principalOf(request);
      const subscriber = hub.subscribe(endpoint.id, socket);
      let alive = true;
      const heartbeat = setInterval(() => {
        if (!alive) return socket.terminate();
        alive = false;
        socket.ping();
      }, heartbeatMs);
      socket.on('pong', () => (alive = true));
      socket.on('close', () => {
        clearInterval(heartbeat);
        hub.unsubscribe(subscriber);
      });
      socket.on('message', (data, isBinary) => {
        alive = true;
        if (isBinary) return;
        let frame: StreamResultFrame;
        try {
          frame = StreamResultFrame.parse(JSON.parse(data.toString()));
        } catch {
          request.log.info({ inbound_endpoint_id: endpoint.id }, 'ignored a stream frame that is not a result');
          return;
        }
        void recordInboundResult(sql, principal.project_id, frame.message_id.toLowerCase(), { status: frame.status, latencyMs: frame.latency_ms, error: frame.error }, endpoint.id).catch(
          (error: unknown) => request.log.warn({ err: error }, 'could not record a stream result'),
        );
      });

      // Registered first, then the start cursor read: a commit in between still wakes the stream.
      const after = (request.query as { after?: string }).after?.toLowerCase();
      void (async () => {
        let cursor: string | null;
        if (after !== undefined) cursor = after;
        else {
          const current = await findInboundEndpoint(sql, principal.project_id, endpoint.id);
          cursor = current?.last_message_id ?? null;
        }
        socket.send(JSON.stringify({ type: 'ready', cursor }));
        subscriber.start(cursor);
      })().catch((error: unknown) => {
        request.log.warn({ err: error }, 'stream could not start');
        socket.close(1011, 'internal error');
      });
    },
  );

  app.post(
    '/inbound-messages/:id/result',
    { schema: { params: IdParams, body: InboundResultIn, response: { 200: successEnvelope(InboundMessageOut) } } },
    async (request) => {
      const id = request.params.id.toLowerCase();
      if (request.body.message_id.toLowerCase() !== id) {
        throw new AppError('INVALID_REQUEST', 'body.message_id: must be the message id of the path', {
          details: [{ path: 'body.message_id', message: 'must be the message id of the path' }],
        });
      }
      const projectId = principalOf(request).project_id;
      const message = await findInboundMessage(sql, projectId, id);
      if (!message) throw notFound('inbound message', id);
      // Forward-mode messages belong to the delivery engine: a CLI report must not touch them.
      if ((await findInboundEndpointMode(sql, message.inbound_endpoint_id)) !== 'cli') {
        throw new AppError('INVALID_REQUEST', `inbound message ${id} belongs to a forward-mode endpoint: only cli-mode messages take results`);
      }
      const row = await recordInboundResult(
        sql,
        projectId,
        id,
        { status: request.body.status, latencyMs: request.body.latency_ms, error: request.body.error },
        message.inbound_endpoint_id,
      );
      if (!row) throw notFound('inbound message', id);
      return { data: toInboundMessageOut(row, {}), meta: { request_id: request.id } };
    },
  );
}
