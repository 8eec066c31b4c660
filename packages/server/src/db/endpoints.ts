import type { EndpointPausedReason } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
import { subscriptionMatches } from './endpoint-subscriptions.js';
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
  /** Why it is paused: through the API, or by hookrelay for failing; null when not paused. */
  paused_reason: EndpointPausedReason | null;
  paused_at: Date | null;
  ephemeral: boolean;
  expires_at: Date | null;
  owner_id: string | null;
  event_types: string[] | null;
  channels: string[] | null;
  /** Days its messages are kept; null: the server's default. */
  retention_days: number | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  id, seq::text AS seq, project_id, url, description, rate_limit_rps, burst, headers, paused, paused_reason, paused_at,
  ephemeral, expires_at, owner_id, event_types, channels, retention_days, created_at, updated_at`;

/** Who an endpoint belongs to and what it receives (docs/api.md, Events and subscriptions). */
export interface EndpointSubscription {
  ownerId: string | null;
  eventTypes: string[] | null;
  channels: string[] | null;
}

export interface EndpointInsert {
  id: string;
  projectId: string;
  url: string;
  description: string;
  rateLimitRps: number;
  burst: number;
  headers: Record<string, string>;
  expiresAt: Date | null;
  subscription: EndpointSubscription;
  retentionDays: number | null;
}

/** The caller writes its subscription rows in the same transaction (replaceEndpointSubscriptions). */
export async function insertEndpoint(sql: Sql, input: EndpointInsert): Promise<EndpointRow> {
  const { ownerId, eventTypes, channels } = input.subscription;
  const [row] = await sql<EndpointRow>`
    INSERT INTO endpoints (id, project_id, url, description, rate_limit_rps, burst, headers, ephemeral, expires_at, owner_id, event_types, channels, retention_days)
    VALUES (${input.id}, ${input.projectId}, ${input.url}, ${input.description}, ${input.rateLimitRps},
            ${input.burst}, ${input.headers}::jsonb, ${input.expiresAt !== null}, ${input.expiresAt},
            ${ownerId}::text, ${eventTypes}::text[], ${channels}::text[], ${input.retentionDays}::int)
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

export interface EndpointListFilters {
  ownerId?: string | undefined;
  /** Endpoints whose `event_types` take this type. */
  eventType?: string | undefined;
}

/**
 * Newest first; `afterSeq` is the keyset position of the previous page's last row. An owner is found
 * by its index; the event type is judged by each endpoint's subscription rows as the list is read.
 */
export async function listEndpoints(
  sql: Sql,
  projectId: string,
  filters: EndpointListFilters,
  page: { limit: number; afterSeq?: string },
): Promise<EndpointRow[]> {
  const where: SqlFragment[] = [sql.fragment`project_id = ${projectId}`, liveEndpoint('endpoints')];
  if (filters.ownerId !== undefined) where.push(sql.fragment`owner_id = ${filters.ownerId}`);
  if (filters.eventType !== undefined) {
    where.push(sql.fragment`EXISTS (SELECT 1 FROM endpoint_subscriptions s WHERE s.endpoint_id = endpoints.id AND ${subscriptionMatches(sql, filters.eventType)})`);
  }
  return sql<EndpointRow>`
    SELECT ${COLUMNS(sql)} FROM endpoints
    ${newestFirstBySeq(sql, sql.fragment`endpoints.seq`, where, page)}`;
}

export interface EndpointPatch {
  url?: string;
  description?: string;
  rateLimitRps?: number;
  burst?: number;
  headers?: Record<string, string>;
  paused?: boolean;
  /** Each field that is set replaces the stored one (null included). */
  subscription?: Partial<EndpointSubscription>;
  /** null: back to the server's default. */
  retentionDays?: number | null;
}

/**
 * Applies the fields that are set; others keep their values. Undefined when not found. A new owner
 * or new event types need new subscription rows, written by the caller in the same transaction.
 * `paused: true` pauses with the reason `manual` (an endpoint paused already keeps its reason and
 * time); `paused: false` resumes, and a resumed endpoint's failures count from nothing again.
 */
export async function updateEndpoint(
  sql: Sql,
  projectId: string,
  id: string,
  patch: EndpointPatch,
): Promise<EndpointRow | undefined> {
  const sub = patch.subscription ?? {};
  const pause = patch.paused ?? null;
  const [row] = await sql<EndpointRow>`
    UPDATE endpoints SET
      url = coalesce(${patch.url ?? null}::text, url),
      description = coalesce(${patch.description ?? null}::text, description),
      rate_limit_rps = coalesce(${patch.rateLimitRps ?? null}::int, rate_limit_rps),
      burst = coalesce(${patch.burst ?? null}::int, burst),
      headers = coalesce(${patch.headers ?? null}::jsonb, headers),
      paused = coalesce(${pause}::boolean, paused),
      paused_reason = CASE WHEN ${pause}::boolean IS NULL OR (paused AND ${pause}::boolean) THEN paused_reason
                           WHEN ${pause}::boolean THEN 'manual' END,
      paused_at = CASE WHEN ${pause}::boolean IS NULL OR (paused AND ${pause}::boolean) THEN paused_at
                       WHEN ${pause}::boolean THEN now() END,
      failing_since = CASE WHEN paused AND NOT coalesce(${pause}::boolean, true) THEN NULL ELSE failing_since END,
      failed_messages = CASE WHEN paused AND NOT coalesce(${pause}::boolean, true) THEN 0 ELSE failed_messages END,
      owner_id = CASE WHEN ${sub.ownerId !== undefined}::boolean THEN ${sub.ownerId ?? null}::text ELSE owner_id END,
      event_types = CASE WHEN ${sub.eventTypes !== undefined}::boolean THEN ${sub.eventTypes ?? null}::text[] ELSE event_types END,
      channels = CASE WHEN ${sub.channels !== undefined}::boolean THEN ${sub.channels ?? null}::text[] ELSE channels END,
      retention_days = CASE WHEN ${patch.retentionDays !== undefined}::boolean THEN ${patch.retentionDays ?? null}::int ELSE retention_days END,
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
