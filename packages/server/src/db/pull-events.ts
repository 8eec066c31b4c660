import { uuidv7AtTime, type PullEventStatus } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
import { timeWindow, uuidv7Floor } from './keyset.js';
import { claimDeletedPayloads, clearPayloadKeys, liveEndpoint, type SoftDeleteResult } from './soft-delete.js';

/** A list row: metadata only. */
export interface PullEventRow {
  id: string;
  project_id: string;
  endpoint_id: string;
  status: PullEventStatus;
  event_type: string | null;
  method: string;
  query: string;
  content_type: string;
  size_bytes: number;
  payload_sha256: string;
  ingest_processing_ms: number | null;
  received_at: Date;
  fetched_at: Date | null;
  delivered_at: Date | null;
  deleted_at: Date | null;
  deleted_by_api_key_id: string | null;
  deleted_by_user_id: string | null;
}

/** A single event: the list row plus what the detail shows and the payload's storage key. */
export interface PullEventDetailRow extends PullEventRow {
  raw_headers: [string, string][];
  payload_key: string | null;
}

const LIST_COLUMNS = (sql: Sql) => sql.fragment`
  e.id, e.project_id, e.endpoint_id, e.status, e.event_type, e.method, e.query, e.content_type, e.size_bytes,
  e.payload_sha256, e.ingest_processing_ms, e.received_at, e.fetched_at, e.delivered_at, e.deleted_at,
  e.deleted_by_api_key_id, e.deleted_by_user_id`;

const DETAIL_COLUMNS = (sql: Sql) => sql.fragment`${LIST_COLUMNS(sql)}, e.raw_headers, e.payload_key`;

export interface NewPullEvent {
  /** A UUIDv7 whose millisecond is `receivedAt` (see migrations/004_pull.sql). */
  id: string;
  projectId: string;
  endpointId: string;
  eventType: string | null;
  method: string;
  query: string;
  contentType: string;
  sizeBytes: number;
  payloadSha256: string;
  rawHeaders: [string, string][];
  payloadKey: string;
  ingestProcessingMs: number;
  receivedAt: Date;
}

export async function insertPullEvents(sql: Sql, events: readonly NewPullEvent[]): Promise<void> {
  if (events.length === 0) return;
  const col = <T>(f: (e: NewPullEvent) => T) => events.map(f);
  await sql`
    INSERT INTO pull_events (id, project_id, endpoint_id, event_type, method, query, content_type, size_bytes,
      payload_sha256, raw_headers, payload_key, ingest_processing_ms, received_at)
    SELECT id, project_id, endpoint_id, event_type, method, query, content_type, size_bytes,
      payload_sha256, raw_headers::jsonb, payload_key, ingest_processing_ms, received_at
    FROM unnest(${col((e) => e.id)}::uuid[], ${col((e) => e.projectId)}::uuid[], ${col((e) => e.endpointId)}::uuid[],
      ${col((e) => e.eventType)}::text[], ${col((e) => e.method)}::text[], ${col((e) => e.query)}::text[], ${col((e) => e.contentType)}::text[],
      ${col((e) => e.sizeBytes)}::int[], ${col((e) => e.payloadSha256)}::text[], ${col((e) => JSON.stringify(e.rawHeaders))}::text[],
      ${col((e) => e.payloadKey)}::text[], ${col((e) => e.ingestProcessingMs)}::int[], ${col((e) => e.receivedAt.toISOString())}::timestamptz[])
      AS v (id, project_id, endpoint_id, event_type, method, query, content_type, size_bytes, payload_sha256, raw_headers,
        payload_key, ingest_processing_ms, received_at)`;
}

/** Filters shared by the events list and delete-all. */
export interface PullEventFilters {
  /** At least one status. */
  statuses: readonly PullEventStatus[];
  eventType?: string;
  /** RFC 3339, inclusive. */
  receivedAfter?: string;
  /** RFC 3339, exclusive. */
  receivedBefore?: string;
  /** Keyset position: only ids after this one. */
  afterId?: string;
}

const MAX_UUIDV7_MS = 0xffff_ffff_ffff;

/**
 * Extra id bounds implied by the time bounds (an event's id carries its received_at millisecond),
 * so the time filters narrow the index range instead of filtering rows one by one. They are never
 * tighter than the exact received_at conditions, which stay in the query.
 */
function idBoundsFor(sql: Sql, filters: PullEventFilters): SqlFragment[] {
  const bounds: SqlFragment[] = [];
  if (filters.receivedAfter !== undefined) {
    const ms = Math.floor(Date.parse(filters.receivedAfter));
    if (ms > MAX_UUIDV7_MS) bounds.push(sql.fragment`false`);
    else if (ms > 0) bounds.push(sql.fragment`e.id >= ${uuidv7AtTime(ms)}::uuid`);
  }
  if (filters.receivedBefore !== undefined) {
    // received_at < T implies the id's millisecond is below floor(T) + 1.
    const ms = Math.floor(Date.parse(filters.receivedBefore)) + 1;
    if (ms <= 0) bounds.push(sql.fragment`false`);
    else if (ms <= MAX_UUIDV7_MS) bounds.push(sql.fragment`e.id < ${uuidv7AtTime(ms)}::uuid`);
  }
  return bounds;
}

/** The conditions of one status's range (besides the endpoint), on the list indexes. */
function conditionsFor(sql: Sql, endpointId: string, status: PullEventStatus, filters: PullEventFilters): SqlFragment {
  const where = [sql.fragment`e.endpoint_id = ${endpointId}::uuid`, sql.fragment`e.status = ${status}::text`, sql.fragment`e.deleted_at IS NULL`];
  if (filters.eventType !== undefined) where.push(sql.fragment`e.event_type = ${filters.eventType}::text`);
  where.push(...timeWindow(sql, sql.fragment`e.received_at`, { from: filters.receivedAfter, to: filters.receivedBefore }));
  where.push(...idBoundsFor(sql, filters));
  if (filters.afterId !== undefined) where.push(sql.fragment`e.id > ${filters.afterId}::uuid`);
  return sql.join(where, ' AND ');
}

/**
 * One ordered range scan per status, merged: `status = ANY(...)` cannot walk an index in id order
 * on every PostgreSQL version, and a sort of every matching row is what a 1M-event endpoint cannot
 * afford. At most `limit` rows per status are read.
 */
function pagedSelect(sql: Sql, columns: SqlFragment, endpointId: string, filters: PullEventFilters, limit: number, guard?: SqlFragment): SqlFragment {
  const parts = filters.statuses.map(
    (status) => sql.fragment`(SELECT ${columns} FROM pull_events e WHERE ${conditionsFor(sql, endpointId, status, filters)} ORDER BY e.id LIMIT ${limit}::int)`,
  );
  return sql.fragment`SELECT * FROM (${sql.join(parts, ' UNION ALL ')}) AS page ${guard ?? sql.fragment``} ORDER BY page.id LIMIT ${limit}::int`;
}

/**
 * Live events of an endpoint matching the filters, oldest first (id order). With `projectId`, the
 * page is empty unless the endpoint is live in that project (checked once, before any range scan),
 * so a caller can skip a separate lookup whenever the page has rows.
 */
export async function listPullEvents(
  sql: Sql,
  endpointId: string,
  filters: PullEventFilters,
  limit: number,
  scope?: { projectId: string },
): Promise<PullEventRow[]> {
  const guard = scope
    ? sql.fragment`WHERE EXISTS (SELECT 1 FROM pull_endpoints p
        WHERE p.id = ${endpointId}::uuid AND p.project_id = ${scope.projectId}::uuid AND ${liveEndpoint('p')})`
    : undefined;
  return sql<PullEventRow>`${pagedSelect(sql, LIST_COLUMNS(sql), endpointId, filters, limit, guard)}`;
}

/** An event of the endpoint, deleted ones included (they answer their metadata). */
export async function findPullEvent(sql: Sql, endpointId: string, eventId: string): Promise<PullEventDetailRow | undefined> {
  const [row] = await sql<PullEventDetailRow>`
    SELECT ${DETAIL_COLUMNS(sql)} FROM pull_events e WHERE e.id = ${eventId}::uuid AND e.endpoint_id = ${endpointId}::uuid`;
  return row;
}

/**
 * The first fetch: `stored` → `fetched`, `fetched_at` set once. Undefined when the event is not
 * (or no longer) a live stored event; a later fetch never moves an event back.
 */
export async function markPullEventFetched(sql: Sql, endpointId: string, eventId: string, now: Date): Promise<PullEventDetailRow | undefined> {
  const [row] = await sql<PullEventDetailRow>`
    UPDATE pull_events e SET status = 'fetched', fetched_at = coalesce(e.fetched_at, ${now}::timestamptz)
    WHERE e.id = ${eventId}::uuid AND e.endpoint_id = ${endpointId}::uuid AND e.status = 'stored' AND e.deleted_at IS NULL
    RETURNING ${DETAIL_COLUMNS(sql)}`;
  return row;
}

export interface AckResult {
  id: string;
  delivered_at: Date;
  already_delivered: boolean;
}

/**
 * Moves live events of the endpoint to `delivered`; an event delivered before keeps its first
 * `delivered_at`. Ids not in the result were not found (or are deleted).
 */
export async function ackPullEvents(sql: Sql, endpointId: string, ids: readonly string[], now: Date): Promise<AckResult[]> {
  return sql<AckResult>`
    WITH target AS (
      SELECT e.id, e.status, e.delivered_at FROM pull_events e
      WHERE e.id = ANY(${[...ids]}::uuid[]) AND e.endpoint_id = ${endpointId}::uuid AND e.deleted_at IS NULL
      FOR UPDATE
    ), updated AS (
      UPDATE pull_events e SET status = 'delivered', delivered_at = ${now}::timestamptz
      FROM target WHERE e.id = target.id AND target.status <> 'delivered'
      RETURNING e.id, e.delivered_at
    )
    SELECT t.id, coalesce(u.delivered_at, t.delivered_at) AS delivered_at, (u.id IS NULL) AS already_delivered
    FROM target t LEFT JOIN updated u ON u.id = t.id`;
}

/**
 * Soft-deletes events of the endpoint (metadata stays, the payload becomes unreachable at once);
 * ids already deleted keep their first deletion. Ids not in the result were not found.
 */
export async function softDeletePullEvents(
  sql: Sql,
  endpointId: string,
  ids: readonly string[],
  principal: { apiKeyId: string },
): Promise<SoftDeleteResult[]> {
  return sql<SoftDeleteResult>`
    WITH target AS (
      SELECT e.id, e.deleted_at FROM pull_events e
      WHERE e.id = ANY(${[...ids]}::uuid[]) AND e.endpoint_id = ${endpointId}::uuid
      FOR UPDATE
    ), updated AS (
      UPDATE pull_events e SET deleted_at = now(), deleted_by_api_key_id = ${principal.apiKeyId}::uuid
      FROM target WHERE e.id = target.id AND target.deleted_at IS NULL
      RETURNING e.id, e.deleted_at
    )
    SELECT t.id, coalesce(u.deleted_at, t.deleted_at) AS deleted_at, (t.deleted_at IS NOT NULL) AS already_deleted
    FROM target t LEFT JOIN updated u ON u.id = t.id`;
}

/**
 * One chunk of delete-all: selects up to `limit` matching live events after the filters' keyset
 * position and soft-deletes them, re-checking status (an event acked meanwhile may no longer
 * match). Returns how many were selected (fewer than `limit`: nothing more matches), the last
 * selected id (where the next chunk starts) and the ids this chunk deleted.
 */
export async function softDeletePullEventChunk(
  sql: Sql,
  endpointId: string,
  filters: PullEventFilters,
  limit: number,
  principal: { apiKeyId: string },
): Promise<{ selected: number; lastId: string | null; deletedIds: string[] }> {
  const candidates = await sql<{ id: string }>`${pagedSelect(sql, sql.fragment`e.id`, endpointId, filters, limit)}`;
  if (candidates.length === 0) return { selected: 0, lastId: null, deletedIds: [] };
  const deleted = await sql<{ id: string }>`
    UPDATE pull_events e SET deleted_at = now(), deleted_by_api_key_id = ${principal.apiKeyId}::uuid
    WHERE e.id = ANY(${candidates.map((c) => c.id)}::uuid[]) AND e.deleted_at IS NULL
      AND e.status = ANY(${[...filters.statuses]}::text[])
    RETURNING e.id`;
  return {
    selected: candidates.length,
    lastId: candidates[candidates.length - 1]!.id,
    deletedIds: deleted.map((d) => d.id).sort(),
  };
}

export async function claimDeletedPullPayloads(sql: Sql, limit: number): Promise<{ id: string; payload_key: string }[]> {
  return claimDeletedPayloads(sql, 'pull_events', limit);
}

export async function clearPullPayloadKeys(sql: Sql, ids: readonly string[]): Promise<void> {
  await clearPayloadKeys(sql, 'pull_events', ids);
}

/**
 * Removes, rows and payload keys together, events past their endpoint's retention
 * (`received_at` older than `retention_days`) and every event of a deleted endpoint. Each
 * endpoint's oldest events are found on its (endpoint_id, id) range, so a run costs one short
 * index probe per endpoint. Returns the payload keys the caller must delete from the store.
 */
export async function deleteExpiredPullEvents(sql: Sql, now: Date, batchSize: number): Promise<{ count: number; payloadKeys: string[] }> {
  const cutoff = sql.fragment`(CASE WHEN p.deleted_at IS NOT NULL THEN ${now}::timestamptz
    ELSE ${now}::timestamptz - make_interval(days => p.retention_days) END)`;
  const rows = await sql<{ payload_key: string | null }>`
    WITH doomed AS (
      SELECT d.id FROM pull_endpoints p
      CROSS JOIN LATERAL (
        SELECT e.id FROM pull_events e
        WHERE e.endpoint_id = p.id AND e.id < ${uuidv7Floor(sql, cutoff)} AND e.received_at < ${cutoff}
        ORDER BY e.id
        LIMIT ${batchSize}::int
      ) d
      LIMIT ${batchSize}::int
    )
    DELETE FROM pull_events e USING doomed WHERE e.id = doomed.id
    RETURNING e.payload_key`;
  return { count: rows.length, payloadKeys: rows.map((r) => r.payload_key).filter((k): k is string => k !== null) };
}
