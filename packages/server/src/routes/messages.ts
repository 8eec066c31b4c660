import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  AttemptOut,
  IdParams,
  MessageCreateIn,
  MessageCreateOut,
  MessageDeleteBatchIn,
  MessageDeleteBatchOut,
  MessageDeleteOut,
  MessageOut,
  MessageRetryOut,
  nestsDeeperThan,
  successEnvelope,
} from '@hookrelay/shared';
import { dropWaitingOutboundJobs, requeueOutboundDelivery } from '../db/deliveries.js';
import {
  findOutboundMessage,
  listAttempts,
  markOutboundRequeued,
  softDeleteOutboundMessages,
  type OutboundMessageRow,
} from '../db/messages.js';
import { AppError, endpointNotFound, invalidRequest, notFound } from '../errors.js';
import { principalOf } from '../plugins/auth.js';
import { batchDeleteResult, uniqueIds } from '../lib/batch-delete.js';
import { MAX_EMBEDDED_JSON_DEPTH } from '../lib/body.js';
import { sha256Hex } from '../security/crypto.js';
import { NUL_MESSAGE, refuseNul } from '../security/text.js';
import { PayloadUnavailableError } from '../storage/payload-store.js';
import type { MessageBatcher } from '../delivery/message-batcher.js';
import { toAttemptOut } from '../views/attempt.js';
import { toMessageCreateOut, toMessageOut, type RenderedPayload } from '../views/message.js';

export { MESSAGE_IDEMPOTENCY_WINDOW_MS } from '../delivery/message-batcher.js';

export const DEFAULT_JSON_CONTENT_TYPE = 'application/json';
export const DEFAULT_TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';

/** The `Idempotency-Key` header; other headers pass through untouched. */
const MessageCreateHeaders = z.looseObject({
  'idempotency-key': z
    .string()
    .min(1, 'must not be empty')
    .max(255, 'must be at most 255 characters')
    .refine((key) => !key.includes('\u0000'), NUL_MESSAGE)
    .optional(),
});

/** Deepest a JSON `payload` may nest; as deep as a JSON body may be to be embedded anywhere else. */
export const MAX_PAYLOAD_DEPTH = MAX_EMBEDDED_JSON_DEPTH;

/**
 * Payload and body are webhook bytes, stored as bytea: a NUL in them travels (JSON escapes it as
 * \u0000); the other fields are text columns, which cannot hold one. A payload nested deeper than
 * JSON.stringify survives would fail its serialisation, and every later read, as a 500.
 */
const CreateBody = refuseNul(MessageCreateIn, ['payload', 'body']).superRefine((value, ctx) => {
  if (value.payload !== undefined && nestsDeeperThan(value.payload, MAX_PAYLOAD_DEPTH)) {
    ctx.addIssue({ code: 'custom', path: ['payload'], message: `must not nest arrays and objects more than ${MAX_PAYLOAD_DEPTH} levels deep` });
  }
});

export async function messageRoutes(fastify: FastifyInstance, { batcher }: { batcher: MessageBatcher }): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  /** The stored payload in the shape it was submitted in; nothing once deleted. */
  async function renderPayload(row: OutboundMessageRow): Promise<RenderedPayload> {
    if (row.deleted_at !== null || row.payload_key === null) return {};
    let bytes: Buffer | undefined;
    try {
      bytes = await services.payloadStore.get(sql, row.payload_key);
    } catch (error) {
      if (error instanceof PayloadUnavailableError) return { body_error: 'payload_unavailable' };
      throw error;
    }
    if (bytes === undefined) return {};
    if (row.payload_format === 'json') return { payload: JSON.parse(bytes.toString('utf8')) as unknown };
    return { body: bytes.toString('utf8') };
  }

  app.post(
    '/messages',
    { schema: { body: CreateBody, headers: MessageCreateHeaders, response: { 202: successEnvelope(MessageCreateOut) } } },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = request.body;
      const headerKey = request.headers['idempotency-key'];
      if (headerKey !== undefined && body.idempotency_key !== undefined && headerKey !== body.idempotency_key) {
        throw invalidRequest('header.idempotency-key: differs from body.idempotency_key (send one, or the same value in both)', [
          { path: 'header.idempotency-key', message: 'differs from body.idempotency_key' },
        ]);
      }
      const idempotencyKey = headerKey ?? body.idempotency_key ?? null;
      const format = body.payload !== undefined ? 'json' : 'text';
      const bytes = Buffer.from(format === 'json' ? JSON.stringify(body.payload) : body.body!, 'utf8');
      const contentType = body.content_type ?? (format === 'json' ? DEFAULT_JSON_CONTENT_TYPE : DEFAULT_TEXT_CONTENT_TYPE);
      const payloadSha256 = sha256Hex(bytes);
      // What makes two submissions "the same request" for an idempotency key.
      const requestSha256 = sha256Hex(JSON.stringify([body.endpoint_id, body.event_type ?? null, contentType, format, payloadSha256]));

      const outcome = await batcher.submit({
        projectId: principal.project_id,
        endpointId: body.endpoint_id,
        eventType: body.event_type ?? null,
        idempotencyKey,
        requestSha256,
        payloadFormat: format,
        contentType,
        payload: bytes,
        payloadSha256,
      });
      if (outcome.kind === 'endpoint_not_found') throw endpointNotFound(body.endpoint_id);
      if (outcome.kind === 'conflict') {
        throw new AppError('IDEMPOTENCY_CONFLICT', `idempotency key already used for message ${outcome.messageId} with a different request`);
      }
      reply.status(202);
      return { data: toMessageCreateOut(outcome.message), meta: { request_id: request.id } };
    },
  );

  app.get(
    '/messages/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(MessageOut) } } },
    async (request) => {
      const row = await findOutboundMessage(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw notFound('message', request.params.id);
      return { data: toMessageOut(row, await renderPayload(row)), meta: { request_id: request.id } };
    },
  );

  app.get(
    '/messages/:id/attempts',
    { schema: { params: IdParams, response: { 200: successEnvelope(z.array(AttemptOut)) } } },
    async (request) => {
      const row = await findOutboundMessage(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw notFound('message', request.params.id);
      return { data: (await listAttempts(sql, row.id)).map(toAttemptOut), meta: { request_id: request.id } };
    },
  );

  app.post(
    '/messages/:id/retry',
    { schema: { params: IdParams, response: { 200: successEnvelope(MessageRetryOut) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const result = await sql.begin(async (tx) => {
        const job = await requeueOutboundDelivery(tx, projectId, request.params.id);
        if (!job) return undefined;
        // In flight: the running attempt ends first, then the message is delivered again.
        if (job.in_flight) return { id: request.params.id.toLowerCase(), status: 'delivering' as const };
        return markOutboundRequeued(tx, projectId, request.params.id);
      });
      if (!result) throw notFound('message', request.params.id);
      return { data: { message_id: result.id, status: result.status }, meta: { request_id: request.id } };
    },
  );

  app.delete(
    '/messages/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(MessageDeleteOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const [result] = await sql.begin(async (tx) => {
        await dropWaitingOutboundJobs(tx, principal.project_id, [request.params.id]);
        return softDeleteOutboundMessages(tx, principal.project_id, [request.params.id], { apiKeyId: principal.api_key_id });
      });
      if (!result) throw notFound('message', request.params.id);
      return {
        data: { message_id: result.id, deleted_at: result.deleted_at.toISOString(), already_deleted: result.already_deleted },
        meta: { request_id: request.id },
      };
    },
  );

  app.post(
    '/messages/delete-batch',
    { schema: { body: MessageDeleteBatchIn, response: { 200: successEnvelope(MessageDeleteBatchOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const ids = uniqueIds(request.body.message_ids);
      const touched = await sql.begin(async (tx) => {
        await dropWaitingOutboundJobs(tx, principal.project_id, ids);
        return softDeleteOutboundMessages(tx, principal.project_id, ids, { apiKeyId: principal.api_key_id });
      });
      return { data: batchDeleteResult('message_id', ids, touched), meta: { request_id: request.id } };
    },
  );
}
