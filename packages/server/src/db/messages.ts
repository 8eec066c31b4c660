import type { Sql } from './database.js';
import type { DeliveryStatus } from './deliveries.js';

/** Outbound messages (migrations/003). One function per operation, `sql` first. */

export interface OutboundMessageRow {
  id: string;
  project_id: string;
  endpoint_id: string;
  event_type: string | null;
  idempotency_key: string | null;
  request_sha256: string;
  payload_format: 'json' | 'text';
  content_type: string;
  size_bytes: number;
  payload_sha256: string;
  payload_key: string | null;
  status: DeliveryStatus;
  attempt_count: number;
  response_status: number | null;
  response_latency_ms: number | null;
  processing_ms: number | null;
  last_error: string | null;
  first_attempt_at: Date | null;
  next_attempt_at: Date | null;
  queue_wait_ms: number | null;
  total_delivery_ms: number | null;
  created_at: Date;
  updated_at: Date;
  delivered_at: Date | null;
  failed_at: Date | null;
  deleted_at: Date | null;
  deleted_by_api_key_id: string | null;
  deleted_by_user_id: string | null;
}

/** A message with its endpoint's delivery URL (the log record's `endpoint`). */
export interface OutboundMessageWithUrl extends OutboundMessageRow {
  endpoint_url: string;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  m.id, m.project_id, m.endpoint_id, m.event_type, m.idempotency_key, m.request_sha256, m.payload_format, m.content_type,
  m.size_bytes, m.payload_sha256, m.payload_key, m.status, m.attempt_count, m.response_status, m.response_latency_ms,
  m.processing_ms, m.last_error, m.first_attempt_at, m.next_attempt_at, m.queue_wait_ms, m.total_delivery_ms,
  m.created_at, m.updated_at, m.delivered_at, m.failed_at, m.deleted_at, m.deleted_by_api_key_id, m.deleted_by_user_id`;

/** Lock class of idempotency keys (the second key is a hash of project and key). */
const IDEMPOTENCY_LOCK_CLASS = 0x6d736731; // "msg1"

/**
 * Serialises submissions that carry the same idempotency key in one project until the caller's
 * transaction ends, so the second one sees the first one's message (or its absence) for certain.
 */
export async function lockIdempotencyKey(sql: Sql, projectId: string, key: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${IDEMPOTENCY_LOCK_CLASS}::int, hashtext(${`${projectId}\n${key}`}::text))`;
}

/** The newest message of the project that holds `key` and was created after `since`. */
export async function findMessageByIdempotencyKey(sql: Sql, projectId: string, key: string, since: Date): Promise<OutboundMessageRow | undefined> {
  const [row] = await sql<OutboundMessageRow>`
    SELECT ${COLUMNS(sql)} FROM outbound_messages m
    WHERE m.project_id = ${projectId}::uuid AND m.idempotency_key = ${key} AND m.created_at > ${since}::timestamptz
    ORDER BY m.created_at DESC LIMIT 1`;
  return row;
}

export interface NewOutboundMessage {
  id: string;
  projectId: string;
  endpointId: string;
  eventType: string | null;
  idempotencyKey: string | null;
  requestSha256: string;
  payloadFormat: 'json' | 'text';
  contentType: string;
  sizeBytes: number;
  payloadSha256: string;
  payloadKey: string;
  createdAt: Date;
}

export async function insertOutboundMessage(sql: Sql, m: NewOutboundMessage): Promise<OutboundMessageRow> {
  const [row] = await sql<OutboundMessageRow>`
    INSERT INTO outbound_messages AS m (id, project_id, endpoint_id, event_type, idempotency_key, request_sha256, payload_format,
      content_type, size_bytes, payload_sha256, payload_key, created_at, updated_at)
    VALUES (${m.id}::uuid, ${m.projectId}::uuid, ${m.endpointId}, ${m.eventType}::text, ${m.idempotencyKey}::text, ${m.requestSha256},
      ${m.payloadFormat}, ${m.contentType}, ${m.sizeBytes}::int, ${m.payloadSha256}, ${m.payloadKey}, ${m.createdAt}::timestamptz,
      ${m.createdAt}::timestamptz)
    RETURNING ${COLUMNS(sql)}`;
  return row!;
}

/** A message of the project, deleted ones included (they answer their metadata). */
export async function findOutboundMessage(sql: Sql, projectId: string, id: string): Promise<OutboundMessageWithUrl | undefined> {
  const [row] = await sql<OutboundMessageWithUrl>`
    SELECT ${COLUMNS(sql)}, e.url AS endpoint_url
    FROM outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
    WHERE m.id = ${id}::uuid AND m.project_id = ${projectId}::uuid`;
  return row;
}

export interface OutboundLogFilters {
  endpointId?: string;
  status?: string;
  /** Inclusive. */
  startTime?: string;
  /** Exclusive. */
  endTime?: string;
  /** Keyset: rows with an id below this one (the previous page's last). */
  beforeId?: string;
}

/** Newest first by id (UUIDv7 is time-ordered), on the (project, id) or (endpoint, id) index. */
export async function listOutboundLogs(sql: Sql, projectId: string, filters: OutboundLogFilters, limit: number): Promise<OutboundMessageWithUrl[]> {
  const where = [sql.fragment`m.project_id = ${projectId}::uuid`];
  if (filters.endpointId !== undefined) where.push(sql.fragment`m.endpoint_id = ${filters.endpointId}`);
  if (filters.status !== undefined) where.push(sql.fragment`m.status = ${filters.status}`);
  if (filters.startTime !== undefined) where.push(sql.fragment`m.created_at >= ${filters.startTime}::timestamptz`);
  if (filters.endTime !== undefined) where.push(sql.fragment`m.created_at < ${filters.endTime}::timestamptz`);
  if (filters.beforeId !== undefined) where.push(sql.fragment`m.id < ${filters.beforeId}::uuid`);
  return sql<OutboundMessageWithUrl>`
    SELECT ${COLUMNS(sql)}, e.url AS endpoint_url
    FROM outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
    WHERE ${sql.join(where, ' AND ')}
    ORDER BY m.id DESC
    LIMIT ${limit}`;
}

export interface AttemptRow {
  id: string;
  message_id: string;
  attempt_number: number;
  started_at: Date;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  response_body: string | null;
}

/** The attempt history of a message, oldest first. */
export async function listAttempts(sql: Sql, messageId: string): Promise<AttemptRow[]> {
  return sql<AttemptRow>`
    SELECT id, message_id, attempt_number, started_at, response_status, latency_ms, error, response_body
    FROM delivery_attempts WHERE message_id = ${messageId}::uuid
    ORDER BY attempt_number, started_at, id`;
}

/** A retry: the message waits for its next delivery again (unless it is being delivered right now). */
export async function markOutboundRequeued(sql: Sql, projectId: string, id: string): Promise<{ id: string; status: DeliveryStatus } | undefined> {
  const [row] = await sql<{ id: string; status: DeliveryStatus }>`
    UPDATE outbound_messages SET status = 'queued', next_attempt_at = NULL, failed_at = NULL, updated_at = now()
    WHERE id = ${id}::uuid AND project_id = ${projectId}::uuid AND deleted_at IS NULL
    RETURNING id, status`;
  return row;
}

export interface SoftDeleteResult {
  id: string;
  deleted_at: Date;
  already_deleted: boolean;
}

/**
 * Soft-deletes messages of the project: metadata and attempts stay, the status is kept, the payload
 * is unreachable at once; ids already deleted keep their first deletion. Ids not in the result were
 * not found.
 */
export async function softDeleteOutboundMessages(
  sql: Sql,
  projectId: string,
  ids: readonly string[],
  principal: { apiKeyId: string },
): Promise<SoftDeleteResult[]> {
  return sql<SoftDeleteResult>`
    WITH target AS (
      SELECT id, deleted_at FROM outbound_messages
      WHERE id = ANY(${[...ids]}::uuid[]) AND project_id = ${projectId}::uuid
      FOR UPDATE
    ), updated AS (
      UPDATE outbound_messages m SET deleted_at = now(), deleted_by_api_key_id = ${principal.apiKeyId}::uuid, updated_at = now()
      FROM target WHERE m.id = target.id AND target.deleted_at IS NULL
      RETURNING m.id, m.deleted_at
    )
    SELECT t.id, coalesce(u.deleted_at, t.deleted_at) AS deleted_at, (t.deleted_at IS NOT NULL) AS already_deleted
    FROM target t LEFT JOIN updated u ON u.id = t.id`;
}

/** Payload keys of deleted messages still holding a payload, claimed for the sweeper's transaction. */
export async function claimDeletedOutboundPayloads(sql: Sql, limit: number): Promise<{ id: string; payload_key: string }[]> {
  return sql<{ id: string; payload_key: string }>`
    SELECT id, payload_key FROM outbound_messages
    WHERE deleted_at IS NOT NULL AND payload_key IS NOT NULL
    ORDER BY deleted_at
    LIMIT ${limit}
    FOR UPDATE SKIP LOCKED`;
}

export async function clearOutboundPayloadKeys(sql: Sql, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await sql`UPDATE outbound_messages SET payload_key = NULL WHERE id = ANY(${[...ids]}::uuid[])`;
}
