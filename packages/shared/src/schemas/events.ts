import { z } from 'zod';
import { Cursor, EndpointId, limitParam, Timestamp, TimestampIn, Uuid } from './common.js';
import { checkPayloadOrBody, IdempotencyKey, MessageStatus, payloadFields, submittedPayloadOut } from './messages.js';
import { EventTypeName, isReservedEventTypeName, RESERVED_EVENT_TYPE_PREFIX } from './event-catalogue.js';
import { ChannelNames, OwnerId } from './subscriptions.js';

/**
 * POST /v1/events (docs/api.md, Events and subscriptions): one event, named as the catalogue's
 * types are (`EventTypeName`; hookrelay's own names are refused), fanned out as one outbound
 * message to every live endpoint of the project whose owner, event types and channels take it.
 * `owner_id` absent or null: the operator's own endpoints. The `Idempotency-Key` header, when sent,
 * takes the place of `idempotency_key`.
 */
export const EventCreateIn = z
  .strictObject({
    event_type: EventTypeName.refine(
      (type) => !isReservedEventTypeName(type),
      `must not start with "${RESERVED_EVENT_TYPE_PREFIX}": that prefix is reserved for hookrelay's own event types`,
    ),
    ...payloadFields,
    owner_id: OwnerId.nullable().optional(),
    channels: ChannelNames.optional(),
    idempotency_key: IdempotencyKey.optional(),
  })
  .superRefine(checkPayloadOrBody);
export type EventCreateIn = z.infer<typeof EventCreateIn>;

/** A message an event was fanned out as, and the endpoint it goes to. */
export const EventMessageRef = z.object({
  message_id: Uuid,
  endpoint_id: EndpointId,
});
export type EventMessageRef = z.infer<typeof EventMessageRef>;

/** The fields every answer about an event has. */
const eventFields = {
  event_id: Uuid,
  event_type: z.string(),
  owner_id: z.string().nullable(),
  /** The channels it names; `[]` when none. */
  channels: z.array(z.string()),
};

/**
 * 202 answer of POST /v1/events: the event and the messages it became (`[]` when no endpoint takes
 * it; the event is kept). An idempotent repeat answers the first event and its messages.
 */
export const EventCreateOut = z.object({
  ...eventFields,
  messages: z.array(EventMessageRef),
  created_at: Timestamp,
});
export type EventCreateOut = z.infer<typeof EventCreateOut>;

/** A row of GET /v1/events. `message_count`: the messages its fan-out made. */
export const EventSummaryOut = z.object({
  ...eventFields,
  content_type: z.string(),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  idempotency_key: z.string().nullable(),
  message_count: z.number().int().nonnegative(),
  created_at: Timestamp,
});
export type EventSummaryOut = z.infer<typeof EventSummaryOut>;

/**
 * A message of an event as GET /v1/events/{id} lists it: where it goes and how its delivery stands
 * (as in its log record: `delivered_at` once delivered, `deleted_at` only once deleted).
 */
export const EventMessageOut = EventMessageRef.extend({
  status: MessageStatus,
  attempt_count: z.number().int().nonnegative(),
  response_status: z.number().int().nullable(),
  last_error: z.string().nullable(),
  delivered_at: Timestamp.optional(),
  deleted_at: Timestamp.optional(),
});
export type EventMessageOut = z.infer<typeof EventMessageOut>;

/** GET /v1/events/{id}: the event, its payload as submitted, and every message it became, oldest first. */
export const EventOut = EventSummaryOut.extend({
  ...submittedPayloadOut,
  messages: z.array(EventMessageOut),
});
export type EventOut = z.infer<typeof EventOut>;

/**
 * GET /v1/events, newest first: `event_type` and `owner_id` exact; `created_after` inclusive and
 * `created_before` exclusive, so adjacent windows never share an event.
 */
export const EventsQuery = z.strictObject({
  event_type: EventTypeName.optional(),
  owner_id: OwnerId.optional(),
  created_after: TimestampIn.optional(),
  created_before: TimestampIn.optional(),
  limit: limitParam(200, 50),
  cursor: Cursor.optional(),
});
export type EventsQuery = z.infer<typeof EventsQuery>;
