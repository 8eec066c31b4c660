import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CliMessageOut,
  IdParams,
  InboundMessageOut,
  InboundResultHeaders,
  InboundResultIn,
  ListenMeta,
  LISTEN_PAGE_SIZE,
  RESULT_ACK_BATCHES_HEADER,
  RESULT_ACK_BATCHES_VALUE,
  ListenQuery,
  StreamQuery,
  successEnvelope,
} from '@hookrelay/shared';
import { findInboundEndpoint, findInboundEndpointMode, type InboundEndpointDetailRow } from '../db/inbound-endpoints.js';
import { findInboundMessage } from '../db/inbound-messages.js';
import { AppError, endpointNotFound, notFound } from '../errors.js';
import { principalOf } from '../plugins/auth.js';
import { readCliMessagesAfter } from '../stream/cli-message.js';
import { keepAlive } from '../stream/heartbeat.js';
import type { SocketSlot } from '../stream/sockets.js';
import type { StreamConnections } from '../stream/connections.js';
import type { StreamHub } from '../stream/hub.js';
import type { ResultBatcher } from '../stream/result-batcher.js';
import { listenFilterOf } from '../stream/listen-filter.js';
import { runStreamSession } from '../stream/session.js';
import { resultReport } from '../stream/result-report.js';
import { loadInboundAnswers } from '../http/inbound-answers.js';
import { toInboundMessageOut } from '../views/inbound-message.js';

async function cliEndpoint(fastify: FastifyInstance, request: FastifyRequest, id: string): Promise<InboundEndpointDetailRow> {
  const endpoint = await findInboundEndpoint(fastify.services.db.sql, principalOf(request).project_id, id);
  if (!endpoint) throw endpointNotFound(id);
  if (endpoint.mode !== 'cli') {
    throw new AppError('INVALID_REQUEST', `inbound endpoint ${id} is in forward mode: listen and stream serve cli-mode endpoints only`);
  }
  return endpoint;
}

/** What the listen routes are handed by the composition root. */
export interface ListenRouteEngines {
  streams: StreamHub;
  results: ResultBatcher;
  connections: StreamConnections;
}

/**
 * The CLI's side of cli-mode endpoints (docs/api.md, Listen and stream): the listen page for polling, the
 * WebSocket stream, and the result report of the local app's answer.
 */
export async function listenRoutes(fastify: FastifyInstance, { streams: hub, results, connections }: ListenRouteEngines): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.get(
    '/inbound-endpoints/:id/listen',
    { schema: { params: IdParams, querystring: ListenQuery, response: { 200: successEnvelope(z.array(CliMessageOut), ListenMeta) } } },
    async (request) => {
      const endpoint = await cliEndpoint(fastify, request, request.params.id);
      const after = request.query.after?.toLowerCase() ?? null;
      const forceBase64 = request.query.body_encoding === 'base64';
      const filter = listenFilterOf(request.query);
      const read = await readCliMessagesAfter(services.payloadStore, sql, endpoint.id, after, LISTEN_PAGE_SIZE, forceBase64, {
        filter,
        resign: { signing: await services.senderSigning.get(endpoint.id), afterSeconds: services.config.resignAfterSeconds },
      });
      if (services.tracing.enabled) read.messages.forEach((m, i) => hub.pushSpan(endpoint.id, m.message_id, read.traceContexts[i] ?? null, 'poll').end());
      return { data: read.messages, meta: { request_id: request.id, next_cursor: read.lastId, cursor: read.cursor, has_more: read.more } };
    },
  );

  const streamEndpoints = new WeakMap<FastifyRequest, { endpoint: InboundEndpointDetailRow; slot: SocketSlot }>();
  const heartbeatMs = services.config.streamHeartbeatSeconds * 1000;

  app.get(
    '/inbound-endpoints/:id/stream',
    {
      websocket: true,
      schema: { params: IdParams, querystring: StreamQuery },
      // Before the upgrade: a bad key, an unknown endpoint or a forward-mode one is a plain HTTP
      // error, and so is a socket over the limits (429).
      preHandler: async (request) => {
        const { id } = request.params as { id: string };
        const endpoint = await cliEndpoint(fastify, request, id);
        // Without this a plain GET gets @fastify/websocket's bare 404, outside the error envelope.
        if (!request.ws) throw new AppError('INVALID_REQUEST', `GET /v1/inbound-endpoints/${id}/stream is a WebSocket: send Upgrade: websocket (plain HTTP polls GET .../listen)`);
        streamEndpoints.set(request, { endpoint, slot: services.sockets.reserve(principalOf(request), request.raw.socket) });
      },
    },
    (socket, request) => {
      const { endpoint, slot } = streamEndpoints.get(request)!;
      const principal = principalOf(request);
      const query = request.query as StreamQuery;
      const subscriber = hub.subscribe(endpoint.id, socket, listenFilterOf(query));
      slot.attach(socket, () => hub.unsubscribe(subscriber));
      // Counted while it is open (GET /v1/inbound-endpoints).
      const closeConnection = connections.open(endpoint.id, request.log);
      const heardFrom = keepAlive(socket, heartbeatMs, () => {
        hub.unsubscribe(subscriber);
        closeConnection();
      });
      runStreamSession(
        {
          socket,
          subscriber,
          projectId: principal.project_id,
          endpointId: endpoint.id,
          after: query.after?.toLowerCase(),
          results,
          batchAcks: request.headers[RESULT_ACK_BATCHES_HEADER] === RESULT_ACK_BATCHES_VALUE,
          sql,
          metrics: services.metrics,
          log: request.log,
        },
        heardFrom,
      );
    },
  );

  app.post(
    '/inbound-messages/:id/result',
    {
      schema: { params: IdParams, body: InboundResultIn, headers: InboundResultHeaders, response: { 200: successEnvelope(InboundMessageOut) } },
    },
    async (request) => {
      const id = request.params.id.toLowerCase();
      if (request.body.message_id.toLowerCase() !== id) {
        throw new AppError('INVALID_REQUEST', 'body.message_id: must be the message id of the path', {
          details: [{ path: 'body.message_id', message: 'must be the message id of the path' }],
        });
      }
      const headerId = request.headers['idempotency-key']?.toLowerCase();
      const bodyId = request.body.result_id?.toLowerCase();
      if (headerId !== undefined && bodyId !== undefined && headerId !== bodyId) {
        throw new AppError('INVALID_REQUEST', 'header.idempotency-key: differs from body.result_id (send one, or the same value in both)', {
          details: [{ path: 'header.idempotency-key', message: 'differs from body.result_id' }],
        });
      }
      const projectId = principalOf(request).project_id;
      const message = await findInboundMessage(sql, projectId, id);
      if (!message) throw notFound('inbound message', id);
      // Forward-mode messages belong to the delivery engine: a CLI report must not touch them.
      if ((await findInboundEndpointMode(sql, message.inbound_endpoint_id)) !== 'cli') {
        throw new AppError('INVALID_REQUEST', `inbound message ${id} belongs to a forward-mode endpoint: only cli-mode messages take results`);
      }
      const recorded = await results.record(
        resultReport({ projectId, endpointId: message.inbound_endpoint_id, messageId: id, resultId: headerId ?? bodyId ?? null }, request.body),
      );
      if (!recorded) throw notFound('inbound message', id);
      if (!recorded.duplicate) services.metrics.countDelivery('cli', recorded.row.status);
      return { data: toInboundMessageOut(recorded.row, {}, await loadInboundAnswers(sql, recorded.row.id)), meta: { request_id: request.id } };
    },
  );
}
