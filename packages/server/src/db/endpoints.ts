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

/** One recorded attempt of a delivery to an outbound endpoint, as the endpoint's failure tracking takes it. */
export interface EndpointAttempt {
  endpointId: string;
  succeeded: boolean;
  startedAt: Date;
  finishedAt: Date;
  /** The attempt's error; null on success. */
  error: string | null;
  /** The attempt ended its message failed_permanent: its retry schedule ran out. */
  endedMessage: boolean;
}

/** An endpoint that recording attempts paused. */
export interface FailingEndpointPause {
  id: string;
  project_id: string;
  owner_id: string | null;
  failing_since: Date;
  /** The error of the last failed attempt recorded. */
  last_error: string | null;
}

/**
 * Brings the failure tracking of the attempts' endpoints up to date (migrations/024) in the
 * transaction that records the attempts, and pauses (reason `failing`) each live endpoint that is
 * not paused yet whose attempts have all failed for at least `pauseAfterSeconds` while at least
 * `minFailedMessages` of its messages ended failed_permanent. Within the batch the attempts count in
 * the order they finished: a success ends the failures before it. Only the rows whose tracking
 * changes are written (a healthy endpoint's successes write nothing), locked in id order with the
 * lock their UPDATE takes (FOR NO KEY UPDATE), so that two such transactions never wait on each
 * other in a cycle. Returns the endpoints it paused.
 * `pauseAfterSeconds` 0: none is paused.
 */
export async function recordEndpointAttempts(
  sql: Sql,
  attempts: readonly EndpointAttempt[],
  options: { pauseAfterSeconds: number; minFailedMessages: number },
): Promise<FailingEndpointPause[]> {
  if (attempts.length === 0) return [];
  // A failure counts when it finished after the batch's last success (every failure when none succeeded).
  const counts = sql.fragment`NOT v.succeeded AND (l.at IS NULL OR v.finished_at > l.at)`;
  const updated = await sql<FailingEndpointPause & { pause: boolean }>`
    WITH v (endpoint_id, succeeded, started_at, finished_at, error, ended_message) AS (
      SELECT endpoint_id, succeeded = 1, started_at, finished_at, error, ended_message = 1
      FROM unnest(${attempts.map((a) => a.endpointId)}::text[], ${attempts.map((a) => (a.succeeded ? 1 : 0))}::int[],
        ${attempts.map((a) => a.startedAt.toISOString())}::timestamptz[], ${attempts.map((a) => a.finishedAt.toISOString())}::timestamptz[],
        ${attempts.map((a) => a.error)}::text[], ${attempts.map((a) => (a.endedMessage ? 1 : 0))}::int[])
        AS a (endpoint_id, succeeded, started_at, finished_at, error, ended_message)
    ), l AS (
      SELECT endpoint_id, max(finished_at) FILTER (WHERE succeeded) AS at FROM v GROUP BY endpoint_id
    ), batch AS (
      SELECT v.endpoint_id, l.at AS last_success,
             min(v.started_at) FILTER (WHERE ${counts}) AS first_failure,
             max(v.finished_at) FILTER (WHERE ${counts}) AS last_failure,
             (array_agg(v.error ORDER BY v.finished_at DESC) FILTER (WHERE ${counts}))[1] AS last_error,
             count(*) FILTER (WHERE ${counts} AND v.ended_message)::int AS ended
      FROM v JOIN l ON l.endpoint_id = v.endpoint_id
      GROUP BY v.endpoint_id, l.at
    ), locked AS (
      SELECT e.id, e.paused, ${liveEndpoint('e')} AS live, b.last_failure, b.last_error,
             CASE WHEN b.last_success IS NULL THEN coalesce(e.failing_since, b.first_failure) ELSE b.first_failure END AS failing_since,
             CASE WHEN b.last_success IS NULL THEN e.failed_messages ELSE 0 END + b.ended AS failed_messages
      FROM endpoints e JOIN batch b ON b.endpoint_id = e.id
      -- Successes alone at an endpoint that was not failing change nothing.
      WHERE b.last_failure IS NOT NULL OR e.failing_since IS NOT NULL OR e.failed_messages <> 0
      ORDER BY e.id
      FOR NO KEY UPDATE OF e
    ), next AS (
      SELECT k.*,
             (NOT k.paused AND k.live AND ${options.pauseAfterSeconds}::int > 0 AND k.last_failure IS NOT NULL
              AND k.failed_messages >= ${options.minFailedMessages}::int
              AND k.failing_since <= k.last_failure - make_interval(secs => ${options.pauseAfterSeconds}::int)) AS pause
      FROM locked k
    )
    UPDATE endpoints e SET
      failing_since = n.failing_since,
      failed_messages = n.failed_messages,
      paused = e.paused OR n.pause,
      paused_reason = CASE WHEN n.pause THEN 'failing' ELSE e.paused_reason END,
      paused_at = CASE WHEN n.pause THEN now() ELSE e.paused_at END,
      updated_at = CASE WHEN n.pause THEN now() ELSE e.updated_at END
    FROM next n WHERE e.id = n.id
    RETURNING e.id, e.project_id, e.owner_id, e.failing_since, n.last_error, n.pause`;
  return updated.filter((row) => row.pause).map(({ id, project_id, owner_id, failing_since, last_error }) => ({ id, project_id, owner_id, failing_since, last_error }));
}
