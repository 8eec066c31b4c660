import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CliMessageOut,
  DEFAULT_LISTENER,
  IdParams,
  InboundMessageOut,
  InboundResultIn,
  ListenMeta,
  ListenQuery,
  StreamQuery,
  StreamResultFrame,
  newUuidv7,
  successEnvelope,
} from '@hookrelay/shared';
import { findInboundEndpoint, findInboundEndpointMode, type InboundEndpointDetailRow } from '../db/inbound-endpoints.js';
import { findInboundMessage, type InboundAnswer } from '../db/inbound-messages.js';
import {
  deleteProcessStreamConnections,
  deleteStreamConnection,
  insertStreamConnection,
  refreshStreamConnections,
  STALE_AFTER_SECONDS,
} from '../db/stream-connections.js';
import { AppError, endpointNotFound, notFound } from '../errors.js';
import type { IngestItem } from '../ingest/batcher.js';
import { principalOf } from '../plugins/auth.js';
import { readCliMessagesAfter, type CommittedInboundMessage } from '../stream/cli-message.js';
import { keepAlive } from '../stream/heartbeat.js';
import type { SocketSlot } from '../stream/sockets.js';
import { committedFrame, StreamHub } from '../stream/hub.js';
import { ResultBatcher } from '../stream/result-batcher.js';
import { listenFilterOf } from '../stream/listen-filter.js';
import { loadAnswers, toInboundMessageOut } from './inbound-messages.js';

/** Messages per listen page (interface rule 6). */
export const LISTEN_PAGE_SIZE = 50;

/** The answer part of a result report; an old CLI's report is the `default` listener's answer without content. */
function answerOf(report: InboundResultIn): InboundAnswer {
  return {
    listener: report.listener ?? DEFAULT_LISTENER,
    responseHeaders: report.response_headers ?? [],
    responseBodyBase64: report.response_body ?? null,
    responseBodyTruncated: report.response_body_truncated ?? false,
  };
}

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
  services.metrics.trackConnectedClis(() => hub.connectedCount);
  /** A message this process's ingestion is committing, as the hub sends it. */
  const committedRow = (id: string, item: IngestItem, frame?: string): CommittedInboundMessage => ({
    id,
    method: item.method,
    path: item.path,
    query: item.query,
    content_type: item.contentType,
    size_bytes: item.body.length,
    payload_sha256: item.sha256,
    raw_headers: item.rawHeaders,
    received_at: item.receivedAt,
    event_type: item.eventType,
    payload: item.body,
    frame,
  });
  // With the ingest role in this process too, a connected CLI gets a new message straight from its
  // commit, its frame rendered while the commit was in flight.
  const detachCommits = services.inboundCommits.attach({
    wants: (endpointId) => hub.hasSubscribers(endpointId),
    render: ({ id, item }) => committedFrame(committedRow(id, item)),
    publish: ({ endpointId, previousLastId, messages }) =>
      hub.publishCommitted(
        endpointId,
        previousLastId,
        messages.map(({ id, item, rendered }) => committedRow(id, item, rendered)),
      ),
  });
  // Results of all CLIs (stream frames and HTTP reports) share one group commit per batch.
  const results = new ResultBatcher(sql, fastify.log);

  // Each open stream has a row, so that any process can count an endpoint's connected CLIs.
  const processId = newUuidv7();
  const refresh = setInterval(() => {
    refreshStreamConnections(sql, processId).catch((error: unknown) => fastify.log.warn({ err: error }, 'could not refresh the stream connections'));
  }, (STALE_AFTER_SECONDS * 1000) / 3);
  refresh.unref();
  fastify.addHook('onClose', async () => {
    clearInterval(refresh);
    detachCommits();
    await hub.stop();
    await results.idle();
    await deleteProcessStreamConnections(sql, processId).catch(() => undefined);
  });

  app.get(
    '/inbound-endpoints/:id/listen',
    { schema: { params: IdParams, querystring: ListenQuery, response: { 200: successEnvelope(z.array(CliMessageOut), ListenMeta) } } },
    async (request) => {
      const endpoint = await cliEndpoint(fastify, request, request.params.id);
      const after = request.query.after?.toLowerCase() ?? null;
      const forceBase64 = request.query.body_encoding === 'base64';
      const filter = listenFilterOf(request.query);
      const read = await readCliMessagesAfter(services.payloadStore, sql, endpoint.id, after, LISTEN_PAGE_SIZE, forceBase64, filter);
      return { data: read.messages, meta: { request_id: request.id, next_cursor: read.lastId, cursor: read.cursor } };
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
      const connectionId = newUuidv7();
      // Counted while it is open (GET /v1/inbound-endpoints): the row is removed once both the insert and the close happened.
      const registered = insertStreamConnection(sql, { id: connectionId, endpointId: endpoint.id, processId }).then(
        () => true,
        (error: unknown) => {
          request.log.warn({ err: error }, 'could not record a stream connection');
          return false;
        },
      );
      const heardFrom = keepAlive(socket, heartbeatMs, () => {
        hub.unsubscribe(subscriber);
        void registered.then(async (inserted) => {
          if (inserted) await deleteStreamConnection(sql, connectionId).catch(() => undefined);
        });
      });
      socket.on('message', (data, isBinary) => {
        heardFrom();
        if (isBinary) return;
        let frame: StreamResultFrame;
        try {
          frame = StreamResultFrame.parse(JSON.parse(data.toString()));
        } catch {
          request.log.info({ inbound_endpoint_id: endpoint.id }, 'ignored a stream frame that is not a result');
          return;
        }
        const report = {
          projectId: principal.project_id,
          endpointId: endpoint.id,
          messageId: frame.message_id.toLowerCase(),
          result: { status: frame.status, latencyMs: frame.latency_ms, error: frame.error },
          answer: answerOf(frame),
        };
        // The protocol has no answer to a result frame: a report that cannot be recorded is logged.
        results
          .record(report, { canWait: true })
          .then((row) => row && services.metrics.countDelivery('cli', row.status))
          .catch((error: unknown) => request.log.warn({ err: error }, 'could not record a stream result'));
      });

      // Registered first, then the start cursor read: a commit in between still wakes the stream.
      const after = query.after?.toLowerCase();
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
      const row = await results.record({
        projectId,
        endpointId: message.inbound_endpoint_id,
        messageId: id,
        result: { status: request.body.status, latencyMs: request.body.latency_ms, error: request.body.error },
        answer: answerOf(request.body),
      });
      if (!row) throw notFound('inbound message', id);
      services.metrics.countDelivery('cli', row.status);
      return { data: toInboundMessageOut(row, {}, await loadAnswers(sql, row.id)), meta: { request_id: request.id } };
    },
  );
}
