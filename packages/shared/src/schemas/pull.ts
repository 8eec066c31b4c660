import { z } from 'zod';
import { PULL_EVENT_STATUSES } from '../constants.js';
import {
  commaListParam,
  Cursor,
  EndpointListQuery,
  intRange,
  JsonValue,
  limitParam,
  Timestamp,
  TimestampIn,
  Ttl,
  Uuid,
  uuidBatch,
} from './common.js';
import { checkEventTypeCreate, checkEventTypeUpdate, EventTypeSource, eventTypeCreateShape, eventTypeUpdateShape } from './event-type.js';
import { MaxBodyBytes, RawHeader } from './inbound.js';
import { batchDeleteResult } from './messages.js';

// Defined without zod in constants.ts, for clients that only name it; exported here too, beside its schema.
export { PULL_EVENT_STATUSES };

export const PullEventStatus = z.enum(PULL_EVENT_STATUSES, { message: 'must be one of stored, fetched, delivered' });
export type PullEventStatus = z.infer<typeof PullEventStatus>;

const Name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const Description = z.string().max(500, 'must be at most 500 characters');
const RetentionDays = intRange(1, 90);

/**
 * POST /v1/pull-endpoints. `retention_days` defaults to 7 and `ttl_minutes` to 30 (server side;
 * the TTL is used only when `ephemeral` is true). Extraction is configured by both fields together
 * or not at all: a path without a source would silently extract nothing.
 */
export const PullEndpointCreateIn = z
  .strictObject({
    name: Name,
    description: Description.optional(),
    retention_days: RetentionDays.optional(),
    max_body_bytes: MaxBodyBytes.optional(),
    ...eventTypeCreateShape,
    ephemeral: z.boolean({ message: 'must be true or false' }).optional(),
    ttl_minutes: Ttl.optional(),
  })
  .superRefine(checkEventTypeCreate);
export type PullEndpointCreateIn = z.infer<typeof PullEndpointCreateIn>;

/**
 * PATCH /v1/pull-endpoints/{id}: omitted fields keep their values. `event_type_source: ""` clears
 * extraction (docs/api.md, Pull endpoints and events) and the stored path with it, so a path may
 * then only be omitted or "". Changing the source alone keeps the stored path; the server checks
 * that one exists.
 */
export const PullEndpointUpdateIn = z
  .strictObject({
    name: Name.optional(),
    description: Description.optional(),
    retention_days: RetentionDays.optional(),
    /** null: back to the server's ingest limit. */
    max_body_bytes: MaxBodyBytes.nullable().optional(),
    ...eventTypeUpdateShape,
  })
  .superRefine(checkEventTypeUpdate);
export type PullEndpointUpdateIn = z.infer<typeof PullEndpointUpdateIn>;

/**
 * The pull endpoint record (list rows, GET, PATCH). Extraction not configured reads as null in both
 * fields ("" is only the way to clear it on PATCH). `event_counts` only on the single GET: events by
 * status among those not deleted, and the soft-deleted ones.
 */
export const PullEndpointOut = z.object({
  id: Uuid,
  name: z.string(),
  description: z.string(),
  retention_days: z.number().int(),
  event_type_source: EventTypeSource.nullable(),
  event_type_path: z.string().nullable(),
  /** The endpoint's own body limit; null: the server's ingest limit. */
  max_body_bytes: z.number().int().nullable(),
  /** `{receive_base}/pull/{id}`: the URL without its secret token, which stores nothing (full_ingest_url, shown once at create, has the token). */
  ingest_url: z.string(),
  active: z.boolean(),
  paused: z.boolean(),
  /** An ephemeral endpoint is deleted at `expires_at` (null unless ephemeral). */
  ephemeral: z.boolean(),
  expires_at: Timestamp.nullable(),
  /** Refused requests counted but not kept (over the per-endpoint rate of recording). */
  rejections_dropped_count: z.number().int().nonnegative(),
  created_at: Timestamp,
  updated_at: Timestamp,
  event_counts: z
    .object({
      stored: z.number().int().nonnegative(),
      fetched: z.number().int().nonnegative(),
      delivered: z.number().int().nonnegative(),
      deleted: z.number().int().nonnegative(),
    })
    .optional(),
});
export type PullEndpointOut = z.infer<typeof PullEndpointOut>;

/** Create response: the record plus the secret token and the full ingest URL, shown only here. */
export const PullEndpointCreateOut = PullEndpointOut.omit({ event_counts: true }).extend({
  secret_token: z.string(),
  full_ingest_url: z.string(),
});
export type PullEndpointCreateOut = z.infer<typeof PullEndpointCreateOut>;

/** GET /v1/pull-endpoints: `limit` 1–200 (default 50), `cursor`. */
export const PullEndpointListQuery = EndpointListQuery;
export type PullEndpointListQuery = EndpointListQuery;

export const PullEventParams = z.object({ id: Uuid, event_id: Uuid });
export type PullEventParams = z.infer<typeof PullEventParams>;

/** An event of the list: metadata only, timings null until the step they measure has happened. */
export const PullEventOut = z.object({
  id: Uuid,
  endpoint_id: Uuid,
  status: PullEventStatus,
  event_type: z.string().nullable(),
  content_type: z.string(),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  received_at: Timestamp,
  fetched_at: Timestamp.nullable(),
  delivered_at: Timestamp.nullable(),
  ingest_processing_ms: z.number().int().nonnegative().nullable(),
  time_to_first_fetch_ms: z.number().int().nonnegative().nullable(),
  fetch_to_ack_ms: z.number().int().nonnegative().nullable(),
  total_time_ms: z.number().int().nonnegative().nullable(),
});
export type PullEventOut = z.infer<typeof PullEventOut>;

/**
 * GET /v1/pull-endpoints/{id}/events/{event_id}: the record plus the request, body as in a CLI
 * message (JSON value, or base64 with `body_encoding`; `body_error` when storage failed). A deleted
 * event has `deleted_at` and no body.
 */
export const PullEventDetailOut = PullEventOut.extend({
  /** The request's method (POST, PUT, PATCH, DELETE or GET) and raw query string ("" when none). */
  method: z.string(),
  query: z.string(),
  headers: z.record(z.string(), z.string()),
  raw_headers: z.array(RawHeader),
  body: JsonValue.optional(),
  body_encoding: z.literal('base64').optional(),
  body_error: z.literal('payload_unavailable').optional(),
  deleted_at: Timestamp.optional(),
  /** The deleting principal, on deleted events only (mutually exclusive; user ids are reserved). */
  deleted_by_api_key_id: Uuid.nullable().optional(),
  deleted_by_user_id: z.string().nullable().optional(),
});
export type PullEventDetailOut = z.infer<typeof PullEventDetailOut>;

/** Single event GET: `?body_encoding=base64` returns any body as base64, as listen does. */
export const PullEventGetQuery = z.strictObject({
  body_encoding: z.enum(['base64'], { message: 'must be base64' }).optional(),
});
export type PullEventGetQuery = z.infer<typeof PullEventGetQuery>;

/** GET /v1/pull-endpoints/{id}/events: oldest first; `received_after` inclusive, `received_before` exclusive. */
export const PullEventsQuery = z.strictObject({
  status: commaListParam(PULL_EVENT_STATUSES).default(['stored']),
  event_type: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
  received_after: TimestampIn.optional(),
  received_before: TimestampIn.optional(),
  limit: limitParam(1000, 100),
  cursor: Cursor.optional(),
});
export type PullEventsQuery = z.infer<typeof PullEventsQuery>;

/**
 * meta of the events list: `next_cursor` is an empty string, never null, when there are no more
 * results, unlike the other lists' null (docs/api.md, Pull events); `has_more` says the same as a boolean.
 */
export const PullEventsPageMeta = z.object({
  request_id: z.string(),
  has_more: z.boolean(),
  next_cursor: z.string(),
});
export type PullEventsPageMeta = z.infer<typeof PullEventsPageMeta>;

/** DELETE /v1/pull-endpoints/{id}/events/{event_id}: a repeat answers 200 with the original time. */
export const PullEventDeleteOut = z.object({
  event_id: Uuid,
  deleted_at: Timestamp,
  already_deleted: z.boolean(),
});
export type PullEventDeleteOut = z.infer<typeof PullEventDeleteOut>;

/** POST .../events/delete-batch: the field is named `message_ids`, as for messages; it holds event ids. */
export const PullEventDeleteBatchIn = z.strictObject({
  message_ids: uuidBatch(100),
});
export type PullEventDeleteBatchIn = z.infer<typeof PullEventDeleteBatchIn>;

export const PullEventDeleteBatchOut = batchDeleteResult('event_id');
export type PullEventDeleteBatchOut = z.infer<typeof PullEventDeleteBatchOut>;

/** POST .../events/{event_id}/ack: a repeat answers 200 with the first `delivered_at`. */
export const PullEventAckOut = z.object({
  event_id: Uuid,
  status: z.literal('delivered'),
  delivered_at: Timestamp,
  already_delivered: z.boolean(),
});
export type PullEventAckOut = z.infer<typeof PullEventAckOut>;

/** POST .../events/ack-batch */
export const PullEventAckBatchIn = z.strictObject({
  event_ids: uuidBatch(1000),
});
export type PullEventAckBatchIn = z.infer<typeof PullEventAckBatchIn>;

export const ACK_OUTCOMES = ['delivered', 'already_delivered', 'not_found'] as const;
export const AckOutcome = z.enum(ACK_OUTCOMES);
export type AckOutcome = z.infer<typeof AckOutcome>;

/**
 * Shaped like the batch delete result: one outcome per id (a deleted event is `not_found`),
 * `delivered_at` for `delivered` and `already_delivered` only, and the three counts.
 */
export const PullEventAckBatchOut = z.object({
  results: z.array(
    z.object({
      event_id: Uuid,
      outcome: AckOutcome,
      delivered_at: Timestamp.optional(),
    }),
  ),
  delivered_count: z.number().int().nonnegative(),
  already_delivered_count: z.number().int().nonnegative(),
  not_found_count: z.number().int().nonnegative(),
});
export type PullEventAckBatchOut = z.infer<typeof PullEventAckBatchOut>;

/**
 * Delete-all filters. Without `status` every status matches, which the schema spells out as all
 * three, so the parsed value always lists what is deleted (the list's `stored` default does not apply).
 */
const deleteAllFilters = {
  status: commaListParam(PULL_EVENT_STATUSES).default([...PULL_EVENT_STATUSES]),
  event_type: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
  received_after: TimestampIn.optional(),
  received_before: TimestampIn.optional(),
};

/** POST .../events/delete-all with its parameters in the query string (text, so `limit` is coerced). */
export const PullDeleteAllQuery = z.strictObject({
  ...deleteAllFilters,
  limit: limitParam(1000, 1000),
});
export type PullDeleteAllQuery = z.infer<typeof PullDeleteAllQuery>;

/**
 * The same parameters as a JSON body: `limit` must be a JSON integer (no coercion, so `true` is not
 * 1) and `status` may be a comma list or an array.
 */
export const PullDeleteAllBody = z.strictObject({
  ...deleteAllFilters,
  limit: intRange(1, 1000).default(1000),
});
export type PullDeleteAllBody = z.infer<typeof PullDeleteAllBody>;

/** The body schema under the request-body name; both schemas parse to this one type. */
export const PullDeleteAllIn = PullDeleteAllBody;
export type PullDeleteAllIn = PullDeleteAllBody;

/** delete-all answer; also the `data` of its DELETE_FAILED / PARTIAL_DELETE_FAILURE error envelope. */
export const PullDeleteAllOut = z.object({
  deleted: z.number().int().nonnegative(),
  deleted_event_ids: z.array(Uuid),
});
export type PullDeleteAllOut = z.infer<typeof PullDeleteAllOut>;
