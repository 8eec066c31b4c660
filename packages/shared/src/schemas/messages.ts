import { z } from 'zod';
import { MESSAGE_STATUSES } from '../constants.js';
import { Cursor, EndpointId, JsonValue, limitParam, Timestamp, TimestampIn, Uuid, uuidBatch } from './common.js';

// Defined without zod in constants.ts, for clients that only name it; exported here too, beside its schema.
export { MESSAGE_STATUSES };

export const MessageStatus = z.enum(MESSAGE_STATUSES, { message: `must be one of ${MESSAGE_STATUSES.join(', ')}` });
export type MessageStatus = z.infer<typeof MessageStatus>;

/**
 * A media type as it will be sent in the delivery's Content-Type header: `type/subtype` and optional
 * parameters, printable ASCII only so that it can never smuggle a CR/LF into the request.
 */
export const ContentType = z
  .string()
  .max(255, 'must be at most 255 characters')
  .regex(
    /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[\x20-\x7e]*)?$/,
    'must be a media type such as application/json',
  );

/** An idempotency key, as a body field or the `Idempotency-Key` header. */
export const IdempotencyKey = z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters');

/**
 * What is sent, in a message or an event: exactly one of `payload` (any JSON value, sent as
 * `application/json` unless `content_type` says otherwise, e.g. `application/cloudevents+json`) or
 * `body` (sent verbatim as UTF-8; `content_type` is then the caller's to choose). Checked by
 * `checkPayloadOrBody`.
 */
export const payloadFields = {
  payload: JsonValue.optional(),
  body: z.string({ message: 'must be a string' }).optional(),
  content_type: ContentType.optional(),
};

export function checkPayloadOrBody(value: { payload?: unknown; body?: string | undefined }, ctx: z.RefinementCtx): void {
  const hasPayload = value.payload !== undefined;
  const hasBody = value.body !== undefined;
  if (!hasPayload && !hasBody) {
    ctx.addIssue({ code: 'custom', path: ['payload'], message: 'or body is required' });
  } else if (hasPayload && hasBody) {
    ctx.addIssue({ code: 'custom', path: ['body'], message: 'must not be given together with payload' });
  }
}

/**
 * POST /v1/messages (docs/api.md, Outbound messages): one endpoint, the payload of `payloadFields`.
 * The `Idempotency-Key` header, when sent, takes the place of `idempotency_key`.
 */
export const MessageCreateIn = z
  .strictObject({
    endpoint_id: EndpointId,
    ...payloadFields,
    event_type: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
    idempotency_key: IdempotencyKey.optional(),
  })
  .superRefine(checkPayloadOrBody);
export type MessageCreateIn = z.infer<typeof MessageCreateIn>;

/** 202 answer of POST /v1/messages; an idempotent repeat answers the first message. */
export const MessageCreateOut = z.object({
  message_id: Uuid,
  status: MessageStatus,
  created_at: Timestamp,
});
export type MessageCreateOut = z.infer<typeof MessageCreateOut>;

/**
 * A payload shown in the shape it was submitted in: `payload` (JSON value) for one sent with
 * `payload`, `body` (the string, verbatim) for one sent with `body`; no `body_encoding`, since a
 * submitted body is always text. `body_error: 'payload_unavailable'` replaces them when storage could
 * not be read.
 */
export const submittedPayloadOut = {
  payload: JsonValue.optional(),
  body: z.string().optional(),
  body_error: z.literal('payload_unavailable').optional(),
};

/**
 * One row of GET /v1/logs (docs/api.md, Logs and deletes). Absent-until-it-happens times
 * (`delivered_at`, `next_attempt_at`) are omitted; measurements and results
 * that do not exist yet (no attempt made, no HTTP answer, not delivered) are null, so every row has
 * the same keys for tables and `jq`.
 */
export const LogRecordOut = z.object({
  message_id: Uuid,
  endpoint: z.string(),
  status: MessageStatus,
  attempt_count: z.number().int().nonnegative(),
  created_at: Timestamp,
  delivered_at: Timestamp.optional(),
  first_attempt_at: Timestamp.nullable(),
  next_attempt_at: Timestamp.optional(),
  response_status: z.number().int().nullable(),
  response_latency_ms: z.number().int().nonnegative().nullable(),
  processing_ms: z.number().int().nonnegative().nullable(),
  total_delivery_ms: z.number().int().nonnegative().nullable(),
  queue_wait_ms: z.number().int().nonnegative().nullable(),
  last_error: z.string().nullable(),
  deleted_at: Timestamp.nullable().optional(),
});
export type LogRecordOut = z.infer<typeof LogRecordOut>;

/**
 * GET /v1/messages/{id}: the log record plus the message's own fields and its payload
 * (`submittedPayloadOut`), which is not present after a delete. The deleting principal appears only
 * on deleted rows.
 */
export const MessageOut = LogRecordOut.extend({
  endpoint_id: EndpointId,
  /** The event it was fanned out for; null for a message sent to its endpoint directly. */
  event_id: Uuid.nullable(),
  event_type: z.string().nullable(),
  idempotency_key: z.string().nullable(),
  content_type: z.string(),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  updated_at: Timestamp,
  failed_at: Timestamp.nullable(),
  deleted_by_api_key_id: z.string().nullable().optional(),
  deleted_by_user_id: z.string().nullable().optional(),
  ...submittedPayloadOut,
});
export type MessageOut = z.infer<typeof MessageOut>;

/**
 * One delivery attempt (GET /v1/messages/{id}/attempts, and the reports of cli-mode inbound
 * messages). `response_status` is null when no HTTP answer came (timeout, refused connection), and
 * `latency_ms` while an attempt is still running.
 */
export const AttemptOut = z.object({
  id: Uuid,
  message_id: Uuid,
  attempt_number: z.number().int().positive(),
  started_at: Timestamp,
  response_status: z.number().int().nullable(),
  latency_ms: z.number().int().nonnegative().nullable(),
  error: z.string().nullable(),
  response_body: z.string().optional(),
  /** An inbound message sent re-signed (docs/api.md, Late deliveries re-signed); absent otherwise. */
  resigned: z.literal(true).optional(),
});
export type AttemptOut = z.infer<typeof AttemptOut>;

/** POST /v1/messages/{id}/retry: the message is queued again. */
export const MessageRetryOut = z.object({
  message_id: Uuid,
  status: MessageStatus,
});
export type MessageRetryOut = z.infer<typeof MessageRetryOut>;

/** GET /v1/logs: `start_time` inclusive, `end_time` exclusive, so adjacent windows never share a message. */
export const LogsQuery = z.strictObject({
  endpoint_id: EndpointId.optional(),
  status: MessageStatus.optional(),
  start_time: TimestampIn.optional(),
  end_time: TimestampIn.optional(),
  limit: limitParam(500, 50),
  cursor: Cursor.optional(),
});
export type LogsQuery = z.infer<typeof LogsQuery>;

/** DELETE /v1/messages/{id}: a repeat answers 200 with the original `deleted_at`. */
export const MessageDeleteOut = z.object({
  message_id: Uuid,
  deleted_at: Timestamp,
  already_deleted: z.boolean(),
});
export type MessageDeleteOut = z.infer<typeof MessageDeleteOut>;

/** POST /v1/messages/delete-batch */
export const MessageDeleteBatchIn = z.strictObject({
  message_ids: uuidBatch(100),
});
export type MessageDeleteBatchIn = z.infer<typeof MessageDeleteBatchIn>;

export const BATCH_DELETE_OUTCOMES = ['deleted', 'already_deleted', 'not_found'] as const;

export const BatchDeleteOutcome = z.enum(BATCH_DELETE_OUTCOMES);
export type BatchDeleteOutcome = z.infer<typeof BatchDeleteOutcome>;

/**
 * The batch delete result, whose id field is `message_id` for
 * outbound and inbound messages and `event_id` for pull events. `deleted_at` is present for the
 * `deleted` and `already_deleted` outcomes only.
 */
export function batchDeleteResult<const K extends string>(idField: K) {
  const idShape = { [idField]: Uuid } as { [P in K]: typeof Uuid };
  return z.object({
    results: z.array(
      z.object({
        ...idShape,
        outcome: BatchDeleteOutcome,
        deleted_at: Timestamp.optional(),
      }),
    ),
    deleted_count: z.number().int().nonnegative(),
    already_deleted_count: z.number().int().nonnegative(),
    not_found_count: z.number().int().nonnegative(),
  });
}

export const MessageDeleteBatchOut = batchDeleteResult('message_id');
export type MessageDeleteBatchOut = z.infer<typeof MessageDeleteBatchOut>;
