import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  CliMessageOut,
  DEFAULT_LISTENER,
  IdParams,
  InboundMessageOut,
  InboundResultHeaders,
  InboundResultIn,
  ListenMeta,
  LISTEN_PAGE_SIZE,
  ListenQuery,
  StreamQuery,
  StreamResultFrame,
  Uuid,
  successEnvelope,
  type ResultAckOutcome,
  type StreamResultAckFrame,
} from '@hookrelay/shared';
import { findInboundEndpoint, findInboundEndpointMode, type InboundEndpointDetailRow } from '../db/inbound-endpoints.js';
import { findInboundMessage, type InboundAnswer } from '../db/inbound-messages.js';
import { AppError, endpointNotFound, notFound } from '../errors.js';
import { principalOf } from '../plugins/auth.js';
import { readCliMessagesAfter } from '../stream/cli-message.js';
import { keepAlive } from '../stream/heartbeat.js';
import type { SocketSlot } from '../stream/sockets.js';
import type { StreamConnections } from '../stream/connections.js';
import type { StreamHub } from '../stream/hub.js';
import { streamFrameText } from '../stream/frames.js';
import type { ResultBatcher } from '../stream/result-batcher.js';
import { listenFilterOf } from '../stream/listen-filter.js';
import { loadAnswers, toInboundMessageOut } from './inbound-messages.js';

/** Enough of a frame that is not a valid result to acknowledge it as refused: its type and its result id. */
const IdentifiedResult = z.object({ type: z.literal('result'), result_id: Uuid });

/** The first problem of an invalid result frame, as `field: message`. */
function frameProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'not a valid result frame';
  const path = issue.path.map(String).join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

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
      const read = await readCliMessagesAfter(services.payloadStore, sql, endpoint.id, after, LISTEN_PAGE_SIZE, forceBase64, filter);
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
      /** After the commit that settled it (never before): the CLI forgets a report once acknowledged. */
      const acknowledge = (resultId: string, outcome: ResultAckOutcome, message?: string): void => {
        if (socket.readyState !== socket.OPEN) return;
        const ack: StreamResultAckFrame = { type: 'result_ack', result_id: resultId, outcome };
        if (message !== undefined) ack.message = message;
        socket.send(streamFrameText(ack));
      };
      socket.on('message', (data, isBinary) => {
        heardFrom();
        if (isBinary) return;
        let parsed: unknown;
        try {
          parsed = JSON.parse(data.toString());
        } catch {
          request.log.info({ inbound_endpoint_id: endpoint.id }, 'ignored a stream frame that is not JSON');
          return;
        }
        const checked = StreamResultFrame.safeParse(parsed);
        if (!checked.success) {
          const identified = IdentifiedResult.safeParse(parsed);
          request.log.info({ inbound_endpoint_id: endpoint.id }, 'ignored a stream frame that is not a result');
          // Refused for good: acknowledged, so that the CLI does not send it again at every reconnection.
          if (identified.success) acknowledge(identified.data.result_id.toLowerCase(), 'refused', frameProblem(checked.error));
          return;
        }
        const frame = checked.data;
        const resultId = frame.result_id?.toLowerCase() ?? null;
        const report = {
          projectId: principal.project_id,
          endpointId: endpoint.id,
          messageId: frame.message_id.toLowerCase(),
          resultId,
          result: { status: frame.status, latencyMs: frame.latency_ms, error: frame.error },
          answer: answerOf(frame),
        };
        // A report that cannot be recorded (the database is away) is not acknowledged: the CLI sends it again.
        results
          .record(report, { canWait: true })
          .then((recorded) => {
            if (recorded !== undefined && !recorded.duplicate) services.metrics.countDelivery('cli', recorded.row.status);
            if (resultId !== null) acknowledge(resultId, recorded === undefined ? 'not_found' : recorded.duplicate ? 'duplicate' : 'recorded');
          })
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
        socket.send(streamFrameText({ type: 'ready', cursor, result_acks: true }));
        subscriber.start(cursor);
      })().catch((error: unknown) => {
        request.log.warn({ err: error }, 'stream could not start');
        socket.close(1011, 'internal error');
      });
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
      const recorded = await results.record({
        projectId,
        endpointId: message.inbound_endpoint_id,
        messageId: id,
        resultId: headerId ?? bodyId ?? null,
        result: { status: request.body.status, latencyMs: request.body.latency_ms, error: request.body.error },
        answer: answerOf(request.body),
      });
      if (!recorded) throw notFound('inbound message', id);
      if (!recorded.duplicate) services.metrics.countDelivery('cli', recorded.row.status);
      return { data: toInboundMessageOut(recorded.row, {}, await loadAnswers(sql, recorded.row.id)), meta: { request_id: request.id } };
    },
  );
}
