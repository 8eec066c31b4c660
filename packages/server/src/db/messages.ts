import type { Sql, SqlFragment } from './database.js';
import { newestFirstById, timeWindow } from './keyset.js';
import { claimDeletedPayloads, clearPayloadKeys, liveEndpoint, softDeleteMessages, type SoftDeleteResult } from './soft-delete.js';
import { DELIVERIES_CHANNEL } from './channels.js';
import type { DeliveryStatus } from './deliveries.js';

/** Outbound messages (migrations/003). One function per operation, `sql` first. */

/** The columns of a submission's key and payload, on messages and events alike. */
export interface SubmittedPayloadColumns {
  idempotency_key: string | null;
  request_sha256: string;
  payload_format: 'json' | 'text';
  content_type: string;
  size_bytes: number;
  payload_sha256: string;
}

export interface OutboundMessageRow extends SubmittedPayloadColumns {
  id: string;
  project_id: string;
  endpoint_id: string;
  /** The event this message was fanned out for; null when sent directly. */
  event_id: string | null;
  event_type: string | null;
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

/** The columns of an outbound message row (`m`), as every read of one selects them. */
export const COLUMNS = (sql: Sql) => sql.fragment`
  m.id, m.project_id, m.endpoint_id, m.event_id, m.event_type, m.idempotency_key, m.request_sha256, m.payload_format, m.content_type,
  m.size_bytes, m.payload_sha256, m.payload_key, m.status, m.attempt_count, m.response_status, m.response_latency_ms,
  m.processing_ms, m.last_error, m.first_attempt_at, m.next_attempt_at, m.queue_wait_ms, m.total_delivery_ms,
  m.created_at, m.updated_at, m.delivered_at, m.failed_at, m.deleted_at, m.deleted_by_api_key_id, m.deleted_by_user_id`;

/** Lock class of idempotency keys (the second key is a hash of project and key). */
const IDEMPOTENCY_LOCK_CLASS = 0x6d736731; // "msg1"

/** What a message or an event stores of its submission: its key, its payload and when. */
export interface SubmittedPayload {
  idempotencyKey: string | null;
  requestSha256: string;
  payloadFormat: 'json' | 'text';
  contentType: string;
  sizeBytes: number;
  payloadSha256: string;
  payloadKey: string;
  createdAt: Date;
  /** Stored in the `payloads` table by the same statement (the database payload store); undefined when stored elsewhere first. */
  inlinePayload: Uint8Array | undefined;
}

/** One submission of a group-committed enqueue (`enqueueOutboundMessages`). */
export interface OutboundSubmission extends SubmittedPayload {
  id: string;
  projectId: string;
  endpointId: string;
  eventType: string | null;
}

/** Jobs leased at insert to a worker in this process, which delivers them without a claim. */
export interface EnqueueLease {
  workerId: string;
  leaseId: string;
  leaseSeconds: number;
  /** At most this many messages are leased (the worker's free slots). */
  slots: number;
}

/** Whether a new message was leased to the EnqueueLease's worker; a leased one comes with its endpoint's delivery settings. */
export interface LeaseAtInsert {
  leased: boolean;
  url: string | null;
  headers: Record<string, string> | null;
  /** Active signing secrets, sealed, newest first. */
  secrets: string[] | null;
}

/** A message the enqueue stored (`position`: index of its submission). */
export interface EnqueuedMessage extends LeaseAtInsert {
  position: number;
  id: string;
  status: DeliveryStatus;
  created_at: Date;
}

/** The message that held an idempotency key before this enqueue (a repeat returns it). */
export interface IdempotencyHolder {
  project_id: string;
  idempotency_key: string;
  id: string;
  status: DeliveryStatus;
  created_at: Date;
  request_sha256: string;
}

export interface EnqueueResult {
  stored: EnqueuedMessage[];
  holders: IdempotencyHolder[];
}

/** A bytea parameter as the driver sends it. */
const byteaParam = (data: Uint8Array) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);

/** A bytea array parameter as text: postgres.js sends an array of Buffers with the wrong type. */
export const byteaText = (data: Uint8Array | undefined) =>
  data === undefined ? null : `\\x${byteaParam(data).toString('hex')}`;

/**
 * Serialises submissions that carry the same idempotency keys in their projects until the caller's
 * transaction ends, so that a statement begun afterwards sees the message a concurrent submission of
 * a key committed (or its absence) for certain. Taken in hash order: two batches holding several keys
 * never wait on each other in a cycle.
 */
export async function lockIdempotencyKeys(sql: Sql, keys: readonly { projectId: string; key: string }[]): Promise<void> {
  if (keys.length === 0) return;
  await sql`
    SELECT count(pg_advisory_xact_lock(${IDEMPOTENCY_LOCK_CLASS}::int, h))::int AS locked
    FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(${keys.map((k) => `${k.projectId}\n${k.key}`)}::text[]) AS k ORDER BY h) AS s`;
}

/**
 * The CTEs that queue deliveries of the messages a `chosen` CTE (`id`, `endpoint_id`, `leased`) names:
 * `jobs`, due now (the leased ones leased to `lease`'s worker); `woken`, one NOTIFY (payload
 * `origin`) when any job waits for a claim; `leased_endpoints`, the delivery settings of the leased
 * messages' endpoints, one row per endpoint. The statement must read `woken` (`notifiedRows`) for
 * its NOTIFY to be sent, and returns `leased_endpoints` as rows of their own, which
 * `withLeasedEndpoints` gives to the messages: joined to `chosen` in SQL, a plan cached for a
 * batch of a few rows compares every message with every endpoint, a million times for a fan-out to
 * a thousand endpoints.
 */
export function queueDeliveries(sql: Sql, lease: EnqueueLease | undefined, origin: string): SqlFragment {
  return sql.fragment`jobs AS (
      INSERT INTO delivery_jobs (message_id, kind, destination, run_at, locked_by, locked_until, lease_id, claims)
      SELECT id, 'outbound', endpoint_id, now(),
             CASE WHEN leased THEN ${lease?.workerId ?? null}::text END,
             CASE WHEN leased THEN now() + make_interval(secs => ${lease?.leaseSeconds ?? 0}::int) END,
             CASE WHEN leased THEN ${lease?.leaseId ?? null}::uuid END,
             CASE WHEN leased THEN 1 ELSE 0 END
      FROM chosen
      RETURNING lease_id
    ), woken AS (
      SELECT pg_notify(${DELIVERIES_CHANNEL}, ${origin}::text) FROM (SELECT 1 FROM jobs WHERE lease_id IS NULL LIMIT 1) AS waiting
    ), leased_endpoints AS (
      SELECT e.id, e.url, e.headers,
             coalesce((SELECT json_agg(k.secret_encrypted ORDER BY k.created_at DESC, k.id DESC) FROM signing_keys k
                       WHERE k.owner_id = e.id AND (k.expires_at IS NULL OR k.expires_at > now())), '[]'::json) AS secrets
      FROM (SELECT DISTINCT endpoint_id FROM chosen WHERE leased) AS l
      -- OFFSET 0: a primary-key lookup per endpoint, whatever the planner estimates of chosen.
      CROSS JOIN LATERAL (SELECT e.id, e.url, e.headers FROM endpoints e WHERE e.id = l.endpoint_id OFFSET 0) AS e
    )`;
}

/** A row of `leased_endpoints`, as the statement returns it. */
export interface LeasedEndpointRow {
  endpoint_id: string;
  url: string;
  headers: Record<string, string>;
  secrets: string[];
}

/** Gives each leased message its endpoint's delivery settings from the statement's `leased_endpoints` rows. */
export function withLeasedEndpoints<T extends LeaseAtInsert & { endpoint_id: string }>(messages: T[], endpoints: readonly LeasedEndpointRow[]): T[] {
  const byId = new Map(endpoints.map((e) => [e.endpoint_id, e]));
  for (const m of messages) {
    const endpoint = m.leased ? byId.get(m.endpoint_id) : undefined;
    m.url = endpoint?.url ?? null;
    m.headers = endpoint?.headers ?? null;
    m.secrets = endpoint?.secrets ?? null;
  }
  return messages;
}

/** A FROM item that reads `woken` and yields no row: a UNION ALL branch that makes the NOTIFY part of the statement. */
export const notifiedRows = (sql: Sql): SqlFragment => sql.fragment`(SELECT count(*) AS n FROM woken) AS w WHERE w.n < 0`;

/**
 * Stores a batch of submissions in one statement: payloads (inline ones), messages and their jobs,
 * with one NOTIFY (payload `origin`) when any job waits for a claim. The statement text is the same
 * for every batch. It stores a submission when its endpoint is live in its project and, with an
 * idempotency key, when no message created after `since` holds the key and it is the first such
 * submission of the batch with a live endpoint; the caller tells the other outcomes apart from the
 * stored messages and the holders. Concurrent batches with keys must hold lockIdempotencyKeys.
 * Up to `lease.slots` messages of endpoints that are neither paused nor rate-limited are leased to
 * `lease.workerId` at insert.
 */
export async function enqueueOutboundMessages(
  sql: Sql,
  submissions: readonly OutboundSubmission[],
  options: { since: Date; lease: EnqueueLease | undefined; origin: string },
): Promise<EnqueueResult> {
  const column = <T>(pick: (s: OutboundSubmission) => T) => submissions.map(pick);
  const lease = options.lease;
  const rows = await sql<
    (EnqueuedMessage & { source: 'stored'; endpoint_id: string }) | (IdempotencyHolder & { source: 'held' }) | (LeasedEndpointRow & { source: 'endpoint' })
  >`
    WITH input AS (
      SELECT x.position::int - 1 AS position, x.id, x.project_id, x.endpoint_id, x.event_type, x.idempotency_key, x.request_sha256,
             x.payload_format, x.content_type, x.size_bytes, x.payload_sha256, x.payload_key, x.created_at, x.payload
      FROM unnest(${column((s) => s.id)}::uuid[], ${column((s) => s.projectId)}::uuid[], ${column((s) => s.endpointId)}::text[],
                  ${column((s) => s.eventType)}::text[], ${column((s) => s.idempotencyKey)}::text[], ${column((s) => s.requestSha256)}::text[],
                  ${column((s) => s.payloadFormat)}::text[], ${column((s) => s.contentType)}::text[], ${column((s) => s.sizeBytes)}::int[],
                  ${column((s) => s.payloadSha256)}::text[], ${column((s) => s.payloadKey)}::text[],
                  ${column((s) => s.createdAt.toISOString())}::text[]::timestamptz[], ${column((s) => byteaText(s.inlinePayload))}::text[]::bytea[])
           WITH ORDINALITY AS x (id, project_id, endpoint_id, event_type, idempotency_key, request_sha256, payload_format, content_type,
                                 size_bytes, payload_sha256, payload_key, created_at, payload, position)
    ), held AS (
      SELECT k.project_id, k.idempotency_key, h.id, h.status, h.created_at, h.request_sha256
      FROM (SELECT DISTINCT project_id, idempotency_key FROM input WHERE idempotency_key IS NOT NULL) AS k
      CROSS JOIN LATERAL (
        SELECT m.id, m.status, m.created_at, m.request_sha256 FROM outbound_messages m
        WHERE m.project_id = k.project_id AND m.idempotency_key = k.idempotency_key AND m.created_at > ${options.since.toISOString()}::text::timestamptz
        ORDER BY m.created_at DESC LIMIT 1
      ) AS h
    ), live AS (
      SELECT i.*, (NOT e.paused AND e.rate_limit_rps = 0) AS direct,
             row_number() OVER (PARTITION BY i.project_id, i.idempotency_key ORDER BY i.position) AS key_rank
      FROM input i
      -- One primary-key lookup per submission, whatever plan the statement is cached with: OFFSET 0
      -- keeps the conditions below out of the subquery, where a plan made with old statistics
      -- could take an index on project_id and scan the project's endpoints for each submission.
      CROSS JOIN LATERAL (SELECT e.* FROM endpoints e WHERE e.id = i.endpoint_id OFFSET 0) AS e
      WHERE e.project_id = i.project_id AND ${liveEndpoint('e')}
    ), chosen AS (
      SELECT l.*, l.direct AND row_number() OVER (PARTITION BY l.direct ORDER BY l.position) <= ${lease?.slots ?? 0}::int AS leased
      FROM live l
      WHERE l.idempotency_key IS NULL
         OR (l.key_rank = 1 AND NOT EXISTS (SELECT 1 FROM held h WHERE h.project_id = l.project_id AND h.idempotency_key = l.idempotency_key))
    ), stored_payloads AS (
      INSERT INTO payloads (key, data) SELECT payload_key, payload FROM chosen WHERE payload IS NOT NULL
    ), messages AS (
      INSERT INTO outbound_messages AS m (id, project_id, endpoint_id, event_type, idempotency_key, request_sha256, payload_format,
        content_type, size_bytes, payload_sha256, payload_key, created_at, updated_at)
      SELECT id, project_id, endpoint_id, event_type, idempotency_key, request_sha256, payload_format, content_type, size_bytes,
             payload_sha256, payload_key, created_at, created_at
      FROM chosen
      RETURNING m.id, m.status, m.created_at
    ), ${queueDeliveries(sql, lease, options.origin)}
    SELECT 'stored' AS source, c.position, m.id, c.endpoint_id, m.status, m.created_at, c.leased, NULL::text AS url, NULL::jsonb AS headers,
           NULL::json AS secrets, NULL::uuid AS project_id, NULL::text AS idempotency_key, NULL::text AS request_sha256
    FROM messages m JOIN chosen c ON c.id = m.id
    UNION ALL
    SELECT 'endpoint', NULL, NULL, le.id, NULL, NULL, false, le.url, le.headers, le.secrets, NULL, NULL, NULL
    FROM leased_endpoints le
    UNION ALL
    SELECT 'held', NULL, h.id, NULL, h.status, h.created_at, false, NULL, NULL, NULL, h.project_id, h.idempotency_key, h.request_sha256
    FROM held h
    UNION ALL
    -- Never a row: makes the NOTIFY part of the statement.
    SELECT 'woken', NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL FROM ${notifiedRows(sql)}`;
  const stored: (EnqueuedMessage & { endpoint_id: string })[] = [];
  const holders: IdempotencyHolder[] = [];
  const endpoints: LeasedEndpointRow[] = [];
  for (const row of rows) {
    if (row.source === 'stored') stored.push(row);
    else if (row.source === 'held') holders.push(row);
    else endpoints.push(row);
  }
  return { stored: withLeasedEndpoints(stored, endpoints), holders };
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
  /** The endpoint's owner (a portal token's messages). */
  ownerId?: string;
  status?: string;
  /** Inclusive. */
  startTime?: string;
  /** Exclusive. */
  endTime?: string;
}

/** Newest first by id (UUIDv7 is time-ordered), on the (project, id) or (endpoint, id) index. */
export async function listOutboundLogs(
  sql: Sql,
  projectId: string,
  filters: OutboundLogFilters,
  page: { limit: number; beforeId?: string },
): Promise<OutboundMessageWithUrl[]> {
  const where = [sql.fragment`m.project_id = ${projectId}::uuid`];
  if (filters.endpointId !== undefined) where.push(sql.fragment`m.endpoint_id = ${filters.endpointId}`);
  if (filters.ownerId !== undefined) where.push(sql.fragment`e.owner_id = ${filters.ownerId}`);
  if (filters.status !== undefined) where.push(sql.fragment`m.status = ${filters.status}`);
  where.push(...timeWindow(sql, sql.fragment`m.created_at`, { from: filters.startTime, to: filters.endTime }));
  return sql<OutboundMessageWithUrl>`
    SELECT ${COLUMNS(sql)}, e.url AS endpoint_url
    FROM outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
    ${newestFirstById(sql, sql.fragment`m.id`, where, page)}`;
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
  /** The request went re-signed (an inbound message late after its signed timestamp). */
  resigned: boolean;
}

/** The attempt history of a message, oldest first. */
export async function listAttempts(sql: Sql, messageId: string): Promise<AttemptRow[]> {
  return sql<AttemptRow>`
    SELECT id, message_id, attempt_number, started_at, response_status, latency_ms, error, response_body, resigned
    FROM delivery_attempts WHERE message_id = ${messageId}::uuid
    ORDER BY attempt_number, started_at, id`;
}

/** A retry: the messages wait for their next delivery again (those being delivered right now are left out by the caller). */
export async function markOutboundRequeued(sql: Sql, projectId: string, ids: readonly string[]): Promise<{ id: string; status: DeliveryStatus }[]> {
  if (ids.length === 0) return [];
  return sql<{ id: string; status: DeliveryStatus }>`
    UPDATE outbound_messages SET status = 'queued', next_attempt_at = NULL, failed_at = NULL, updated_at = now()
    WHERE id = ANY(${[...ids]}::uuid[]) AND project_id = ${projectId}::uuid AND deleted_at IS NULL
    RETURNING id, status`;
}

/** Soft-deletes messages of the project by id; metadata, status and attempts stay (see softDeleteMessages). */
export async function softDeleteOutboundMessages(
  sql: Sql,
  projectId: string,
  ids: readonly string[],
  principal: { apiKeyId: string },
): Promise<SoftDeleteResult[]> {
  return softDeleteMessages(sql, 'outbound_messages', projectId, ids, principal);
}

export async function claimDeletedOutboundPayloads(sql: Sql, limit: number): Promise<{ id: string; payload_key: string }[]> {
  return claimDeletedPayloads(sql, 'outbound_messages', limit);
}

export async function clearOutboundPayloadKeys(sql: Sql, ids: readonly string[]): Promise<void> {
  await clearPayloadKeys(sql, 'outbound_messages', ids);
}
