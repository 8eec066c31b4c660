import type { EventTypeSource } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
import { newestFirstBySeq } from './keyset.js';
import { liveEndpoint, sweepExpiredEphemeralEndpoints } from './soft-delete.js';

/** A pull endpoint as the API shows it; the secret token's hash never leaves this module's callers. */
export interface PullEndpointRow {
  id: string;
  seq: string;
  project_id: string;
  name: string;
  description: string;
  retention_days: number;
  event_type_source: EventTypeSource | null;
  event_type_path: string | null;
  max_body_bytes: number | null;
  paused: boolean;
  ephemeral: boolean;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  rejections_dropped_count: number;
}

export interface PullEventCounts {
  stored: number;
  fetched: number;
  delivered: number;
  deleted: number;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  p.id, p.seq::text AS seq, p.project_id, p.name, p.description, p.retention_days,
  p.event_type_source, p.event_type_path, p.max_body_bytes, p.paused, p.ephemeral, p.expires_at, p.created_at, p.updated_at,
  LEAST(p.rejections_dropped_count, 2147483647)::int AS rejections_dropped_count`;

export interface PullEndpointInsert {
  id: string;
  projectId: string;
  name: string;
  description: string;
  retentionDays: number;
  eventTypeSource: EventTypeSource | null;
  eventTypePath: string | null;
  maxBodyBytes: number | null;
  secretTokenHash: string;
  /** Set for an ephemeral endpoint only. */
  expiresAt: Date | null;
}

export async function insertPullEndpoint(sql: Sql, input: PullEndpointInsert): Promise<PullEndpointRow> {
  const [row] = await sql<PullEndpointRow>`
    INSERT INTO pull_endpoints AS p (id, project_id, name, description, retention_days, event_type_source, event_type_path, max_body_bytes,
                                     secret_token_hash, ephemeral, expires_at)
    VALUES (${input.id}::uuid, ${input.projectId}::uuid, ${input.name}, ${input.description}, ${input.retentionDays}::int,
            ${input.eventTypeSource}::text, ${input.eventTypePath}::text, ${input.maxBodyBytes}::int, ${input.secretTokenHash},
            ${input.expiresAt !== null}::boolean, ${input.expiresAt}::timestamptz)
    RETURNING ${COLUMNS(sql)}`;
  return row!;
}

/** A live endpoint of the project: not deleted and, when ephemeral, not past its TTL. */
export async function findPullEndpoint(sql: Sql, projectId: string, id: string): Promise<PullEndpointRow | undefined> {
  const [row] = await sql<PullEndpointRow>`
    SELECT ${COLUMNS(sql)} FROM pull_endpoints p
    WHERE p.id = ${id}::uuid AND p.project_id = ${projectId}::uuid AND ${liveEndpoint('p')}`;
  return row;
}

/** Row-locks a live endpoint for the rest of the transaction (a PATCH judging stored settings). */
export async function lockPullEndpoint(sql: Sql, projectId: string, id: string): Promise<PullEndpointRow | undefined> {
  const [row] = await sql<PullEndpointRow>`
    SELECT ${COLUMNS(sql)} FROM pull_endpoints p
    WHERE p.id = ${id}::uuid AND p.project_id = ${projectId}::uuid AND ${liveEndpoint('p')}
    FOR UPDATE`;
  return row;
}

/** Newest first; `afterSeq` is the keyset position of the previous page's last row. */
export async function listPullEndpoints(sql: Sql, projectId: string, page: { limit: number; afterSeq?: string }): Promise<PullEndpointRow[]> {
  return sql<PullEndpointRow>`
    SELECT ${COLUMNS(sql)} FROM pull_endpoints p
    ${newestFirstBySeq(sql, sql.fragment`p.seq`, [sql.fragment`p.project_id = ${projectId}::uuid`, liveEndpoint('p')], page)}`;
}

/** Events of the endpoint by status among those not deleted, and the soft-deleted ones. */
export async function countPullEvents(sql: Sql, endpointId: string): Promise<PullEventCounts> {
  const [row] = await sql<PullEventCounts>`
    SELECT count(*) FILTER (WHERE e.deleted_at IS NULL AND e.status = 'stored')::int AS stored,
           count(*) FILTER (WHERE e.deleted_at IS NULL AND e.status = 'fetched')::int AS fetched,
           count(*) FILTER (WHERE e.deleted_at IS NULL AND e.status = 'delivered')::int AS delivered,
           count(*) FILTER (WHERE e.deleted_at IS NOT NULL)::int AS deleted
    FROM pull_events e WHERE e.endpoint_id = ${endpointId}::uuid`;
  return row ?? { stored: 0, fetched: 0, delivered: 0, deleted: 0 };
}

/**
 * A partial update: undefined keeps a value; `null` in both extraction fields clears extraction.
 * Undefined when the endpoint is not live in the project.
 */
export interface PullEndpointPatch {
  name?: string;
  description?: string;
  retentionDays?: number;
  eventTypeSource?: EventTypeSource | null;
  eventTypePath?: string | null;
  maxBodyBytes?: number | null;
  paused?: boolean;
}

export async function updatePullEndpoint(sql: Sql, projectId: string, id: string, patch: PullEndpointPatch): Promise<PullEndpointRow | undefined> {
  const sets: SqlFragment[] = [];
  if (patch.name !== undefined) sets.push(sql.fragment`name = ${patch.name}::text`);
  if (patch.description !== undefined) sets.push(sql.fragment`description = ${patch.description}::text`);
  if (patch.retentionDays !== undefined) sets.push(sql.fragment`retention_days = ${patch.retentionDays}::int`);
  if (patch.eventTypeSource !== undefined) sets.push(sql.fragment`event_type_source = ${patch.eventTypeSource}::text`);
  if (patch.eventTypePath !== undefined) sets.push(sql.fragment`event_type_path = ${patch.eventTypePath}::text`);
  if (patch.paused !== undefined) sets.push(sql.fragment`paused = ${patch.paused}::boolean`);
  if (patch.maxBodyBytes !== undefined) sets.push(sql.fragment`max_body_bytes = ${patch.maxBodyBytes}::int`);
  sets.push(sql.fragment`updated_at = now()`);
  const [row] = await sql<PullEndpointRow>`
    UPDATE pull_endpoints p SET ${sql.join(sets, ', ')}
    WHERE p.id = ${id}::uuid AND p.project_id = ${projectId}::uuid AND ${liveEndpoint('p')}
    RETURNING ${COLUMNS(sql)}`;
  return row;
}

/** Soft delete; undefined when the endpoint does not exist in the project or is already deleted. */
export async function softDeletePullEndpoint(sql: Sql, projectId: string, id: string): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }>`
    UPDATE pull_endpoints p SET deleted_at = now(), updated_at = now()
    WHERE p.id = ${id}::uuid AND p.project_id = ${projectId}::uuid AND ${liveEndpoint('p')}
    RETURNING p.id`;
  return row;
}

/** What ingestion needs to know about an endpoint, found by the id in the ingest URL. */
export interface PullIngestEndpointRow {
  id: string;
  project_id: string;
  secret_token_hash: string;
  paused: boolean;
  /** Deleted, or ephemeral past its TTL: the ingest URL answers 410. */
  gone: boolean;
  event_type_source: EventTypeSource | null;
  event_type_path: string | null;
  max_body_bytes: number | null;
}

export async function findPullIngestEndpoint(sql: Sql, id: string): Promise<PullIngestEndpointRow | undefined> {
  const [row] = await sql<PullIngestEndpointRow>`
    SELECT p.id, p.project_id, p.secret_token_hash, p.paused, (NOT ${liveEndpoint('p')}) AS gone,
           p.event_type_source, p.event_type_path, p.max_body_bytes
    FROM pull_endpoints p WHERE p.id = ${id}::uuid`;
  return row;
}

/**
 * Share-locks the endpoints of an ingest batch until commit, in id order. A pause or delete
 * waits for the batches already storing, so once it has answered nothing more is stored.
 */
export async function lockPullEndpointsForIngest(sql: Sql, ids: readonly string[]): Promise<{ id: string; paused: boolean; gone: boolean }[]> {
  return sql<{ id: string; paused: boolean; gone: boolean }>`
    SELECT p.id, p.paused, (NOT ${liveEndpoint('p')}) AS gone
    FROM pull_endpoints p WHERE p.id = ANY(${[...ids]}::uuid[])
    ORDER BY p.id FOR SHARE`;
}

/** Marks ephemeral endpoints whose TTL has elapsed as deleted (at their expiry); returns their ids. */
export async function sweepExpiredPullEndpoints(sql: Sql, now: Date, batchSize = 500): Promise<string[]> {
  return sweepExpiredEphemeralEndpoints(sql, 'pull_endpoints', now, batchSize);
}
