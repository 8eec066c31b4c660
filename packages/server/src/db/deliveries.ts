import type { HmacScheme } from '@hookrelay/shared';
import { DELIVERIES_CHANNEL } from './channels.js';
import type { Sql } from './database.js';
import { liveEndpoint } from './soft-delete.js';

/**
 * The delivery work queue (migrations/003): one `delivery_jobs` row per message that still has a
 * delivery to make. Lock order everywhere is job row → message row → endpoint row, so the API, the
 * workers and the triggers never wait on each other in a cycle.
 */

export type DeliveryKind = 'outbound' | 'inbound';
export type DeliveryStatus = 'queued' | 'delivering' | 'succeeded' | 'pending_retry' | 'failed_permanent';

export interface RequeueResult {
  message_id: string;
  /** The job is leased: the running attempt finishes first, then the message is delivered again. */
  in_flight: boolean;
}

/**
 * A manual retry (outbound) or replay (forward-mode inbound): a new delivery with the whole retry
 * schedule. A waiting job becomes due now (a parked one stays parked until its endpoint resumes); a
 * leased one is marked to run again once its attempt ends. `source` yields at most one row of
 * (message_id, kind, destination, attempt_count) per message, in id order (the order the job rows
 * are locked in, as every other statement on them does). Returns one row per message requeued.
 */
async function requeue(sql: Sql, source: ReturnType<Sql['fragment']>): Promise<RequeueResult[]> {
  return sql<RequeueResult>`
    WITH source AS (${source}), queued AS (
      INSERT INTO delivery_jobs AS j (message_id, kind, destination, run_at, attempt_base)
      SELECT message_id, kind, destination, now(), attempt_count FROM source ORDER BY message_id
      ON CONFLICT (message_id) DO UPDATE SET
        run_at = CASE WHEN j.locked_until IS NULL AND j.run_at <> 'infinity' THEN now() ELSE j.run_at END,
        attempt_base = CASE WHEN j.locked_until IS NULL THEN excluded.attempt_base ELSE j.attempt_base END,
        rerun = j.locked_until IS NOT NULL
      RETURNING j.message_id, j.locked_until IS NOT NULL AS in_flight
    ), woken AS (
      SELECT pg_notify(${DELIVERIES_CHANNEL}, '') FROM (SELECT 1 FROM queued LIMIT 1) AS any_queued
    )
    SELECT message_id, in_flight FROM queued, (SELECT count(*) FROM woken) AS n`;
}

/** Requeues the live outbound messages of the project among `messageIds` (see `requeue`). */
export async function requeueOutboundDeliveries(sql: Sql, projectId: string, messageIds: readonly string[]): Promise<RequeueResult[]> {
  if (messageIds.length === 0) return [];
  return requeue(
    sql,
    sql.fragment`SELECT id AS message_id, 'outbound'::text AS kind, endpoint_id AS destination, attempt_count
      FROM outbound_messages WHERE id = ANY(${[...messageIds]}::uuid[]) AND project_id = ${projectId}::uuid AND deleted_at IS NULL`,
  );
}

/** Replay of forward-mode inbound messages: those among `messageIds` whose message and mode qualify are requeued. */
export async function requeueInboundDeliveries(sql: Sql, projectId: string, messageIds: readonly string[]): Promise<RequeueResult[]> {
  if (messageIds.length === 0) return [];
  return requeue(
    sql,
    sql.fragment`SELECT m.id AS message_id, 'inbound'::text AS kind, m.inbound_endpoint_id::text AS destination, m.attempt_count
      FROM inbound_messages m JOIN inbound_endpoints e ON e.id = m.inbound_endpoint_id
      WHERE m.id = ANY(${[...messageIds]}::uuid[]) AND m.project_id = ${projectId}::uuid AND m.deleted_at IS NULL
        AND e.mode = 'forward' AND e.deleted_at IS NULL`,
  );
}

/** Removes the waiting (not leased) jobs of messages being deleted; leased ones end on their own. */
export async function dropWaitingOutboundJobs(sql: Sql, projectId: string, messageIds: readonly string[]): Promise<void> {
  await sql`
    DELETE FROM delivery_jobs WHERE message_id IN (
      SELECT j.message_id FROM delivery_jobs j JOIN outbound_messages m ON m.id = j.message_id
      WHERE j.message_id = ANY(${[...messageIds]}::uuid[]) AND m.project_id = ${projectId}::uuid AND j.locked_until IS NULL
      FOR UPDATE OF j SKIP LOCKED
    )`;
}

// ---------- claiming ----------

export interface ClaimedJob {
  message_id: string;
  kind: DeliveryKind;
  destination: string;
  attempt_base: number;
}

/**
 * Leases up to `limit` due jobs to `workerId` under one `leaseId`, in due order, for as long as the
 * payloads of the jobs before each one come to less than `maxBytes`: the first due job always goes,
 * however large, and the worker's memory holds at most about `maxBytes` plus one payload. Rows
 * another worker is claiming are skipped, so any number of workers take disjoint batches.
 */
export async function claimDueJobs(
  sql: Sql,
  input: { workerId: string; leaseId: string; limit: number; leaseSeconds: number; maxBytes: number },
): Promise<ClaimedJob[]> {
  return sql<ClaimedJob>`
    WITH due AS (
      SELECT message_id, kind, run_at FROM delivery_jobs
      WHERE locked_until IS NULL AND run_at <= now()
      ORDER BY run_at, message_id
      LIMIT ${input.limit}
      FOR UPDATE SKIP LOCKED
    ), sized AS (
      SELECT d.message_id,
             coalesce(sum(coalesce(i.size_bytes, o.size_bytes, 0)::bigint) OVER (
               ORDER BY d.run_at, d.message_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS bytes_before
      FROM due d
      LEFT JOIN inbound_messages i ON d.kind = 'inbound' AND i.id = d.message_id
      LEFT JOIN outbound_messages o ON d.kind = 'outbound' AND o.id = d.message_id
    )
    UPDATE delivery_jobs j SET
      locked_by = ${input.workerId}, lease_id = ${input.leaseId}::uuid,
      locked_until = now() + make_interval(secs => ${input.leaseSeconds}::int), claims = j.claims + 1
    FROM sized WHERE j.message_id = sized.message_id AND sized.bytes_before < ${input.maxBytes}::bigint
    RETURNING j.message_id, j.kind, j.destination, j.attempt_base`;
}

/** What a worker needs to deliver an outbound message, read in the claim transaction. */
export interface OutboundDeliveryContext {
  id: string;
  status: DeliveryStatus;
  attempt_count: number;
  content_type: string;
  payload_key: string | null;
  event_type: string | null;
  deleted: boolean;
  endpoint_id: string;
  url: string;
  headers: Record<string, string>;
  paused: boolean;
  rate_limit_rps: number;
  live: boolean;
  /** Active signing secrets, sealed, newest first. */
  secrets: string[];
  /**
   * The payload bytes, when read with the context (database payload store); null when not stored, or
   * when another context of the same load carries them (`contextPayload`).
   */
  payload?: Uint8Array | null;
}

/**
 * The payload column of a context: read in the same query when payloads live in the database, once
 * per key. The messages of an event share one payload; the first context of each key carries the
 * bytes (the claim hands them to the others) and the rest null.
 */
const contextPayload = (sql: Sql, withPayloads: boolean) =>
  withPayloads
    ? sql.fragment`, CASE WHEN row_number() OVER (PARTITION BY m.payload_key ORDER BY m.id) = 1
                       THEN (SELECT p.data FROM payloads p WHERE p.key = m.payload_key) END AS payload`
    : sql.fragment``;

export async function loadOutboundContexts(sql: Sql, ids: readonly string[], withPayloads = false): Promise<OutboundDeliveryContext[]> {
  if (ids.length === 0) return [];
  return sql<OutboundDeliveryContext>`
    SELECT m.id, m.status, m.attempt_count, m.content_type, m.payload_key, m.event_type, (m.deleted_at IS NOT NULL) AS deleted,
           e.id AS endpoint_id, e.url, e.headers, e.paused, e.rate_limit_rps,
           ${liveEndpoint('e')} AS live,
           coalesce((SELECT json_agg(k.secret_encrypted ORDER BY k.created_at DESC, k.id DESC) FROM signing_keys k
                     WHERE k.owner_id = e.id AND (k.expires_at IS NULL OR k.expires_at > now())), '[]'::json) AS secrets
           ${contextPayload(sql, withPayloads)}
    FROM outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
    WHERE m.id = ANY(${[...ids]}::uuid[])`;
}

/** What a worker needs to forward an inbound message. */
export interface InboundDeliveryContext {
  id: string;
  status: DeliveryStatus;
  attempt_count: number;
  content_type: string;
  payload_key: string | null;
  method: string;
  path: string;
  query: string;
  raw_headers: [string, string][];
  deleted: boolean;
  endpoint_id: string;
  url: string;
  mode: 'forward' | 'cli';
  signing_enabled: boolean;
  /** What re-signing a late delivery reads (ingest/resign.ts): the checks the message passed, the endpoint's settings. */
  verified: string[];
  hmac_scheme: HmacScheme;
  hmac_header_name: string | null;
  timestamp_header_name: string | null;
  hmac_secret_encrypted: string | null;
  resign_late: boolean;
  /** The body's size: a streamed body is sent with it as Content-Length, and read to check it. */
  size_bytes: number;
  live: boolean;
  secrets: string[];
  payload?: Uint8Array | null;
  /** The `traceparent` stored with the message: its attempts' spans join that trace. */
  trace_context: string | null;
}

export async function loadInboundContexts(sql: Sql, ids: readonly string[], withPayloads = false): Promise<InboundDeliveryContext[]> {
  if (ids.length === 0) return [];
  return sql<InboundDeliveryContext>`
    SELECT m.id, m.status, m.attempt_count, m.content_type, m.payload_key, m.size_bytes, m.method, m.path, m.query, m.raw_headers,
           (m.deleted_at IS NOT NULL) AS deleted, m.trace_context, m.verified,
           e.id::text AS endpoint_id, e.url, e.mode, e.signing_enabled,
           e.hmac_scheme, e.hmac_header_name, e.timestamp_header_name, e.hmac_secret_encrypted, e.resign_late,
           ${liveEndpoint('e')} AS live,
           coalesce((SELECT json_agg(k.secret_encrypted ORDER BY k.created_at DESC, k.id DESC) FROM signing_keys k
                     WHERE k.owner_id = e.id::text AND (k.expires_at IS NULL OR k.expires_at > now())), '[]'::json) AS secrets
           ${contextPayload(sql, withPayloads)}
    FROM inbound_messages m JOIN inbound_endpoints e ON e.id = m.inbound_endpoint_id
    WHERE m.id = ANY(${[...ids]}::uuid[])`;
}

/**
 * Of these endpoints, those still paused and live, share-locked so that a concurrent resume (or
 * delete) waits for the park and then finds the parked jobs.
 */
export async function lockPausedEndpoints(sql: Sql, endpointIds: readonly string[]): Promise<Set<string>> {
  if (endpointIds.length === 0) return new Set();
  const rows = await sql<{ id: string }>`
    SELECT id FROM endpoints
    WHERE id = ANY(${[...endpointIds]}::text[]) AND paused AND ${liveEndpoint('endpoints')}
    ORDER BY id FOR SHARE`;
  return new Set(rows.map((r) => r.id));
}

export interface RateLimitRow {
  rate_limit_rps: number;
  burst: number;
  rate_limit_tat: Date | null;
  /** The database clock once the lock is held (not the transaction's start). */
  now: Date;
  /** Still deliverable once the lock is held (not paused or deleted meanwhile). */
  deliverable: boolean;
}

/**
 * The endpoint's bucket, row-locked until the claim commits (every worker queues here). The lock is
 * the one its UPDATE takes (FOR NO KEY UPDATE), as the other writers of endpoint rows take it.
 */
export async function lockRateLimit(sql: Sql, endpointId: string): Promise<RateLimitRow | undefined> {
  // clock_timestamp() in the outer query is read once the row lock is held, not before the wait.
  const [row] = await sql<RateLimitRow>`
    SELECT e.rate_limit_rps, e.burst, e.rate_limit_tat, clock_timestamp() AS now, e.deliverable
    FROM (
      SELECT rate_limit_rps, burst, rate_limit_tat,
             (NOT paused AND ${liveEndpoint('endpoints')}) AS deliverable
      FROM endpoints WHERE id = ${endpointId} FOR NO KEY UPDATE
    ) AS e`;
  return row;
}

export async function saveRateLimitTat(sql: Sql, endpointId: string, tat: Date): Promise<void> {
  await sql`UPDATE endpoints SET rate_limit_tat = ${tat}::timestamptz WHERE id = ${endpointId}`;
}

/** Ends the lease of jobs without an attempt: each becomes due again `delayMs` from now. */
export async function releaseJobs(sql: Sql, leaseId: string, jobs: readonly { messageId: string; delayMs: number }[]): Promise<void> {
  if (jobs.length === 0) return;
  await sql`
    UPDATE delivery_jobs j SET run_at = now() + make_interval(secs => v.delay_ms / 1000.0),
      locked_by = NULL, locked_until = NULL, lease_id = NULL
    FROM unnest(${jobs.map((j) => j.messageId)}::uuid[], ${jobs.map((j) => Math.max(0, Math.round(j.delayMs)))}::int[]) AS v (message_id, delay_ms)
    WHERE j.message_id = v.message_id AND j.lease_id = ${leaseId}::uuid`;
}

/** Parks jobs of paused endpoints until a resume makes them due (trigger in migrations/003). */
export async function parkJobs(sql: Sql, leaseId: string, messageIds: readonly string[]): Promise<void> {
  if (messageIds.length === 0) return;
  await sql`
    UPDATE delivery_jobs SET run_at = 'infinity', locked_by = NULL, locked_until = NULL, lease_id = NULL
    WHERE message_id = ANY(${[...messageIds]}::uuid[]) AND lease_id = ${leaseId}::uuid`;
}

export async function deleteJobs(sql: Sql, leaseId: string, messageIds: readonly string[]): Promise<void> {
  if (messageIds.length === 0) return;
  await sql`DELETE FROM delivery_jobs WHERE message_id = ANY(${[...messageIds]}::uuid[]) AND lease_id = ${leaseId}::uuid`;
}

export const ENDPOINT_DELETED_ERROR = 'endpoint deleted: no further delivery attempts';
export const INBOUND_ENDPOINT_DELETED_ERROR = 'inbound endpoint deleted: no further delivery attempts';

const messageTable = (sql: Sql, kind: DeliveryKind) => (kind === 'outbound' ? sql.fragment`outbound_messages` : sql.fragment`inbound_messages`);

/** Ends the deliveries of messages whose endpoint is gone: failed_permanent, no attempt made. */
export async function failWithoutAttempt(sql: Sql, kind: DeliveryKind, messageIds: readonly string[], error: string): Promise<void> {
  if (messageIds.length === 0) return;
  await sql`
    UPDATE ${messageTable(sql, kind)} SET status = 'failed_permanent', last_error = ${error}, next_attempt_at = NULL,
      failed_at = now(), updated_at = now()
    WHERE id = ANY(${[...messageIds]}::uuid[])`;
}

/** An inbound endpoint left forward mode: its messages wait for a CLI again. */
export async function returnInboundToCli(sql: Sql, messageIds: readonly string[]): Promise<void> {
  if (messageIds.length === 0) return;
  await sql`
    UPDATE inbound_messages SET status = 'queued', next_attempt_at = NULL, updated_at = now()
    WHERE id = ANY(${[...messageIds]}::uuid[])`;
}

/** Moves messages to `delivering`; returns those that are still live (a delete may have won). */
export async function markDelivering(sql: Sql, kind: DeliveryKind, messageIds: readonly string[]): Promise<Set<string>> {
  if (messageIds.length === 0) return new Set();
  const rows = await sql<{ id: string }>`
    UPDATE ${messageTable(sql, kind)} SET status = 'delivering', updated_at = now()
    WHERE id = ANY(${[...messageIds]}::uuid[]) AND deleted_at IS NULL
    RETURNING id`;
  return new Set(rows.map((r) => r.id));
}

/**
 * Marks first attempts that are still under this lease `delivering` (messages leased at enqueue,
 * whose attempt runs long). Never overwrites a result: one that has landed ended the lease or moved
 * the status on, and raised attempt_count.
 */
export async function markLeasedDelivering(sql: Sql, leaseId: string, messageIds: readonly string[]): Promise<void> {
  if (messageIds.length === 0) return;
  await sql`
    UPDATE outbound_messages m SET status = 'delivering', updated_at = now()
    WHERE m.id = ANY(${[...messageIds]}::uuid[]) AND m.status = 'queued' AND m.attempt_count = 0 AND m.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM delivery_jobs j WHERE j.message_id = m.id AND j.lease_id = ${leaseId}::uuid)`;
}

/** Puts back the status a message had before it was claimed (a job released at shutdown). */
export async function restoreStatuses(sql: Sql, kind: DeliveryKind, items: readonly { messageId: string; status: DeliveryStatus }[]): Promise<void> {
  if (items.length === 0) return;
  await sql`
    UPDATE ${messageTable(sql, kind)} m SET status = v.status, updated_at = now()
    FROM unnest(${items.map((i) => i.messageId)}::uuid[], ${items.map((i) => i.status)}::text[]) AS v (id, status)
    WHERE m.id = v.id AND m.status = 'delivering'`;
}

// ---------- results ----------

export interface HeldJob {
  message_id: string;
  rerun: boolean;
}

/** Of these (message, lease) pairs, the jobs still leased as given, locked for the result. */
export async function lockHeldJobs(sql: Sql, leases: readonly { messageId: string; leaseId: string }[]): Promise<HeldJob[]> {
  if (leases.length === 0) return [];
  return sql<HeldJob>`
    SELECT j.message_id, j.rerun FROM delivery_jobs j
    JOIN unnest(${leases.map((l) => l.messageId)}::uuid[], ${leases.map((l) => l.leaseId)}::uuid[]) AS v (message_id, lease_id) ON j.message_id = v.message_id AND j.lease_id = v.lease_id
    ORDER BY j.message_id
    FOR UPDATE OF j`;
}

export interface AttemptRecord {
  id: string;
  messageId: string;
  attemptNumber: number;
  startedAt: Date;
  responseStatus: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
  workerId: string;
  /** The request went re-signed (ingest/resign.ts); false when absent. */
  resigned?: boolean;
}

export async function insertAttempts(sql: Sql, attempts: readonly AttemptRecord[]): Promise<void> {
  if (attempts.length === 0) return;
  await sql`
    INSERT INTO delivery_attempts (id, message_id, attempt_number, started_at, response_status, latency_ms, error, response_body, worker_id, resigned)
    SELECT id, message_id, attempt_number, started_at, response_status, latency_ms, error, response_body, worker_id, resigned = 1
    FROM unnest(${attempts.map((a) => a.id)}::uuid[], ${attempts.map((a) => a.messageId)}::uuid[], ${attempts.map((a) => a.attemptNumber)}::int[],
      ${attempts.map((a) => a.startedAt.toISOString())}::timestamptz[], ${attempts.map((a) => a.responseStatus)}::int[],
      ${attempts.map((a) => a.latencyMs)}::int[], ${attempts.map((a) => a.error)}::text[], ${attempts.map((a) => a.responseBody)}::text[],
      ${attempts.map((a) => a.workerId)}::text[], ${attempts.map((a) => (a.resigned === true ? 1 : 0))}::int[])
      AS a (id, message_id, attempt_number, started_at, response_status, latency_ms, error, response_body, worker_id, resigned)`;
}

/** A finished attempt's effect on its message. `status` is what it becomes unless deleted meanwhile. */
export interface MessageOutcome {
  messageId: string;
  status: 'succeeded' | 'pending_retry' | 'failed_permanent' | 'queued';
  attemptNumber: number;
  startedAt: Date;
  finishedAt: Date;
  responseStatus: number | null;
  latencyMs: number;
  processingMs: number;
  error: string | null;
  nextAttemptAt: Date | null;
}

/** A message as an outcome left it, with what its endpoint's failure tracking and announcements need. */
export interface AppliedOutcome {
  id: string;
  status: DeliveryStatus;
  project_id: string;
  endpoint_id: string;
  /** The endpoint's owner; null for an inbound endpoint, which has none. */
  owner_id: string | null;
  /** The event it was fanned out for; null when sent directly, and for an inbound message. */
  event_id: string | null;
  event_type: string | null;
  attempt_count: number;
  last_error: string | null;
  /** The message was deleted, or its endpoint is gone: an operator's act ended it, not its receiver. */
  ended_by_delete: boolean;
}

/**
 * Applies attempt outcomes to their messages. A deleted message, or one whose endpoint was deleted
 * meanwhile, gets no further attempt: a retry it would have had becomes failed_permanent. Returns each
 * message as it became, by id.
 */
export async function applyOutcomes(sql: Sql, kind: DeliveryKind, outcomes: readonly MessageOutcome[]): Promise<Map<string, AppliedOutcome>> {
  if (outcomes.length === 0) return new Map();
  const created = kind === 'outbound' ? sql.fragment`m.created_at` : sql.fragment`m.received_at`;
  // An endpoint deleted while the attempt was in flight: no retry (its waiting jobs ended at the delete).
  const endpointTable = kind === 'outbound' ? sql.fragment`endpoints` : sql.fragment`inbound_endpoints`;
  const endpointRef = kind === 'outbound' ? sql.fragment`m.endpoint_id` : sql.fragment`m.inbound_endpoint_id`;
  const endpointGone = kind === 'outbound' ? ENDPOINT_DELETED_ERROR : INBOUND_ENDPOINT_DELETED_ERROR;
  const processing = kind === 'outbound' ? sql.fragment`processing_ms = o.processing_ms,` : sql.fragment``;
  const ownerAndEvent = kind === 'outbound' ? sql.fragment`e.owner_id, m.event_id` : sql.fragment`NULL::text AS owner_id, NULL::uuid AS event_id`;
  const ms = (later: ReturnType<Sql['fragment']>, earlier: ReturnType<Sql['fragment']>) =>
    sql.fragment`greatest(0, round(extract(epoch FROM (${later} - ${earlier})) * 1000))::int`;
  const updated = await sql<AppliedOutcome>`
    WITH v (id, status, attempt_number, started_at, finished_at, response_status, latency_ms, processing_ms, error, next_attempt_at) AS (
      SELECT * FROM unnest(${outcomes.map((o) => o.messageId)}::uuid[], ${outcomes.map((o) => o.status)}::text[], ${outcomes.map((o) => o.attemptNumber)}::int[],
        ${outcomes.map((o) => o.startedAt.toISOString())}::timestamptz[], ${outcomes.map((o) => o.finishedAt.toISOString())}::timestamptz[],
        ${outcomes.map((o) => o.responseStatus)}::int[], ${outcomes.map((o) => o.latencyMs)}::int[], ${outcomes.map((o) => o.processingMs)}::int[],
        ${outcomes.map((o) => o.error)}::text[], ${outcomes.map((o) => o.nextAttemptAt?.toISOString() ?? null)}::timestamptz[])
    ), o AS (
      SELECT v.id, v.attempt_number, v.started_at, v.finished_at, v.response_status, v.latency_ms, v.processing_ms, v.next_attempt_at,
             e.id::text AS endpoint_id, ${ownerAndEvent}, (m.deleted_at IS NOT NULL OR NOT ${liveEndpoint('e')}) AS ended_by_delete,
             CASE WHEN v.status IN ('pending_retry', 'queued') AND (m.deleted_at IS NOT NULL OR NOT ${liveEndpoint('e')}) THEN 'failed_permanent'
                  ELSE v.status END AS final,
             CASE WHEN v.status IN ('pending_retry', 'queued') AND m.deleted_at IS NULL AND NOT ${liveEndpoint('e')}
                  THEN concat_ws('; ', v.error, ${endpointGone}::text) ELSE v.error END AS error
      FROM v JOIN ${messageTable(sql, kind)} m ON m.id = v.id
      JOIN ${endpointTable} e ON e.id = ${endpointRef}
    )
    UPDATE ${messageTable(sql, kind)} m SET
      status = o.final,
      attempt_count = greatest(m.attempt_count, o.attempt_number),
      response_status = o.response_status,
      response_latency_ms = o.latency_ms,
      ${processing}
      last_error = o.error,
      first_attempt_at = coalesce(m.first_attempt_at, o.started_at),
      queue_wait_ms = coalesce(m.queue_wait_ms, ${ms(sql.fragment`o.started_at`, created)}),
      next_attempt_at = CASE WHEN o.final = 'pending_retry' THEN o.next_attempt_at END,
      delivered_at = CASE WHEN o.final = 'succeeded' THEN coalesce(m.delivered_at, o.finished_at) ELSE m.delivered_at END,
      total_delivery_ms = CASE WHEN o.final = 'succeeded' THEN coalesce(m.total_delivery_ms, ${ms(sql.fragment`o.finished_at`, created)})
                               ELSE m.total_delivery_ms END,
      failed_at = CASE WHEN o.final = 'failed_permanent' THEN o.finished_at END,
      updated_at = now()
    FROM o WHERE m.id = o.id
    RETURNING m.id, m.status, m.project_id, o.endpoint_id, o.owner_id, o.event_id, m.event_type, m.attempt_count, m.last_error, o.ended_by_delete`;
  return new Map(updated.map((r) => [r.id, r]));
}

/** Schedules the next attempt of held jobs: due at `runAt`, lease ended. */
export async function rescheduleJobs(
  sql: Sql,
  jobs: readonly { messageId: string; runAt: Date; attemptBase: number | null }[],
): Promise<void> {
  if (jobs.length === 0) return;
  await sql`
    UPDATE delivery_jobs j SET run_at = v.run_at, attempt_base = coalesce(v.attempt_base, j.attempt_base), rerun = false,
      locked_by = NULL, locked_until = NULL, lease_id = NULL
    FROM unnest(${jobs.map((j) => j.messageId)}::uuid[], ${jobs.map((j) => j.runAt.toISOString())}::timestamptz[], ${jobs.map((j) => j.attemptBase)}::int[])
      AS v (message_id, run_at, attempt_base)
    WHERE j.message_id = v.message_id`;
}

export async function deleteHeldJobs(sql: Sql, messageIds: readonly string[]): Promise<void> {
  if (messageIds.length === 0) return;
  await sql`DELETE FROM delivery_jobs WHERE message_id = ANY(${[...messageIds]}::uuid[])`;
}

// ---------- maintenance ----------

/** Returns jobs whose lease ran out (their worker died or stalled) to the queue, due now. */
export async function reapExpiredLeases(sql: Sql, limit = 1000): Promise<number> {
  const rows = await sql<{ message_id: string }>`
    UPDATE delivery_jobs SET locked_by = NULL, locked_until = NULL, lease_id = NULL, run_at = now()
    WHERE message_id IN (
      SELECT message_id FROM delivery_jobs WHERE locked_until < now()
      ORDER BY locked_until LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING message_id`;
  return rows.length;
}

/** Milliseconds until the next waiting job is due (≤ 0: due now), or null when none waits. */
export async function msUntilNextDue(sql: Sql): Promise<number | null> {
  const [row] = await sql<{ ms: number | null }>`
    SELECT (extract(epoch FROM (min(run_at) - now())) * 1000)::float8 AS ms
    FROM delivery_jobs WHERE locked_until IS NULL AND run_at < 'infinity'`;
  return row?.ms ?? null;
}

/**
 * For /metrics: deliveries due now that no worker holds, and how long the longest-waiting one has
 * been due (0 when none). One range scan of the `delivery_jobs_due` partial index.
 */
export async function deliveryQueueStats(sql: Sql): Promise<{ depth: number; oldestAgeSeconds: number }> {
  const [row] = await sql<{ depth: number; oldest_age_seconds: number | null }>`
    SELECT count(*)::int AS depth, extract(epoch FROM (now() - min(run_at)))::float8 AS oldest_age_seconds
    FROM delivery_jobs WHERE locked_until IS NULL AND run_at <= now()`;
  return { depth: row?.depth ?? 0, oldestAgeSeconds: Math.max(0, row?.oldest_age_seconds ?? 0) };
}
