import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EventCreateIn, EventCreateOut, EventOut, EventsQuery, EventSummaryOut, IdParams, PageMetaWithMore, successEnvelope } from '@hookrelay/shared';
import { findEvent, listEventMessages, listEvents } from '../db/events.js';
import { eventRequestSha256, type EventFanout, type EventSubmission } from '../delivery/event-fanout.js';
import { AppError, notFound } from '../errors.js';
import { validateEventPayload } from '../events/payload-validation.js';
import { EventTypeReads } from '../events/type-reads.js';
import {
  encodePayload,
  IdempotencyKeyHeaders,
  idempotencyKeyOf,
  isJsonMediaType,
  parseJsonBody,
  payloadSubmission,
  renderStoredPayload,
  withPayloadChecks,
  type EncodedPayload,
} from '../http/outbound-payload.js';
import { ID_KEYSET, readPage } from '../lib/cursor.js';
import { principalOf, projectIdOf } from '../plugins/auth.js';
import { refuseNul } from '../security/text.js';
import { toEventCreateOut, toEventOut, toEventSummaryOut } from '../views/event.js';

const CreateBody = withPayloadChecks(EventCreateIn);
const ListQuery = refuseNul(EventsQuery);

/** The event to fan out; what makes two submissions "the same request" for its key treats the channels as a set. */
function submissionOf(projectId: string, body: EventCreateIn, idempotencyKey: string | null, payload: EncodedPayload): EventSubmission {
  const ownerId = body.owner_id ?? null;
  const channels = body.channels ?? [];
  const submitted = payloadSubmission(payload);
  return {
    projectId,
    eventType: body.event_type,
    ownerId,
    channels,
    idempotencyKey,
    requestSha256: eventRequestSha256({ eventType: body.event_type, ownerId, channels, ...submitted }),
    ...submitted,
  };
}

/**
 * What an event's type's schema is checked against: `payload` as given; a `body` whose content type
 * is JSON, parsed only when the type has a schema (`validateEventPayload` calls the function then);
 * nothing for a body of another content type, which is taken unchecked.
 */
function checkedPayload(body: EventCreateIn, payload: EncodedPayload): { field: string; value: unknown } | undefined {
  if (body.payload !== undefined) return { field: 'body.payload', value: body.payload };
  if (!isJsonMediaType(payload.contentType)) return undefined;
  return { field: 'body.body', value: () => parseJsonBody(body.body!, 'body.body') };
}

/**
 * POST /v1/events fans an event out to the endpoints subscribed to it (docs/api.md, Events and
 * subscriptions); GET /v1/events and GET /v1/events/{id} read events back with their messages.
 */
export async function eventRoutes(fastify: FastifyInstance, { fanout }: { fanout: EventFanout }): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;
  const types = new EventTypeReads(sql);

  /** A payload that does not match its type's schema in the catalogue is 400 (docs/api.md, Checking a payload against its type). */
  const checkPayloadAgainstType = async (projectId: string, body: EventCreateIn, payload: EncodedPayload): Promise<void> => {
    const checked = checkedPayload(body, payload);
    if (checked === undefined) return;
    const validation = await validateEventPayload({ types, eventSchemas: services.eventSchemas }, projectId, body.event_type, checked.value, checked.field);
    if (!validation.ok) throw validation.error;
  };

  app.post(
    '/events',
    { schema: { body: CreateBody, headers: IdempotencyKeyHeaders, response: { 202: successEnvelope(EventCreateOut) } } },
    async (request, reply) => {
      const body = request.body;
      const idempotencyKey = idempotencyKeyOf(request.headers['idempotency-key'], body.idempotency_key);
      const projectId = principalOf(request).project_id;
      const payload = encodePayload(body);
      await checkPayloadAgainstType(projectId, body, payload);
      const outcome = await fanout.submit(submissionOf(projectId, body, idempotencyKey, payload));
      if (outcome.kind === 'conflict') {
        throw new AppError('IDEMPOTENCY_CONFLICT', `idempotency key already used for event ${outcome.eventId} with a different request`);
      }
      reply.status(202);
      return { data: toEventCreateOut(outcome.fannedOut.event, outcome.fannedOut.messages), meta: { request_id: request.id } };
    },
  );

  app.get(
    '/events',
    { schema: { querystring: ListQuery, response: { 200: successEnvelope(z.array(EventSummaryOut), PageMetaWithMore) } } },
    async (request) => {
      const q = request.query;
      const filters = { eventType: q.event_type, ownerId: q.owner_id, createdAfter: q.created_after, createdBefore: q.created_before };
      const projectId = projectIdOf(request);
      const page = await readPage(q, ID_KEYSET, (keyset) => listEvents(sql, projectId, filters, keyset));
      return { data: page.rows.map(toEventSummaryOut), meta: { request_id: request.id, has_more: page.hasMore, next_cursor: page.nextCursor } };
    },
  );

  app.get(
    '/events/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(EventOut) } } },
    async (request) => {
      const row = await findEvent(sql, projectIdOf(request), request.params.id);
      if (!row) throw notFound('event', request.params.id);
      const [payload, messages] = await Promise.all([
        renderStoredPayload(services.payloadStore, sql, row.payload_key, row.payload_format),
        listEventMessages(sql, row.id),
      ]);
      return { data: toEventOut(row, payload, messages), meta: { request_id: request.id } };
    },
  );
}
