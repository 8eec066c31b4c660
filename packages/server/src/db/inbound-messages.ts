import { newUuidv7 as newAttemptId } from '@hookrelay/shared';
import type { Sql } from './database.js';
import { newestFirstById, timeWindow } from './keyset.js';
import { claimDeletedPayloads, clearPayloadKeys, softDeleteMessages, type SoftDeleteResult } from './soft-delete.js';

export interface InboundMessageRow {
  id: string;
  project_id: string;
  inbound_endpoint_id: string;
  status: 'queued' | 'delivering' | 'succeeded' | 'pending_retry' | 'failed_permanent';
  attempt_count: number;
  replay_count: number;
  method: string;
  path: string;
  query: string;
  content_type: string;
  size_bytes: number;
  payload_sha256: string;
  raw_headers: [string, string][];
  payload_key: string | null;
  idempotency_key: string | null;
  response_status: number | null;
  response_latency_ms: number | null;
  last_error: string | null;
  first_attempt_at: Date | null;
  next_attempt_at: Date | null;
  queue_wait_ms: number | null;
  total_delivery_ms: number | null;
  received_at: Date;
  updated_at: Date;
  delivered_at: Date | null;
  failed_at: Date | null;
  deleted_at: Date | null;
  deleted_by_api_key_id: string | null;
  deleted_by_user_id: string | null;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  m.id, m.project_id, m.inbound_endpoint_id, m.status, m.attempt_count, m.replay_count, m.method, m.path, m.query,
  m.content_type, m.size_bytes, m.payload_sha256, m.raw_headers, m.payload_key, m.idempotency_key, m.response_status,
  m.response_latency_ms, m.last_error, m.first_attempt_at, m.next_attempt_at, m.queue_wait_ms, m.total_delivery_ms,
  m.received_at, m.updated_at, m.delivered_at, m.failed_at, m.deleted_at, m.deleted_by_api_key_id, m.deleted_by_user_id`;

/** A message of the project, deleted ones included (they answer their metadata). */
export async function findInboundMessage(sql: Sql, projectId: string, id: string): Promise<InboundMessageRow | undefined> {
  const [row] = await sql<InboundMessageRow>`
    SELECT ${COLUMNS(sql)} FROM inbound_messages m WHERE m.id = ${id} AND m.project_id = ${projectId}`;
  return row;
}

/**
 * The listen page: live messages of one endpoint after `afterId`, in id order, on the
 * (inbound_endpoint_id, id) index, so it stays a short range scan with millions of rows.
 */
export async function listInboundMessagesAfter(
  sql: Sql,
  endpointId: string,
  afterId: string | null,
  limit: number,
): Promise<InboundMessageRow[]> {
  const after = afterId === null ? sql.fragment`` : sql.fragment`AND m.id > ${afterId}::uuid`;
  return sql<InboundMessageRow>`
    SELECT ${COLUMNS(sql)} FROM inbound_messages m
    WHERE m.inbound_endpoint_id = ${endpointId} ${after} AND m.deleted_at IS NULL
    ORDER BY m.id
    LIMIT ${limit}`;
}

/** What the CLI receives of a message (stream frames, listen pages): no delivery state. */
export type ListenMessageRow = Pick<
  InboundMessageRow,
  'id' | 'method' | 'path' | 'query' | 'content_type' | 'size_bytes' | 'payload_sha256' | 'raw_headers' | 'payload_key' | 'received_at'
>;

/** A listen row with its payload bytes: null when it has no key, or no payload under its key. */
export interface ListenMessageWithPayloadRow extends ListenMessageRow {
  payload: Uint8Array | null;
}

/**
 * `listInboundMessagesAfter` with the payloads of the database payload store joined in: a stream
 * wake-up or a listen page is one statement instead of two.
 */
export async function listInboundMessagesWithPayloadAfter(
  sql: Sql,
  endpointId: string,
  afterId: string | null,
  limit: number,
): Promise<ListenMessageWithPayloadRow[]> {
  const after = afterId === null ? sql.fragment`` : sql.fragment`AND m.id > ${afterId}::uuid`;
  return sql<ListenMessageWithPayloadRow>`
    SELECT m.id, m.method, m.path, m.query, m.content_type, m.size_bytes, m.payload_sha256, m.raw_headers, m.payload_key,
           m.received_at, p.data AS payload
    FROM inbound_messages m LEFT JOIN payloads p ON p.key = m.payload_key
    WHERE m.inbound_endpoint_id = ${endpointId} ${after} AND m.deleted_at IS NULL
    ORDER BY m.id
    LIMIT ${limit}`;
}

export interface InboundLogRow extends InboundMessageRow {
  endpoint_url: string;
}

export interface InboundLogFilters {
  status?: string;
  endpointId?: string;
  receivedAfter?: string;
  receivedBefore?: string;
}

/** Newest first by id (UUIDv7 is time-ordered); keyset on id. */
export async function listInboundLogs(
  sql: Sql,
  projectId: string,
  filters: InboundLogFilters,
  page: { limit: number; beforeId?: string },
): Promise<InboundLogRow[]> {
  const where = [sql.fragment`m.project_id = ${projectId}`];
  if (filters.status !== undefined) where.push(sql.fragment`m.status = ${filters.status}`);
  if (filters.endpointId !== undefined) where.push(sql.fragment`m.inbound_endpoint_id = ${filters.endpointId}::uuid`);
  where.push(...timeWindow(sql, sql.fragment`m.received_at`, { from: filters.receivedAfter, to: filters.receivedBefore }));
  return sql<InboundLogRow>`
    SELECT ${COLUMNS(sql)}, CASE WHEN e.mode = 'forward' THEN e.url ELSE '' END AS endpoint_url
    FROM inbound_messages m JOIN inbound_endpoints e ON e.id = m.inbound_endpoint_id
    ${newestFirstById(sql, sql.fragment`m.id`, where, page)}`;
}

/** Queues a live message again and counts the replay; undefined when not found or deleted. */
export async function replayInboundMessage(sql: Sql, projectId: string, id: string): Promise<InboundMessageRow | undefined> {
  const [row] = await sql<InboundMessageRow>`
    UPDATE inbound_messages m SET status = 'queued', replay_count = replay_count + 1, next_attempt_at = NULL, updated_at = now()
    WHERE m.id = ${id} AND m.project_id = ${projectId} AND m.deleted_at IS NULL
    RETURNING ${COLUMNS(sql)}`;
  return row;
}

/** Soft-deletes messages of the project by id (see softDeleteMessages). */
export async function softDeleteInboundMessages(
  sql: Sql,
  projectId: string,
  ids: readonly string[],
  principal: { apiKeyId: string },
): Promise<SoftDeleteResult[]> {
  return softDeleteMessages(sql, 'inbound_messages', projectId, ids, principal);
}

export async function claimDeletedInboundPayloads(sql: Sql, limit: number): Promise<{ id: string; payload_key: string }[]> {
  return claimDeletedPayloads(sql, 'inbound_messages', limit);
}

export async function clearInboundPayloadKeys(sql: Sql, ids: readonly string[]): Promise<void> {
  await clearPayloadKeys(sql, 'inbound_messages', ids);
}

export interface InboundResult {
  status: number | null;
  latencyMs: number;
  error: string | null;
}

/** One CLI report: the message it is for, and the project and endpoint it must belong to. */
export interface InboundResultReport {
  projectId: string;
  endpointId: string;
  messageId: string;
  result: InboundResult;
}

/**
 * CLI reports of the local app's answers (decisions.md §4), many in one statement and one commit:
 * each matched message takes one attempt row, and the report's outcome (2xx succeeded, anything
 * else failed_permanent). The answer is aligned with `reports`: the updated row, or undefined when
 * the message is not found, deleted, or not of that project and endpoint.
 *
 * Message ids must be distinct (one UPDATE changes a row once: two reports of one message go in
 * two calls, in report order). The rows are locked in id order first, so that batches of several
 * processes over the same messages cannot deadlock.
 */
export async function recordInboundResults(sql: Sql, reports: readonly InboundResultReport[]): Promise<(InboundMessageRow | undefined)[]> {
  if (reports.length === 0) return [];
  if (new Set(reports.map((r) => r.messageId)).size !== reports.length) throw new Error('recordInboundResults: one report per message id');
  const succeeded = reports.map(({ result }) => result.status !== null && result.status >= 200 && result.status < 300);
  const errors = reports.map(({ result }, i) =>
    succeeded[i] ? null : (result.error ?? (result.status === null ? 'no response' : `HTTP ${result.status}`)),
  );
  const rows = await sql<InboundMessageRow & { batch_index: number }>`
    WITH reports AS (
      SELECT * FROM unnest(
        ${reports.map((_, i) => i)}::int[], ${reports.map((r) => r.messageId)}::uuid[], ${reports.map((r) => r.projectId)}::uuid[],
        ${reports.map((r) => r.endpointId)}::uuid[], ${reports.map((r) => r.result.status)}::int[], ${reports.map((r) => r.result.latencyMs)}::int[],
        ${errors}::text[], ${reports.map(() => newAttemptId())}::uuid[]
      ) AS u(batch_index, message_id, project_id, endpoint_id, response_status, latency_ms, error, attempt_id)
    ), input AS (
      SELECT u.*, coalesce(u.response_status BETWEEN 200 AND 299, false) AS succeeded FROM reports u
    ), target AS (
      SELECT m.id FROM inbound_messages m JOIN input i ON i.message_id = m.id
      WHERE m.project_id = i.project_id AND m.inbound_endpoint_id = i.endpoint_id AND m.deleted_at IS NULL
      ORDER BY m.id
      FOR UPDATE OF m
    ), reported AS (
      UPDATE inbound_messages m SET
        status = CASE WHEN i.succeeded THEN 'succeeded' ELSE 'failed_permanent' END,
        attempt_count = m.attempt_count + 1,
        response_status = i.response_status,
        response_latency_ms = i.latency_ms,
        last_error = i.error,
        first_attempt_at = coalesce(m.first_attempt_at, now() - make_interval(secs => i.latency_ms / 1000.0)),
        queue_wait_ms = coalesce(m.queue_wait_ms,
          greatest(0, (extract(epoch FROM (now() - make_interval(secs => i.latency_ms / 1000.0) - m.received_at)) * 1000)::int)),
        delivered_at = CASE WHEN i.succeeded THEN coalesce(m.delivered_at, now()) ELSE m.delivered_at END,
        total_delivery_ms = CASE WHEN i.succeeded
          THEN coalesce(m.total_delivery_ms, greatest(0, (extract(epoch FROM (now() - m.received_at)) * 1000)::int))
          ELSE m.total_delivery_ms END,
        failed_at = CASE WHEN i.succeeded THEN NULL ELSE now() END,
        next_attempt_at = NULL,
        updated_at = now()
      FROM input i JOIN target t ON t.id = i.message_id
      WHERE m.id = i.message_id AND m.deleted_at IS NULL
      RETURNING i.batch_index, ${COLUMNS(sql)}
    ), attempt AS (
      INSERT INTO delivery_attempts (id, message_id, attempt_number, started_at, response_status, latency_ms, error)
      SELECT i.attempt_id, r.id, r.attempt_count, now() - make_interval(secs => r.response_latency_ms / 1000.0),
             r.response_status, r.response_latency_ms, r.last_error
      FROM reported r JOIN input i ON i.batch_index = r.batch_index
    )
    SELECT * FROM reported`;
  const byIndex: (InboundMessageRow | undefined)[] = new Array(reports.length).fill(undefined);
  for (const { batch_index, ...row } of rows) byIndex[batch_index] = row;
  return byIndex;
}

/** One message of an endpoint (replay pushes it to the streams). */
export async function findLiveInboundMessage(sql: Sql, endpointId: string, id: string): Promise<InboundMessageRow | undefined> {
  const [row] = await sql<InboundMessageRow>`
    SELECT ${COLUMNS(sql)} FROM inbound_messages m
    WHERE m.id = ${id}::uuid AND m.inbound_endpoint_id = ${endpointId}::uuid AND m.deleted_at IS NULL`;
  return row;
}
