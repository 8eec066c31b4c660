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
  successEnvelope,
} from '@hookrelay/shared';
import { dropWaitingOutboundJobs } from '../db/deliveries.js';
import {
  findOutboundMessage,
  listAttempts,
  softDeleteOutboundMessages,
  type OutboundMessageRow,
} from '../db/messages.js';
import { AppError, endpointNotFound, notFound } from '../errors.js';
import { encodePayload, IdempotencyKeyHeaders, idempotencyKeyOf, payloadSubmission, renderStoredPayload, withPayloadChecks } from '../http/outbound-payload.js';
import { principalOf, projectIdOf } from '../plugins/auth.js';
import { batchDeleteResult, uniqueIds } from '../lib/batch-delete.js';
import { sha256Hex } from '../security/crypto.js';
import type { MessageBatcher } from '../delivery/message-batcher.js';
import { retryOutboundMessages } from '../delivery/redeliver.js';
import { toAttemptOut } from '../views/attempt.js';
import { toMessageCreateOut, toMessageOut, type RenderedPayload } from '../views/message.js';

const CreateBody = withPayloadChecks(MessageCreateIn);

export async function messageRoutes(fastify: FastifyInstance, { batcher }: { batcher: MessageBatcher }): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  /** The stored payload in the shape it was submitted in; nothing once deleted. */
  const renderPayload = (row: OutboundMessageRow): Promise<RenderedPayload> =>
    row.deleted_at !== null ? Promise.resolve({}) : renderStoredPayload(services.payloadStore, sql, row.payload_key, row.payload_format);

  app.post(
    '/messages',
    { schema: { body: CreateBody, headers: IdempotencyKeyHeaders, response: { 202: successEnvelope(MessageCreateOut) } } },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = request.body;
      const idempotencyKey = idempotencyKeyOf(request.headers['idempotency-key'], body.idempotency_key);
      const payload = encodePayload(body);
      // What makes two submissions "the same request" for an idempotency key.
      const requestSha256 = sha256Hex(JSON.stringify([body.endpoint_id, body.event_type ?? null, payload.contentType, payload.format, payload.sha256]));

      const outcome = await batcher.submit({
        projectId: principal.project_id,
        endpointId: body.endpoint_id,
        eventType: body.event_type ?? null,
        idempotencyKey,
        requestSha256,
        ...payloadSubmission(payload),
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
      const row = await findOutboundMessage(sql, projectIdOf(request), request.params.id);
      if (!row) throw notFound('message', request.params.id);
      return { data: toMessageOut(row, await renderPayload(row)), meta: { request_id: request.id } };
    },
  );

  app.get(
    '/messages/:id/attempts',
    { schema: { params: IdParams, response: { 200: successEnvelope(z.array(AttemptOut)) } } },
    async (request) => {
      const row = await findOutboundMessage(sql, projectIdOf(request), request.params.id);
      if (!row) throw notFound('message', request.params.id);
      return { data: (await listAttempts(sql, row.id)).map(toAttemptOut), meta: { request_id: request.id } };
    },
  );

  app.post(
    '/messages/:id/retry',
    { schema: { params: IdParams, response: { 200: successEnvelope(MessageRetryOut) } } },
    async (request) => {
      const projectId = projectIdOf(request);
      const id = request.params.id.toLowerCase();
      const status = (await sql.begin((tx) => retryOutboundMessages(tx, projectId, [id]))).get(id);
      if (status === undefined) throw notFound('message', request.params.id);
      return { data: { message_id: id, status }, meta: { request_id: request.id } };
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
