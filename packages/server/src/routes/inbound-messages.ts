import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  AttemptOut,
  EndpointMessagesMeta,
  IdParams,
  InboundAnswerSummaryOut,
  InboundEndpointMessageOut,
  InboundEndpointMessagesQuery,
  InboundLogRecordOut,
  InboundLogsQuery,
  InboundMessageDeleteBatchIn,
  InboundMessageDeleteBatchOut,
  InboundMessageDeleteOut,
  InboundMessageOut,
  hasReplayEdits,
  InboundReplayIn,
  InboundReplayOut,
  PageMetaWithMore,
  successEnvelope,
} from '@hookrelay/shared';
import { findInboundEndpoint } from '../db/inbound-endpoints.js';
import {
  findInboundMessage,
  listEndpointMessages,
  listInboundAnswers,
  listInboundLogs,
  softDeleteInboundMessages,
  type EndpointMessageRow,
} from '../db/inbound-messages.js';
import { INBOUND_REPLAY_CHANNEL, replayNotice } from '../db/channels.js';
import { replayInboundMessages } from '../delivery/redeliver.js';
import { AppError, endpointNotFound, notFound } from '../errors.js';
import { openPayload, PayloadUnavailableError } from '../storage/payload-store.js';
import { startedStream } from '../lib/streams.js';
import { loadBody } from '../lib/body.js';
import { ID_KEYSET, readPage } from '../lib/cursor.js';
import { principalOf } from '../plugins/auth.js';
import { refuseNul } from '../security/text.js';
import { batchDeleteResult, uniqueIds } from '../lib/batch-delete.js';
import { listAttempts } from '../db/messages.js';
import { loadInboundAnswers } from '../http/inbound-answers.js';
import { storeEditedCopy } from '../http/edited-replay.js';
import { searchMessages } from '../http/message-search.js';
import type { IngestBatcher } from '../ingest/batcher.js';
import { toAttemptOut } from '../views/attempt.js';
import { toInboundEndpointMessageOut } from '../views/endpoint-message.js';
import { toInboundAnswerSummaryOut } from '../views/inbound-answer.js';
import { toInboundLogRecordOut, toInboundMessageOut } from '../views/inbound-message.js';

const EndpointMessagesQuery = refuseNul(InboundEndpointMessagesQuery);
/** The new body is webhook content: it may hold NUL, as a received body may. */
const ReplayBody = refuseNul(InboundReplayIn, ['body']);

/** `body_max_bytes`: a larger body is left out of the answer (its bytes come from GET …/body). */
const MessageGetQuery = z.strictObject({
  body_encoding: z.enum(['base64'], { message: 'must be base64' }).optional(),
  body_max_bytes: z.coerce.number({ message: 'must be an integer' }).int('must be an integer').min(0, 'must be 0 or more').optional(),
});

/** A single `bytes=START-END` or `bytes=START-` range within `size`; anything else reads the whole body. */
function byteRange(header: string | undefined, size: number): { start: number; end: number } | null {
  const match = header === undefined ? null : /^bytes=(\d{1,15})-(\d{0,15})$/.exec(header.trim());
  if (!match) return null;
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  return start < size && start <= end ? { start, end } : null;
}

/** A download name for a body: the message id, with an extension for the common text types. */
function bodyFileName(id: string, contentType: string): string {
  const type = contentType.toLowerCase();
  const extension = type.includes('json') ? 'json' : type.includes('xml') ? 'xml' : type.startsWith('text/') || type.includes('x-www-form-urlencoded') ? 'txt' : 'bin';
  return `${id}.${extension}`;
}

/**
 * `batcher`: the process's ingest writer, which stores edited replays' copies (null without the
 * ingest role).
 */
export async function inboundMessageRoutes(fastify: FastifyInstance, { batcher }: { batcher: IngestBatcher | null }): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;
  const edited = { sql, config: services.config, payloadStore: services.payloadStore, secretBox: services.secretBox, batcher };

  app.get(
    '/inbound-messages/:id',
    { schema: { params: IdParams, querystring: MessageGetQuery, response: { 200: successEnvelope(InboundMessageOut) } } },
    async (request) => {
      const row = await findInboundMessage(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw notFound('inbound message', request.params.id);
      // A deleted message answers its metadata only: its payload is unreachable at once.
      const omitted = request.query.body_max_bytes !== undefined && row.size_bytes > request.query.body_max_bytes;
      const body = row.deleted_at || omitted ? {} : await loadBody(services.payloadStore, sql, row.payload_key, row.content_type, request.query.body_encoding === 'base64', row.size_bytes);
      return { data: toInboundMessageOut(row, body, await loadInboundAnswers(sql, row.id, row.deleted_at !== null)), meta: { request_id: request.id } };
    },
  );

  // The stored bytes as they were received, for a download: an attachment, never rendered on the
  // API's origin whatever its content type. One `Range: bytes=…` is served as 206 (a preview).
  app.get(
    '/inbound-messages/:id/body',
    { schema: { params: IdParams } },
    async (request, reply) => {
      const id = request.params.id;
      const row = await findInboundMessage(sql, principalOf(request).project_id, id);
      if (!row) throw notFound('inbound message', id);
      if (row.deleted_at || row.payload_key === null) throw new AppError('NOT_FOUND', `inbound message ${id} has no body: it was deleted`);
      const size = row.size_bytes;
      const range = byteRange(request.headers.range, size);
      let body: Readable | undefined;
      try {
        // Read as a stream (a blob never whole in memory); its first piece is read before the
        // answer starts, so that a store that cannot be read is answered 503, not a cut 200.
        const opened = await openPayload(services.payloadStore, sql, row.payload_key, size, range ?? undefined);
        body = opened === undefined ? undefined : await startedStream(opened);
      } catch (error) {
        if (error instanceof PayloadUnavailableError) throw new AppError('SERVICE_UNAVAILABLE', 'the payload store is unavailable; retry later', { retryAfterSeconds: 10 });
        throw error;
      }
      if (body === undefined) throw new AppError('NOT_FOUND', `inbound message ${id} has no body: it was deleted`);
      reply
        .header('content-type', row.content_type === '' ? 'application/octet-stream' : row.content_type)
        .header('content-disposition', `attachment; filename="${bodyFileName(row.id, row.content_type)}"`)
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('accept-ranges', 'bytes')
        .header('x-payload-sha256', row.payload_sha256);
      if (range === null) return reply.status(200).header('content-length', String(size)).send(body);
      return reply
        .status(206)
        .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
        .header('content-length', String(range.end - range.start + 1))
        .send(body);
    },
  );

  app.get(
    '/inbound-endpoints/:id/messages',
    {
      schema: {
        params: IdParams,
        querystring: EndpointMessagesQuery,
        response: { 200: successEnvelope(z.array(InboundEndpointMessageOut), EndpointMessagesMeta) },
      },
    },
    async (request) => {
      const q = request.query;
      const endpoint = await findInboundEndpoint(sql, principalOf(request).project_id, request.params.id);
      if (!endpoint) throw endpointNotFound(request.params.id);
      const filters = {
        ...(q.event_type ? { eventType: q.event_type } : {}),
        ...(q.answer ? { answer: q.answer } : {}),
        ...(q.received_after ? { receivedAfter: q.received_after } : {}),
        ...(q.received_before ? { receivedBefore: q.received_before } : {}),
      };
      let page: { rows: EndpointMessageRow[]; meta: Omit<EndpointMessagesMeta, 'request_id'> };
      if (q.q !== undefined) {
        page = await searchMessages(services.db, services.payloadStore, endpoint.id, { ...q, q: q.q }, filters, Date.now());
      } else {
        const listed = await readPage(q, ID_KEYSET, (keyset) => listEndpointMessages(sql, endpoint.id, filters, keyset));
        page = { rows: listed.rows, meta: { has_more: listed.hasMore, next_cursor: listed.nextCursor } };
      }
      const answers = new Map<string, InboundAnswerSummaryOut[]>();
      for (const answer of await listInboundAnswers(sql, page.rows.map((r) => r.id), false)) {
        const list = answers.get(answer.message_id) ?? [];
        list.push(toInboundAnswerSummaryOut(answer));
        answers.set(answer.message_id, list);
      }
      return {
        data: page.rows.map((row) => toInboundEndpointMessageOut(row, answers.get(row.id) ?? [])),
        meta: { request_id: request.id, ...page.meta },
      };
    },
  );

  // Forward-mode deliveries and cli-mode reports both leave their attempts here.
  app.get(
    '/inbound-messages/:id/attempts',
    { schema: { params: IdParams, response: { 200: successEnvelope(z.array(AttemptOut)) } } },
    async (request) => {
      const row = await findInboundMessage(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw notFound('inbound message', request.params.id);
      return { data: (await listAttempts(sql, row.id)).map(toAttemptOut), meta: { request_id: request.id } };
    },
  );

  app.get(
    '/inbound-logs',
    { schema: { querystring: InboundLogsQuery, response: { 200: successEnvelope(z.array(InboundLogRecordOut), PageMetaWithMore) } } },
    async (request) => {
      const q = request.query;
      const projectId = principalOf(request).project_id;
      const filters = {
        ...(q.status ? { status: q.status } : {}),
        ...(q.inbound_endpoint_id ? { endpointId: q.inbound_endpoint_id } : {}),
        ...(q.received_after ? { receivedAfter: q.received_after } : {}),
        ...(q.received_before ? { receivedBefore: q.received_before } : {}),
      };
      const page = await readPage(q, ID_KEYSET, (keyset) => listInboundLogs(sql, projectId, filters, keyset));
      return { data: page.rows.map(toInboundLogRecordOut), meta: { request_id: request.id, has_more: page.hasMore, next_cursor: page.nextCursor } };
    },
  );

  app.post(
    '/inbound-messages/:id/replay',
    // A POST without a body (a replay as it came) reaches validation as null.
    { schema: { params: IdParams, body: ReplayBody.nullish(), response: { 200: successEnvelope(InboundReplayOut), 201: successEnvelope(InboundReplayOut) } } },
    async (request, reply) => {
      const projectId = principalOf(request).project_id;
      // With edits: a new message, the edited copy (http/edited-replay.ts).
      const edits = request.body ?? undefined;
      if (hasReplayEdits(edits)) {
        const copy = await storeEditedCopy(edited, projectId, request.params.id, edits!);
        reply.status(201);
        return { data: copy, meta: { request_id: request.id } };
      }
      // forward mode: a new delivery.
      const [row] = await sql.begin((tx) => replayInboundMessages(tx, projectId, [request.params.id]));
      if (!row) throw notFound('inbound message', request.params.id);
      // cli mode: pushed again to every connected stream (polling cursors do not go back for it).
      await services.db.notify(INBOUND_REPLAY_CHANNEL, replayNotice(row.inbound_endpoint_id, row.id));
      return { data: { message_id: row.id, replay_count: row.replay_count, status: row.status }, meta: { request_id: request.id } };
    },
  );

  app.delete(
    '/inbound-messages/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(InboundMessageDeleteOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const [result] = await softDeleteInboundMessages(sql, principal.project_id, [request.params.id], { apiKeyId: principal.api_key_id });
      if (!result) throw notFound('inbound message', request.params.id);
      return {
        data: { message_id: result.id, deleted_at: result.deleted_at.toISOString(), already_deleted: result.already_deleted },
        meta: { request_id: request.id },
      };
    },
  );

  app.post(
    '/inbound-messages/delete-batch',
    { schema: { body: InboundMessageDeleteBatchIn, response: { 200: successEnvelope(InboundMessageDeleteBatchOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const ids = uniqueIds(request.body.message_ids);
      const touched = await softDeleteInboundMessages(sql, principal.project_id, ids, { apiKeyId: principal.api_key_id });
      return { data: batchDeleteResult('message_id', ids, touched), meta: { request_id: request.id } };
    },
  );
}
