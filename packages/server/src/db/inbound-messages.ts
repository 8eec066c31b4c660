import { uuidv7AtTime } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
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
  event_type: string | null;
  verified: string[];
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
  /** The `traceparent` of the span of the request that brought it (docs/operating.md, Tracing). */
  trace_context: string | null;
  /** An edited replay's copy: the message it copies (null for a webhook that arrived). */
  replay_of: string | null;
  /** An edited replay's copy: whether the server signed it; null exactly when `replay_of` is. */
  replay_signed: boolean | null;
}

/** Every column of a message row as `InboundMessageRow` names them (the answers' record, inbound-results.ts, returns them too). */
export const INBOUND_MESSAGE_COLUMNS = (sql: Sql) => sql.fragment`
  m.id, m.project_id, m.inbound_endpoint_id, m.status, m.attempt_count, m.replay_count, m.method, m.path, m.query,
  m.content_type, m.size_bytes, m.payload_sha256, m.raw_headers, m.payload_key, m.idempotency_key, m.event_type, m.verified, m.response_status,
  m.response_latency_ms, m.last_error, m.first_attempt_at, m.next_attempt_at, m.queue_wait_ms, m.total_delivery_ms,
  m.received_at, m.updated_at, m.delivered_at, m.failed_at, m.deleted_at, m.deleted_by_api_key_id, m.deleted_by_user_id, m.trace_context,
  m.replay_of, m.replay_signed`;

/** A message of the project, deleted ones included (they answer their metadata). */
export async function findInboundMessage(sql: Sql, projectId: string, id: string): Promise<InboundMessageRow | undefined> {
  const [row] = await sql<InboundMessageRow>`
    SELECT ${INBOUND_MESSAGE_COLUMNS(sql)} FROM inbound_messages m WHERE m.id = ${id} AND m.project_id = ${projectId}`;
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
    SELECT ${INBOUND_MESSAGE_COLUMNS(sql)} FROM inbound_messages m
    WHERE m.inbound_endpoint_id = ${endpointId} ${after} AND m.deleted_at IS NULL
    ORDER BY m.id
    LIMIT ${limit}`;
}

/** What the CLI receives of a message (stream frames, listen pages): no delivery state. */
export type ListenMessageRow = Pick<
  InboundMessageRow,
  | 'id'
  | 'method'
  | 'path'
  | 'query'
  | 'content_type'
  | 'size_bytes'
  | 'payload_sha256'
  | 'raw_headers'
  | 'payload_key'
  | 'received_at'
  | 'event_type'
  | 'trace_context'
  | 'verified'
  | 'replay_of'
  | 'replay_signed'
>;

/** A listen row with its payload bytes: null when it has no key, or no payload under its key. */
export interface ListenMessageWithPayloadRow extends ListenMessageRow {
  payload: Uint8Array | null;
}

/**
 * `listInboundMessagesAfter` with the payloads of the database payload store joined in: a stream
 * wake-up or a listen page is one statement instead of two. Bodies above `maxInlineBytes` are not
 * read (they travel by reference) and count as none in `maxBodyBytes`.
 */
export async function listInboundMessagesWithPayloadAfter(
  sql: Sql,
  endpointId: string,
  afterId: string | null,
  limit: number,
  maxBodyBytes: number,
  maxInlineBytes: number,
): Promise<{ rows: ListenMessageWithPayloadRow[]; scanned: number }> {
  const after = afterId === null ? sql.fragment`` : sql.fragment`AND m.id > ${afterId}::uuid`;
  // The first `limit` messages, then those whose preceding bodies stay under `maxBodyBytes` (the
  // first always): only their payloads are read. `scanned` tells a page cut by bytes from the end.
  const rows = await sql<ListenMessageWithPayloadRow & { scanned: number }>`
    SELECT m.id, m.method, m.path, m.query, m.content_type, m.size_bytes, m.payload_sha256, m.raw_headers, m.payload_key,
           m.received_at, m.event_type, m.trace_context, m.verified, m.replay_of, m.replay_signed, p.data AS payload, m.scanned
    FROM (
      SELECT h.*, sum(h.inline_bytes) OVER (ORDER BY h.id) - h.inline_bytes AS bytes_before, count(*) OVER ()::int AS scanned
      FROM (
        SELECT m.id, m.method, m.path, m.query, m.content_type, m.size_bytes, m.payload_sha256, m.raw_headers, m.payload_key,
               m.received_at, m.event_type, m.trace_context, m.verified, m.replay_of, m.replay_signed,
               CASE WHEN m.size_bytes > ${maxInlineBytes} THEN 0 ELSE m.size_bytes END AS inline_bytes
        FROM inbound_messages m
        WHERE m.inbound_endpoint_id = ${endpointId} ${after} AND m.deleted_at IS NULL
        ORDER BY m.id
        LIMIT ${limit}
      ) h
    ) m LEFT JOIN payloads p ON p.key = m.payload_key AND m.size_bytes <= ${maxInlineBytes}
    WHERE m.bytes_before < ${maxBodyBytes}
    ORDER BY m.id`;
  return { rows, scanned: rows[0]?.scanned ?? 0 };
}

/** What the listen filters judge a message by. */
export type ListenHeadRow = Pick<InboundMessageRow, 'id' | 'path' | 'event_type' | 'size_bytes'>;

/** The next live messages after `afterId`, only what the filters need, on the (inbound_endpoint_id, id) index. */
export async function listInboundMessageHeadsAfter(sql: Sql, endpointId: string, afterId: string | null, limit: number): Promise<ListenHeadRow[]> {
  const after = afterId === null ? sql.fragment`` : sql.fragment`AND m.id > ${afterId}::uuid`;
  return sql<ListenHeadRow>`
    SELECT m.id, m.path, m.event_type, m.size_bytes FROM inbound_messages m
    WHERE m.inbound_endpoint_id = ${endpointId} ${after} AND m.deleted_at IS NULL
    ORDER BY m.id
    LIMIT ${limit}`;
}

/**
 * Live messages of the endpoint by id, in id order, with the database store's payloads of at most
 * `maxInlineBytes` (null: none).
 */
export async function listInboundMessagesByIds(
  sql: Sql,
  endpointId: string,
  ids: readonly string[],
  maxInlineBytes: number | null,
): Promise<ListenMessageWithPayloadRow[]> {
  if (ids.length === 0) return [];
  const payload =
    maxInlineBytes === null
      ? sql.fragment`NULL::bytea`
      : sql.fragment`CASE WHEN m.size_bytes <= ${maxInlineBytes} THEN (SELECT p.data FROM payloads p WHERE p.key = m.payload_key) END`;
  return sql<ListenMessageWithPayloadRow>`
    SELECT m.id, m.method, m.path, m.query, m.content_type, m.size_bytes, m.payload_sha256, m.raw_headers, m.payload_key,
           m.received_at, m.event_type, m.trace_context, m.verified, m.replay_of, m.replay_signed, ${payload} AS payload
    FROM inbound_messages m
    WHERE m.inbound_endpoint_id = ${endpointId} AND m.id = ANY (${ids as string[]}::uuid[]) AND m.deleted_at IS NULL
    ORDER BY m.id`;
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
    SELECT ${INBOUND_MESSAGE_COLUMNS(sql)}, CASE WHEN e.mode = 'forward' THEN e.url ELSE '' END AS endpoint_url
    FROM inbound_messages m JOIN inbound_endpoints e ON e.id = m.inbound_endpoint_id
    ${newestFirstById(sql, sql.fragment`m.id`, where, page)}`;
}

/** A row of the endpoint message list (GET /v1/inbound-endpoints/{id}/messages). */
export type EndpointMessageRow = Pick<
  InboundMessageRow,
  | 'id'
  | 'inbound_endpoint_id'
  | 'status'
  | 'method'
  | 'path'
  | 'query'
  | 'content_type'
  | 'size_bytes'
  | 'payload_sha256'
  | 'event_type'
  | 'verified'
  | 'replay_count'
  | 'received_at'
  | 'response_status'
  | 'response_latency_ms'
  | 'raw_headers'
  | 'replay_of'
>;

export interface EndpointMessageFilters {
  /** Exact, or a glob when it holds `*` (any run of characters, case-sensitive). */
  eventType?: string;
  /** The class of the latest answer: the message's response_status (the latest report's, or the latest delivery's). */
  answer?: '2xx' | '4xx' | '5xx' | 'none';
  receivedAfter?: string;
  receivedBefore?: string;
}

export const ENDPOINT_MESSAGE_COLUMNS = (sql: Sql) => sql.fragment`
  m.id, m.inbound_endpoint_id, m.status, m.method, m.path, m.query, m.content_type, m.size_bytes, m.payload_sha256,
  m.event_type, m.verified, m.replay_count, m.received_at, m.response_status, m.response_latency_ms, m.raw_headers, m.replay_of`;

const ID_BOUND_MARGIN_MS = 60_000;

const ANSWER_CONDITIONS = {
  '2xx': (sql: Sql) => sql.fragment`m.response_status BETWEEN 200 AND 299`,
  '4xx': (sql: Sql) => sql.fragment`m.response_status BETWEEN 400 AND 499`,
  '5xx': (sql: Sql) => sql.fragment`m.response_status BETWEEN 500 AND 599`,
  none: (sql: Sql) => sql.fragment`m.response_status IS NULL`,
} as const;

/**
 * The conditions of the endpoint message list: the endpoint's live messages that pass `filters`,
 * the window's start also as a bound of the id (which ends a backward scan there).
 */
export function endpointMessageConditions(sql: Sql, endpointId: string, filters: EndpointMessageFilters): SqlFragment[] {
  const where = [sql.fragment`m.inbound_endpoint_id = ${endpointId}::uuid`, sql.fragment`m.deleted_at IS NULL`];
  if (filters.eventType !== undefined) {
    const glob = filters.eventType;
    // LIKE's own wildcards and its escape character match themselves, as every other character of a glob.
    where.push(glob.includes('*') ? sql.fragment`m.event_type LIKE ${glob.replace(/[\\%_]/g, '\\$&').replaceAll('*', '%')}` : sql.fragment`m.event_type = ${glob}`);
  }
  if (filters.answer !== undefined) where.push(ANSWER_CONDITIONS[filters.answer](sql));
  where.push(...timeWindow(sql, sql.fragment`m.received_at`, { from: filters.receivedAfter, to: filters.receivedBefore }));
  if (filters.receivedAfter !== undefined) {
    // A message's id is taken after it was received, on the same clock, so its time is never before
    // received_at: the id bound ends the backward scan at the window's start (a minute of margin for
    // a clock stepped back meanwhile).
    const from = Date.parse(filters.receivedAfter) - ID_BOUND_MARGIN_MS;
    if (from > 0) where.push(sql.fragment`m.id >= ${uuidv7AtTime(from)}::uuid`);
  }
  return where;
}

/**
 * An endpoint's live messages, newest first, keyset on the id: a backward range scan of the
 * (inbound_endpoint_id, id) index that stops after the page, with the filters checked on the rows
 * it passes.
 */
export async function listEndpointMessages(
  sql: Sql,
  endpointId: string,
  filters: EndpointMessageFilters,
  page: { limit: number; beforeId?: string },
): Promise<EndpointMessageRow[]> {
  const where = endpointMessageConditions(sql, endpointId, filters);
  return sql<EndpointMessageRow>`
    SELECT ${ENDPOINT_MESSAGE_COLUMNS(sql)}
    FROM inbound_messages m
    ${newestFirstById(sql, sql.fragment`m.id`, where, page)}`;
}

/** An endpoint's live messages after `afterId` (all when null), oldest first, as the message list shows them. */
export async function listEndpointMessagesAfter(sql: Sql, endpointId: string, afterId: string | null, limit: number): Promise<EndpointMessageRow[]> {
  const after = afterId === null ? sql.fragment`` : sql.fragment`AND m.id > ${afterId}::uuid`;
  return sql<EndpointMessageRow>`
    SELECT ${ENDPOINT_MESSAGE_COLUMNS(sql)}
    FROM inbound_messages m
    WHERE m.inbound_endpoint_id = ${endpointId}::uuid ${after} AND m.deleted_at IS NULL
    ORDER BY m.id
    LIMIT ${limit}`;
}

export interface InboundAnswerRow {
  message_id: string;
  listener: string;
  status: number | null;
  latency_ms: number;
  error: string | null;
  response_body_truncated: boolean;
  resigned: boolean;
  answered_at: Date;
}

export interface InboundAnswerContentRow extends InboundAnswerRow {
  response_headers: [string, string][];
  response_body: Uint8Array | null;
}

/** The answers to these messages, oldest listener first per message; with headers and body when `withContent`. */
export async function listInboundAnswers(sql: Sql, messageIds: readonly string[], withContent: true): Promise<InboundAnswerContentRow[]>;
export async function listInboundAnswers(sql: Sql, messageIds: readonly string[], withContent: false): Promise<InboundAnswerRow[]>;
export async function listInboundAnswers(sql: Sql, messageIds: readonly string[], withContent: boolean): Promise<InboundAnswerRow[]> {
  if (messageIds.length === 0) return [];
  const content = withContent ? sql.fragment`, a.response_headers, a.response_body` : sql.fragment``;
  return sql<InboundAnswerRow>`
    SELECT a.message_id, a.listener, a.status, a.latency_ms, a.error, a.response_body_truncated, a.resigned, a.answered_at ${content}
    FROM inbound_message_answers a
    WHERE a.message_id = ANY (${messageIds as string[]}::uuid[])
    ORDER BY a.message_id, a.first_answered_at, a.listener`;
}

/** Queues live messages again and counts the replay; the deleted and unknown ones are left out. */
export async function markInboundReplayed(sql: Sql, projectId: string, ids: readonly string[]): Promise<InboundMessageRow[]> {
  if (ids.length === 0) return [];
  return sql<InboundMessageRow>`
    UPDATE inbound_messages m SET status = 'queued', replay_count = replay_count + 1, next_attempt_at = NULL, updated_at = now()
    WHERE m.id = ANY(${[...ids]}::uuid[]) AND m.project_id = ${projectId}::uuid AND m.deleted_at IS NULL
    RETURNING ${INBOUND_MESSAGE_COLUMNS(sql)}`;
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

/** The payload keys of swept messages cleared, and what the app answered to them with them. */
export async function clearInboundPayloadKeys(sql: Sql, ids: readonly string[]): Promise<void> {
  await clearPayloadKeys(sql, 'inbound_messages', ids);
  if (ids.length > 0) {
    await sql`
      UPDATE inbound_message_answers SET response_headers = '[]'::jsonb, response_body = NULL
      WHERE message_id = ANY (${[...ids]}::uuid[]) AND (response_body IS NOT NULL OR response_headers <> '[]'::jsonb)`;
  }
}

/** Messages of an endpoint that are still live, in the order of `ids` (a replay pushes them to the streams). */
export async function findLiveInboundMessages(sql: Sql, endpointId: string, ids: readonly string[]): Promise<InboundMessageRow[]> {
  if (ids.length === 0) return [];
  return sql<InboundMessageRow>`
    SELECT ${INBOUND_MESSAGE_COLUMNS(sql)} FROM unnest(${[...ids]}::uuid[]) WITH ORDINALITY AS wanted (id, position)
    JOIN inbound_messages m ON m.id = wanted.id
    WHERE m.inbound_endpoint_id = ${endpointId}::uuid AND m.deleted_at IS NULL
    ORDER BY wanted.position`;
}
