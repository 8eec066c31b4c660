import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { isReservedEventTypeName, MessageCreateOut, PortalTestEventIn, successEnvelope } from '@hookrelay/shared';
import { findEventType } from '../db/event-types.js';
import type { MessageBatcher } from '../delivery/message-batcher.js';
import { AppError, endpointNotFound, invalidRequest, notFound } from '../errors.js';
import { encodePayload, payloadSubmission } from '../http/outbound-payload.js';
import { refuseNul } from '../security/text.js';
import { toMessageCreateOut } from '../views/message.js';

const Body = refuseNul(PortalTestEventIn);

/**
 * POST /v1/portal/test-events (docs/api.md, Portal links): a customer sends a catalogue type's
 * example to one of their endpoints, as a message of that type. Only the example: a portal token
 * cannot make the server sign a payload of its own choosing.
 */
export async function portalTestEventRoutes(fastify: FastifyInstance, { batcher }: { batcher: MessageBatcher }): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { sql } = fastify.services.db;

  app.post(
    '/portal/test-events',
    { schema: { body: Body, response: { 202: successEnvelope(MessageCreateOut) } } },
    async (request, reply) => {
      const portal = request.portal;
      if (portal === undefined) throw new AppError('NOT_FOUND', 'an API key sends messages with POST /v1/messages: this route answers portal tokens');
      const { endpoint_id: endpointId, event_type: name } = request.body;
      const type = isReservedEventTypeName(name) ? undefined : await findEventType(sql, portal.project_id, name);
      if (!type || type.archived) throw notFound('event type', name);
      if (type.example === null) throw invalidRequest(`body.event_type: ${name} has no example to send`, [{ path: 'body.event_type', message: 'has no example to send' }]);
      const payload = encodePayload({ payload: type.example });
      const outcome = await batcher.submit({
        projectId: portal.project_id,
        endpointId,
        eventType: name,
        idempotencyKey: null,
        requestSha256: payload.sha256,
        ...payloadSubmission(payload),
      });
      // Without an idempotency key a submission is stored or finds no endpoint, never a repeat or a conflict.
      if (outcome.kind !== 'stored') throw endpointNotFound(endpointId);
      reply.status(202);
      return { data: toMessageCreateOut(outcome.message), meta: { request_id: request.id } };
    },
  );
}
