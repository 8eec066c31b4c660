import type { Sql } from './database.js';
import type { DeliveryStatus } from './deliveries.js';
import { matchingSubscriptions } from './endpoint-subscriptions.js';
import { newestFirstById, timeWindow } from './keyset.js';
import { byteaParam, notifiedRows, queueDeliveries, type EnqueueLease, type LeaseAtInsert, type SubmittedPayload, type SubmittedPayloadColumns } from './messages.js';
import { liveEndpoint } from './soft-delete.js';

/** Events and their fan-out into outbound messages (migrations/021). One function per operation, `sql` first. */

export interface EventRow extends SubmittedPayloadColumns {
  id: string;
  project_id: string;
  event_type: string;
  owner_id: string | null;
  channels: string[];
  payload_key: string;
  message_count: number;
  created_at: Date;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  ev.id, ev.project_id, ev.event_type, ev.owner_id, ev.channels, ev.idempotency_key, ev.request_sha256, ev.payload_format,
  ev.content_type, ev.size_bytes, ev.payload_sha256, ev.payload_key, ev.message_count, ev.created_at`;

/** A validated event to fan out. */
export interface NewEvent extends SubmittedPayload {
  id: string;
  projectId: string;
  eventType: string;
  ownerId: string | null;
  channels: string[];
}

/** A message the fan-out made. */
export interface FannedOutMessage extends LeaseAtInsert {
  id: string;
  endpoint_id: string;
}

/**
 * Stores an event and fans it out in one statement: the event, its payload (inline), one outbound
 * message and job for each live endpoint of the project whose owner is the event's, whose
 * subscriptions take its type and whose channels admit it (paused endpoints included: the claim
 * parks their jobs), and one NOTIFY when a job waits for a claim. The endpoints are found by the
 * subscription index; the messages are written by set, whatever their number. Their ids follow the
 * event's (`hookrelay_uuidv7_after`), so they are unique without a round trip. Up to `lease.slots`
 * messages of endpoints neither paused nor rate-limited are leased to `lease.workerId` at insert.
 */
export async function fanOutEvent(sql: Sql, event: NewEvent, options: { lease: EnqueueLease | undefined; origin: string }): Promise<FannedOutMessage[]> {
  const createdAt = event.createdAt.toISOString();
  return sql<FannedOutMessage & { source: 'stored' }>`
    WITH matched AS (
      SELECT e.id AS endpoint_id, (NOT e.paused AND e.rate_limit_rps = 0) AS direct, row_number() OVER (ORDER BY e.id) AS n
      FROM endpoints e
      WHERE e.id IN (${matchingSubscriptions(sql, event.projectId, event.ownerId, event.eventType)})
        AND e.project_id = ${event.projectId}::uuid AND ${liveEndpoint('e')}
        AND (e.channels IS NULL OR e.channels && ${event.channels}::text[])
    ), stored_event AS (
      INSERT INTO events (id, project_id, event_type, owner_id, channels, idempotency_key, request_sha256, payload_format,
                          content_type, size_bytes, payload_sha256, payload_key, message_count, created_at)
      SELECT ${event.id}::uuid, ${event.projectId}::uuid, ${event.eventType}, ${event.ownerId}::text, ${event.channels}::text[],
             ${event.idempotencyKey}::text, ${event.requestSha256}, ${event.payloadFormat}, ${event.contentType}, ${event.sizeBytes}::int,
             ${event.payloadSha256}, ${event.payloadKey}, (SELECT count(*)::int FROM matched), ${createdAt}::text::timestamptz
      RETURNING id
    ), stored_payload AS (
      INSERT INTO payloads (key, data) SELECT ${event.payloadKey}, ${event.inlinePayload === undefined ? null : byteaParam(event.inlinePayload)}::bytea WHERE ${event.inlinePayload !== undefined}::boolean
    ), chosen AS (
      SELECT hookrelay_uuidv7_after(${event.id}::uuid, n) AS id, endpoint_id,
             direct AND row_number() OVER (PARTITION BY direct ORDER BY n) <= ${options.lease?.slots ?? 0}::int AS leased
      FROM matched
    ), messages AS (
      INSERT INTO outbound_messages (id, project_id, endpoint_id, event_id, event_type, idempotency_key, request_sha256, payload_format,
        content_type, size_bytes, payload_sha256, payload_key, created_at, updated_at)
      SELECT c.id, ${event.projectId}::uuid, c.endpoint_id, ev.id, ${event.eventType}, NULL, ${event.requestSha256}, ${event.payloadFormat},
             ${event.contentType}, ${event.sizeBytes}::int, ${event.payloadSha256}, ${event.payloadKey},
             ${createdAt}::text::timestamptz, ${createdAt}::text::timestamptz
      FROM chosen c CROSS JOIN stored_event ev
    ), ${queueDeliveries(sql, options.lease, options.origin)}
    SELECT 'stored' AS source, c.id, c.endpoint_id, c.leased, le.url, le.headers, le.secrets
    FROM chosen c LEFT JOIN leased_endpoints le ON c.leased AND le.id = c.endpoint_id
    UNION ALL
    -- Never a row: makes the NOTIFY part of the statement.
    SELECT 'woken', NULL, NULL, false, NULL, NULL, NULL FROM ${notifiedRows(sql)}`;
}

/** The event of the project that holds an idempotency key given after `since`, if any. */
export async function findEventByIdempotencyKey(sql: Sql, projectId: string, key: string, since: Date): Promise<EventRow | undefined> {
  const [row] = await sql<EventRow>`
    SELECT ${COLUMNS(sql)} FROM events ev
    WHERE ev.project_id = ${projectId}::uuid AND ev.idempotency_key = ${key} AND ev.created_at > ${since.toISOString()}::text::timestamptz
    ORDER BY ev.created_at DESC LIMIT 1`;
  return row;
}

export async function findEvent(sql: Sql, projectId: string, id: string): Promise<EventRow | undefined> {
  const [row] = await sql<EventRow>`SELECT ${COLUMNS(sql)} FROM events ev WHERE ev.id = ${id}::uuid AND ev.project_id = ${projectId}::uuid`;
  return row;
}

/** An event's message with how its delivery stands. */
export interface EventMessageRow {
  id: string;
  endpoint_id: string;
  status: DeliveryStatus;
  attempt_count: number;
  response_status: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  deleted_at: Date | null;
}

/** Every message of an event, oldest first (by id, in the order the fan-out made them). */
export async function listEventMessages(sql: Sql, eventId: string): Promise<EventMessageRow[]> {
  return sql<EventMessageRow>`
    SELECT m.id, m.endpoint_id, m.status, m.attempt_count, m.response_status, m.last_error, m.delivered_at, m.deleted_at
    FROM outbound_messages m WHERE m.event_id = ${eventId}::uuid
    ORDER BY m.id`;
}

export interface EventListFilters {
  eventType?: string | undefined;
  ownerId?: string | undefined;
  /** Inclusive. */
  createdAfter?: string | undefined;
  /** Exclusive. */
  createdBefore?: string | undefined;
}

/** Newest first by id (UUIDv7), on the (project, id), (project, type, id) or (project, owner, id) index. */
export async function listEvents(sql: Sql, projectId: string, filters: EventListFilters, page: { limit: number; beforeId?: string }): Promise<EventRow[]> {
  const where = [sql.fragment`ev.project_id = ${projectId}::uuid`];
  if (filters.eventType !== undefined) where.push(sql.fragment`ev.event_type = ${filters.eventType}`);
  if (filters.ownerId !== undefined) where.push(sql.fragment`ev.owner_id = ${filters.ownerId}`);
  where.push(...timeWindow(sql, sql.fragment`ev.created_at`, { from: filters.createdAfter, to: filters.createdBefore }));
  return sql<EventRow>`SELECT ${COLUMNS(sql)} FROM events ev ${newestFirstById(sql, sql.fragment`ev.id`, where, page)}`;
}
