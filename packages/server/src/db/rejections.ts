import type { RejectionEndpointKind, RejectionReason } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
import { newestFirstById, timeWindow } from './keyset.js';

/** A refused request as the writer stores it. */
export interface NewRejection {
  id: string;
  projectId: string;
  endpointKind: RejectionEndpointKind;
  endpointId: string;
  receivedAt: Date;
  reason: RejectionReason;
  detail: string;
  status: number;
  method: string;
  path: string;
  query: string;
  rawHeaders: [string, string][];
  sizeBytes: number;
  bodySha256: string | null;
  bodyPrefix: Buffer;
  bodyTruncated: boolean;
  sourceAddress: string;
}

export interface RejectionRow {
  id: string;
  endpoint_kind: RejectionEndpointKind;
  endpoint_id: string;
  received_at: Date;
  reason: RejectionReason;
  detail: string;
  status: number;
  method: string;
  path: string;
  query: string;
  raw_headers: [string, string][];
  size_bytes: number;
  body_sha256: string | null;
  body_truncated: boolean;
  source_address: string;
}

export interface RejectionDetailRow extends RejectionRow {
  body_prefix: Uint8Array;
}

// size_bytes is bigint (a refused Content-Length may be anything); float8 reads as a JS number on both drivers.
const COLUMNS = (sql: Sql): SqlFragment => sql.fragment`
  r.id, r.endpoint_kind, r.endpoint_id, r.received_at, r.reason, r.detail, r.status, r.method, r.path, r.query,
  r.raw_headers, r.size_bytes::float8 AS size_bytes, r.body_sha256, r.body_truncated, r.source_address`;

/** Stores refused requests (one writer batch). */
export async function insertRejections(sql: Sql, rejections: readonly NewRejection[]): Promise<void> {
  if (rejections.length === 0) return;
  const rows = rejections.map((r) => {
    const inbound = r.endpointKind === 'inbound' ? r.endpointId : null;
    const pull = r.endpointKind === 'pull' ? r.endpointId : null;
    return sql.fragment`(${r.id}::uuid, ${r.projectId}::uuid, ${r.endpointKind}, ${inbound}::uuid, ${pull}::uuid,
      ${r.receivedAt.toISOString()}::timestamptz, ${r.reason}, ${r.detail}, ${r.status}::int, ${r.method}, ${r.path}, ${r.query},
      ${r.rawHeaders}::jsonb, ${r.sizeBytes}::bigint, ${r.bodySha256}::text, ${r.bodyPrefix}::bytea,
      ${r.bodyTruncated}::boolean, ${r.sourceAddress})`;
  });
  // An endpoint deleted meanwhile (its row gone, or soft-deleted and its refusals dropped) keeps none.
  await sql`
    INSERT INTO ingest_rejections (id, project_id, endpoint_kind, inbound_endpoint_id, pull_endpoint_id, received_at, reason,
      detail, status, method, path, query, raw_headers, size_bytes, body_sha256, body_prefix, body_truncated, source_address)
    SELECT v.* FROM (VALUES ${sql.join(rows, ', ')}) AS v (id, project_id, endpoint_kind, inbound_endpoint_id, pull_endpoint_id,
      received_at, reason, detail, status, method, path, query, raw_headers, size_bytes, body_sha256, body_prefix, body_truncated,
      source_address)
    WHERE EXISTS (SELECT 1 FROM inbound_endpoints e WHERE e.id = v.inbound_endpoint_id AND e.deleted_at IS NULL)
       OR EXISTS (SELECT 1 FROM pull_endpoints p WHERE p.id = v.pull_endpoint_id AND p.deleted_at IS NULL)`;
}

/** Removes each endpoint's refused requests beyond its `keep` newest. */
export async function pruneRejections(sql: Sql, endpointIds: readonly string[], keep: number): Promise<void> {
  if (endpointIds.length === 0) return;
  await sql`
    DELETE FROM ingest_rejections r
    USING (
      SELECT e.id AS endpoint_id,
             (SELECT x.id FROM ingest_rejections x WHERE x.endpoint_id = e.id ORDER BY x.id DESC OFFSET ${keep - 1}::int LIMIT 1) AS oldest_kept
      FROM unnest(${[...endpointIds]}::uuid[]) AS e (id)
    ) k
    WHERE r.endpoint_id = k.endpoint_id AND r.id < k.oldest_kept`;
}

/** Per endpoint: refusals of verification to add to `rejected_count`, and refusals counted but not stored. */
export interface RejectionTally {
  endpointKind: RejectionEndpointKind;
  endpointId: string;
  refusedByVerification: number;
  dropped: number;
}

/** Adds each endpoint's counts to its row (`kind`: which table; names written here, never taken from input). */
export async function addRejectionCounts(sql: Sql, kind: RejectionEndpointKind, tallies: readonly RejectionTally[]): Promise<void> {
  if (tallies.length === 0) return;
  const table = kind === 'inbound' ? sql.fragment`inbound_endpoints` : sql.fragment`pull_endpoints`;
  await sql`
    UPDATE ${table} e SET rejected_count = e.rejected_count + t.refused, rejections_dropped_count = e.rejections_dropped_count + t.dropped
    FROM unnest(${tallies.map((t) => t.endpointId)}::uuid[], ${tallies.map((t) => t.refusedByVerification)}::bigint[],
                ${tallies.map((t) => t.dropped)}::bigint[]) AS t (id, refused, dropped)
    WHERE e.id = t.id`;
}

export interface RejectionFilters {
  reason?: RejectionReason | undefined;
  /** RFC 3339, inclusive. */
  receivedAfter?: string | undefined;
  /** RFC 3339, exclusive. */
  receivedBefore?: string | undefined;
}

/** One page of an endpoint's refused requests, newest first. */
export async function listRejections(
  sql: Sql,
  endpointKind: RejectionEndpointKind,
  endpointId: string,
  filters: RejectionFilters,
  page: { limit: number; beforeId?: string },
): Promise<RejectionRow[]> {
  const where = [sql.fragment`r.endpoint_id = ${endpointId}::uuid`, sql.fragment`r.endpoint_kind = ${endpointKind}`];
  if (filters.reason !== undefined) where.push(sql.fragment`r.reason = ${filters.reason}`);
  where.push(...timeWindow(sql, sql.fragment`r.received_at`, { from: filters.receivedAfter, to: filters.receivedBefore }));
  return sql<RejectionRow>`SELECT ${COLUMNS(sql)} FROM ingest_rejections r ${newestFirstById(sql, sql.fragment`r.id`, where, page)}`;
}

/** One refused request of the endpoint, with the start of its body. */
export async function findRejection(sql: Sql, endpointKind: RejectionEndpointKind, endpointId: string, id: string): Promise<RejectionDetailRow | undefined> {
  const [row] = await sql<RejectionDetailRow>`
    SELECT ${COLUMNS(sql)}, r.body_prefix FROM ingest_rejections r
    WHERE r.id = ${id}::uuid AND r.endpoint_id = ${endpointId}::uuid AND r.endpoint_kind = ${endpointKind}`;
  return row;
}

/** The refused requests of `ids`, as stored (the stream's frames after a NOTIFY from another process). */
export async function findRejectionsByIds(sql: Sql, ids: readonly string[]): Promise<RejectionRow[]> {
  if (ids.length === 0) return [];
  return sql<RejectionRow>`SELECT ${COLUMNS(sql)} FROM ingest_rejections r WHERE r.id = ANY(${[...ids]}::uuid[]) ORDER BY r.id`;
}
