import type { Sql } from './database.js';
import { newestFirstBySeq } from './keyset.js';
import { liveEndpoint, sweepExpiredEphemeralEndpoints } from './soft-delete.js';

export interface EndpointRow {
  id: string;
  seq: string;
  project_id: string;
  url: string;
  description: string;
  rate_limit_rps: number;
  burst: number;
  headers: Record<string, string>;
  paused: boolean;
  ephemeral: boolean;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  id, seq::text AS seq, project_id, url, description, rate_limit_rps, burst, headers, paused,
  ephemeral, expires_at, created_at, updated_at`;

export interface EndpointInsert {
  id: string;
  projectId: string;
  url: string;
  description: string;
  rateLimitRps: number;
  burst: number;
  headers: Record<string, string>;
  expiresAt: Date | null;
}

export async function insertEndpoint(sql: Sql, input: EndpointInsert): Promise<EndpointRow> {
  const [row] = await sql<EndpointRow>`
    INSERT INTO endpoints (id, project_id, url, description, rate_limit_rps, burst, headers, ephemeral, expires_at)
    VALUES (${input.id}, ${input.projectId}, ${input.url}, ${input.description}, ${input.rateLimitRps},
            ${input.burst}, ${input.headers}::jsonb, ${input.expiresAt !== null}, ${input.expiresAt})
    RETURNING ${COLUMNS(sql)}`;
  return row!;
}

export async function findEndpoint(sql: Sql, projectId: string, id: string): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow>`
    SELECT ${COLUMNS(sql)} FROM endpoints WHERE id = ${id} AND project_id = ${projectId} AND ${liveEndpoint('endpoints')}`;
  return row;
}

/** Row-locks a live endpoint for the rest of the transaction (signing key rotation). */
export async function lockEndpoint(sql: Sql, projectId: string, id: string): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }>`
    SELECT id FROM endpoints WHERE id = ${id} AND project_id = ${projectId} AND ${liveEndpoint('endpoints')} FOR UPDATE`;
  return row;
}

/** Newest first; `afterSeq` is the keyset position of the previous page's last row. */
export async function listEndpoints(
  sql: Sql,
  projectId: string,
  page: { limit: number; afterSeq?: string },
): Promise<EndpointRow[]> {
  return sql<EndpointRow>`
    SELECT ${COLUMNS(sql)} FROM endpoints
    ${newestFirstBySeq(sql, sql.fragment`endpoints.seq`, [sql.fragment`project_id = ${projectId}`, liveEndpoint('endpoints')], page)}`;
}

export interface EndpointPatch {
  url?: string;
  description?: string;
  rateLimitRps?: number;
  burst?: number;
  headers?: Record<string, string>;
  paused?: boolean;
}

/** Applies the fields that are set; others keep their values. Undefined when not found. */
export async function updateEndpoint(
  sql: Sql,
  projectId: string,
  id: string,
  patch: EndpointPatch,
): Promise<EndpointRow | undefined> {
  const [row] = await sql<EndpointRow>`
    UPDATE endpoints SET
      url = coalesce(${patch.url ?? null}::text, url),
      description = coalesce(${patch.description ?? null}::text, description),
      rate_limit_rps = coalesce(${patch.rateLimitRps ?? null}::int, rate_limit_rps),
      burst = coalesce(${patch.burst ?? null}::int, burst),
      headers = coalesce(${patch.headers ?? null}::jsonb, headers),
      paused = coalesce(${patch.paused ?? null}::boolean, paused),
      updated_at = now()
    WHERE id = ${id} AND project_id = ${projectId} AND ${liveEndpoint('endpoints')}
    RETURNING ${COLUMNS(sql)}`;
  return row;
}

/** Soft delete; undefined when the endpoint does not exist or is already deleted. */
export async function softDeleteEndpoint(sql: Sql, projectId: string, id: string): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }>`
    UPDATE endpoints SET deleted_at = now(), updated_at = now()
    WHERE id = ${id} AND project_id = ${projectId} AND ${liveEndpoint('endpoints')}
    RETURNING id`;
  return row;
}

/** Marks ephemeral endpoints whose TTL has elapsed as deleted (at their expiry); returns their ids. */
export async function sweepExpiredEndpoints(sql: Sql, now: Date, batchSize = 500): Promise<string[]> {
  return sweepExpiredEphemeralEndpoints(sql, 'endpoints', now, batchSize);
}
