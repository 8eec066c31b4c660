import { z } from 'zod';
import { Cursor, EndpointId, limitParam, Timestamp, TimestampIn, Uuid } from './common.js';
import { MESSAGE_STATUSES, MessageStatus } from './messages.js';
import { OwnerId } from './subscriptions.js';

/**
 * Bulk recovery jobs (docs/api.md, Bulk retries and replays): a retry of every outbound message a
 * filter matches, or a replay of an inbound endpoint's messages, run by the server's workers in
 * chunks and read back as a job.
 */

export const BULK_JOB_KINDS = ['outbound', 'inbound'] as const;
export type BulkJobKind = (typeof BULK_JOB_KINDS)[number];

/** `running` until every matched message is settled (`done`) or the job is cancelled. */
export const BULK_JOB_STATUSES = ['running', 'done', 'cancelled'] as const;
export const BulkJobStatus = z.enum(BULK_JOB_STATUSES, { message: `must be one of ${BULK_JOB_STATUSES.join(', ')}` });
export type BulkJobStatus = z.infer<typeof BulkJobStatus>;

/** What an outbound bulk retry takes unless its filter names statuses. */
export const DEFAULT_BULK_RETRY_STATUSES: readonly MessageStatus[] = ['failed_permanent'];

/** One or more delivery statuses, each kept once. */
const StatusList = z
  .array(MessageStatus, { message: `must be an array of statuses (${MESSAGE_STATUSES.join(', ')})` })
  .min(1, 'must name at least one status')
  .max(MESSAGE_STATUSES.length, `must name at most ${MESSAGE_STATUSES.length} statuses`)
  .transform((statuses) => [...new Set(statuses)]);

/** The start of a job's window: a job always has one, so that none runs over every message ever stored. */
const WindowStart = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `is required: ${what} (RFC 3339)` : 'must be an RFC 3339 date-time') })
    .pipe(TimestampIn);

const EventTypeFilter = z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters');

/**
 * Which outbound messages a bulk retry takes: those of the project created in
 * [`created_after`, `created_before`) — `created_before` absent: until the job is created — with one
 * of `status` (default `["failed_permanent"]`), and, when given, of that endpoint, of an endpoint of
 * that owner, of that event type.
 */
export const BulkRetryFilterIn = z.strictObject({
  endpoint_id: EndpointId.optional(),
  owner_id: OwnerId.optional(),
  event_type: EventTypeFilter.optional(),
  status: StatusList.optional(),
  created_after: WindowStart('the retry takes the messages created from this time on'),
  created_before: TimestampIn.optional(),
});
export type BulkRetryFilterIn = z.infer<typeof BulkRetryFilterIn>;

/** POST /v1/bulk-retries: `dry_run: true` counts what the filter matches and starts nothing. */
export const BulkRetryCreateIn = z.strictObject({
  filter: BulkRetryFilterIn,
  dry_run: z.boolean({ message: 'must be true or false' }).optional(),
});
export type BulkRetryCreateIn = z.infer<typeof BulkRetryCreateIn>;

/**
 * POST /v1/inbound-endpoints/{id}/replays: the endpoint's messages received in [`received_after`,
 * `received_before`) — `received_before` absent: until the job is created — with one of `status` and
 * of `event_type` when given; `dry_run: true` counts them and starts nothing.
 */
export const InboundReplayCreateIn = z.strictObject({
  received_after: WindowStart('the replay takes the messages received from this time on'),
  received_before: TimestampIn.optional(),
  status: StatusList.optional(),
  event_type: EventTypeFilter.optional(),
  dry_run: z.boolean({ message: 'must be true or false' }).optional(),
});
export type InboundReplayCreateIn = z.infer<typeof InboundReplayCreateIn>;

/** The 200 answer of a dry run: how many messages a job would take now. */
export const BulkJobEstimateOut = z.object({ matched: z.number().int().nonnegative() });
export type BulkJobEstimateOut = z.infer<typeof BulkJobEstimateOut>;

/** An outbound job's filter as it was given, `null` where it was not (and `status` as it applies). */
export const BulkRetryFilterOut = z.object({
  endpoint_id: EndpointId.nullable(),
  owner_id: z.string().nullable(),
  event_type: z.string().nullable(),
  status: z.array(MessageStatus),
  created_after: Timestamp,
  created_before: Timestamp.nullable(),
});
export type BulkRetryFilterOut = z.infer<typeof BulkRetryFilterOut>;

/** An inbound replay's filter as it was given; `status: null` takes every status. */
export const InboundReplayFilterOut = z.object({
  inbound_endpoint_id: Uuid,
  event_type: z.string().nullable(),
  status: z.array(MessageStatus).nullable(),
  received_after: Timestamp,
  received_before: Timestamp.nullable(),
});
export type InboundReplayFilterOut = z.infer<typeof InboundReplayFilterOut>;

/**
 * How a job stands. `matched`: the messages its filter matched when it was created; `done`: retried
 * (or replayed); `skipped`: deleted meanwhile; `failed`: could not be retried (their endpoint is
 * gone), the latest reason in `last_error`. `finished_at` is null while it runs.
 */
const bulkJobFields = {
  id: Uuid,
  status: BulkJobStatus,
  matched: z.number().int().nonnegative(),
  done: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  last_error: z.string().nullable(),
  created_at: Timestamp,
  finished_at: Timestamp.nullable(),
};

export const BulkJobOut = z.discriminatedUnion('kind', [
  z.object({ ...bulkJobFields, kind: z.literal('outbound'), filter: BulkRetryFilterOut }),
  z.object({ ...bulkJobFields, kind: z.literal('inbound'), filter: InboundReplayFilterOut }),
]);
export type BulkJobOut = z.infer<typeof BulkJobOut>;

/** GET /v1/bulk-retries: the project's jobs, newest first. */
export const BulkJobListQuery = z.strictObject({
  limit: limitParam(200, 50),
  cursor: Cursor.optional(),
});
export type BulkJobListQuery = z.infer<typeof BulkJobListQuery>;
