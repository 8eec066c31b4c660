import type { Camelized, EventTypeSource, InboundMode, VerificationSettings } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
import { isUniqueViolation } from './errors.js';
import { newestFirstBySeq } from './keyset.js';
import { liveEndpoint, sweepExpiredEphemeralEndpoints } from './soft-delete.js';

/** What a list row needs: no secret material, so a page never decrypts or carries any. */
export interface InboundEndpointSummaryRow {
  id: string;
  seq: string;
  name: string;
  description: string;
  mode: InboundMode;
  /** As stored: a cli endpoint may keep one (the API shows it as ""). */
  url: string;
  paused: boolean;
  ephemeral: boolean;
  expires_at: Date | null;
  created_at: Date;
}

/**
 * Every setting of an endpoint. Secrets appear only in sealed form (`secret_token_encrypted`,
 * `hmac_secret_encrypted`) or as a presence flag (`has_static_token`): presenters must never copy them.
 */
export interface InboundEndpointRow extends InboundEndpointSummaryRow, VerificationSettings {
  project_id: string;
  secret_token_encrypted: string;
  has_static_token: boolean;
  hmac_secret_encrypted: string | null;
  idempotency_header_names: string[];
  ingest_response_code: number;
  signing_enabled: boolean;
  rejected_count: number;
  rejections_dropped_count: number;
  last_message_id: string | null;
  event_type_source: EventTypeSource | null;
  event_type_path: string | null;
  max_body_bytes: number | null;
  /** Days its messages are kept; null: the server's default. */
  retention_days: number | null;
  resign_late: boolean;
  updated_at: Date;
}

/** A full row plus the endpoint's current delivery signing key (the one without an end date). */
export interface InboundEndpointDetailRow extends InboundEndpointRow {
  signing_key_id: string | null;
  key_hint: string | null;
}

/** The partial unique index behind DUPLICATE_URL (migrations/002_inbound.sql). */
export const INBOUND_URL_CONSTRAINT = 'inbound_endpoints_project_url';

export function isDuplicateInboundUrl(error: unknown): boolean {
  return isUniqueViolation(error, INBOUND_URL_CONSTRAINT);
}

const SUMMARY_COLUMNS = (sql: Sql) => sql.fragment`
  e.id, e.seq::text AS seq, e.name, e.description, e.mode, e.url, e.paused, e.ephemeral, e.expires_at, e.created_at`;

// rejected_count is bigint (a counter that only grows); both drivers read int4 the same way, and
// LEAST keeps the cast from failing should it ever pass 2^31.
const COLUMNS = (sql: Sql) => sql.fragment`
  ${SUMMARY_COLUMNS(sql)}, e.project_id, e.secret_token_encrypted,
  e.verify_static_token, e.static_token_header_name, e.static_token_query_param,
  (e.static_token_hash IS NOT NULL) AS has_static_token,
  e.verify_hmac, e.hmac_scheme, e.hmac_header_name, e.hmac_secret_encrypted,
  e.timestamp_header_name, e.timestamp_tolerance_seconds,
  e.verify_ip_allowlist, e.allowed_cidrs, e.idempotency_header_names, e.ingest_response_code,
  e.signing_enabled, LEAST(e.rejected_count, 2147483647)::int AS rejected_count,
  LEAST(e.rejections_dropped_count, 2147483647)::int AS rejections_dropped_count, e.last_message_id,
  e.event_type_source, e.event_type_path, e.max_body_bytes, e.retention_days, e.resign_late, e.updated_at`;

/** A new endpoint's settings; secrets arrive sealed or hashed. */
export interface InboundEndpointInsert extends Camelized<VerificationSettings> {
  id: string;
  projectId: string;
  name: string;
  description: string;
  mode: InboundMode;
  url: string;
  secretTokenEncrypted: string;
  secretTokenHash: string;
  staticTokenHash: string | null;
  hmacSecretEncrypted: string | null;
  idempotencyHeaderNames: string[];
  ingestResponseCode: number;
  signingEnabled: boolean;
  expiresAt: Date | null;
  eventTypeSource: EventTypeSource | null;
  eventTypePath: string | null;
  maxBodyBytes: number | null;
  retentionDays: number | null;
  resignLate: boolean;
}

/** Throws a unique violation of INBOUND_URL_CONSTRAINT when the project already has the URL. */
export async function insertInboundEndpoint(sql: Sql, input: InboundEndpointInsert): Promise<InboundEndpointSummaryRow> {
  const [row] = await sql<InboundEndpointSummaryRow>`
    INSERT INTO inbound_endpoints AS e (
      id, project_id, name, description, mode, url, secret_token_encrypted, secret_token_hash,
      verify_static_token, static_token_header_name, static_token_query_param, static_token_hash,
      verify_hmac, hmac_scheme, hmac_header_name, hmac_secret_encrypted,
      timestamp_header_name, timestamp_tolerance_seconds, verify_ip_allowlist, allowed_cidrs,
      idempotency_header_names, ingest_response_code, signing_enabled, ephemeral, expires_at,
      event_type_source, event_type_path, max_body_bytes, retention_days, resign_late)
    VALUES (
      ${input.id}, ${input.projectId}, ${input.name}, ${input.description}, ${input.mode}, ${input.url},
      ${input.secretTokenEncrypted}, ${input.secretTokenHash},
      ${input.verifyStaticToken}, ${input.staticTokenHeaderName}::text, ${input.staticTokenQueryParam}::text,
      ${input.staticTokenHash}::text,
      ${input.verifyHmac}, ${input.hmacScheme}, ${input.hmacHeaderName}::text, ${input.hmacSecretEncrypted}::text,
      ${input.timestampHeaderName}::text, ${input.timestampToleranceSeconds}::int, ${input.verifyIpAllowlist},
      ${input.allowedCidrs}::jsonb, ${input.idempotencyHeaderNames}::jsonb, ${input.ingestResponseCode}::int,
      ${input.signingEnabled}, ${input.expiresAt !== null}, ${input.expiresAt}::timestamptz,
      ${input.eventTypeSource}::text, ${input.eventTypePath}::text, ${input.maxBodyBytes}::int, ${input.retentionDays}::int, ${input.resignLate}::boolean)
    RETURNING ${SUMMARY_COLUMNS(sql)}`;
  return row!;
}

/** A live endpoint's newest message id (null when it has none); undefined when there is no such endpoint. */
export async function findInboundLastMessageId(sql: Sql, projectId: string, id: string): Promise<string | null | undefined> {
  const [row] = await sql<{ last_message_id: string | null }>`
    SELECT e.last_message_id FROM inbound_endpoints e
    WHERE e.id = ${id} AND e.project_id = ${projectId} AND ${liveEndpoint('e')}`;
  return row === undefined ? undefined : row.last_message_id;
}

export async function findInboundEndpoint(sql: Sql, projectId: string, id: string): Promise<InboundEndpointDetailRow | undefined> {
  const [row] = await sql<InboundEndpointDetailRow>`
    SELECT ${COLUMNS(sql)}, k.id AS signing_key_id, k.key_hint
    FROM inbound_endpoints e
    LEFT JOIN LATERAL (
      SELECT id, key_hint FROM signing_keys
      WHERE owner_id = e.id::text AND expires_at IS NULL
      ORDER BY created_at DESC, id DESC
      LIMIT 1
    ) k ON true
    WHERE e.id = ${id} AND e.project_id = ${projectId} AND ${liveEndpoint('e')}`;
  return row;
}

/**
 * Row-locks a live endpoint for the rest of the transaction, so that a PATCH validates the settings
 * it is about to combine with against values no concurrent PATCH can change underneath it.
 */
export async function lockInboundEndpoint(sql: Sql, projectId: string, id: string): Promise<InboundEndpointRow | undefined> {
  const [row] = await sql<InboundEndpointRow>`
    SELECT ${COLUMNS(sql)} FROM inbound_endpoints e
    WHERE e.id = ${id} AND e.project_id = ${projectId} AND ${liveEndpoint('e')}
    FOR UPDATE`;
  return row;
}

/** Newest first; `afterSeq` is the keyset position of the previous page's last row. */
export async function listInboundEndpoints(
  sql: Sql,
  projectId: string,
  page: { limit: number; afterSeq?: string },
): Promise<InboundEndpointSummaryRow[]> {
  return sql<InboundEndpointSummaryRow>`
    SELECT ${SUMMARY_COLUMNS(sql)} FROM inbound_endpoints e
    ${newestFirstBySeq(sql, sql.fragment`e.seq`, [sql.fragment`e.project_id = ${projectId}`, liveEndpoint('e')], page)}`;
}

/**
 * A partial update: a field that is undefined keeps its value; `null` stores NULL (a cleared
 * optional setting). Secrets arrive sealed or hashed.
 */
export interface InboundEndpointPatch extends Partial<Camelized<VerificationSettings>> {
  name?: string;
  description?: string;
  mode?: InboundMode;
  url?: string;
  staticTokenHash?: string;
  hmacSecretEncrypted?: string;
  idempotencyHeaderNames?: string[];
  ingestResponseCode?: number;
  signingEnabled?: boolean;
  paused?: boolean;
  eventTypeSource?: EventTypeSource | null;
  eventTypePath?: string | null;
  maxBodyBytes?: number | null;
  retentionDays?: number | null;
  resignLate?: boolean;
}

/**
 * Applies the fields that are set; undefined when the endpoint is not live in the project. Throws a
 * unique violation of INBOUND_URL_CONSTRAINT when a new URL is taken in the project.
 */
export async function updateInboundEndpoint(
  sql: Sql,
  projectId: string,
  id: string,
  patch: InboundEndpointPatch,
): Promise<{ id: string; paused: boolean } | undefined> {
  // coalesce() cannot tell "omitted" from "set to NULL", so the SET list is built from what is given.
  const sets: SqlFragment[] = [];
  const text = (value: string | null) => sql.fragment`${value}::text`;
  if (patch.name !== undefined) sets.push(sql.fragment`name = ${text(patch.name)}`);
  if (patch.description !== undefined) sets.push(sql.fragment`description = ${text(patch.description)}`);
  if (patch.mode !== undefined) sets.push(sql.fragment`mode = ${text(patch.mode)}`);
  if (patch.url !== undefined) sets.push(sql.fragment`url = ${text(patch.url)}`);
  if (patch.verifyStaticToken !== undefined) sets.push(sql.fragment`verify_static_token = ${patch.verifyStaticToken}::boolean`);
  if (patch.staticTokenHeaderName !== undefined) sets.push(sql.fragment`static_token_header_name = ${text(patch.staticTokenHeaderName)}`);
  if (patch.staticTokenQueryParam !== undefined) sets.push(sql.fragment`static_token_query_param = ${text(patch.staticTokenQueryParam)}`);
  if (patch.staticTokenHash !== undefined) sets.push(sql.fragment`static_token_hash = ${text(patch.staticTokenHash)}`);
  if (patch.verifyHmac !== undefined) sets.push(sql.fragment`verify_hmac = ${patch.verifyHmac}::boolean`);
  if (patch.hmacScheme !== undefined) sets.push(sql.fragment`hmac_scheme = ${text(patch.hmacScheme)}`);
  if (patch.hmacHeaderName !== undefined) sets.push(sql.fragment`hmac_header_name = ${text(patch.hmacHeaderName)}`);
  if (patch.hmacSecretEncrypted !== undefined) sets.push(sql.fragment`hmac_secret_encrypted = ${text(patch.hmacSecretEncrypted)}`);
  if (patch.timestampHeaderName !== undefined) sets.push(sql.fragment`timestamp_header_name = ${text(patch.timestampHeaderName)}`);
  if (patch.timestampToleranceSeconds !== undefined) sets.push(sql.fragment`timestamp_tolerance_seconds = ${patch.timestampToleranceSeconds}::int`);
  if (patch.verifyIpAllowlist !== undefined) sets.push(sql.fragment`verify_ip_allowlist = ${patch.verifyIpAllowlist}::boolean`);
  if (patch.allowedCidrs !== undefined) sets.push(sql.fragment`allowed_cidrs = ${patch.allowedCidrs}::jsonb`);
  if (patch.idempotencyHeaderNames !== undefined) sets.push(sql.fragment`idempotency_header_names = ${patch.idempotencyHeaderNames}::jsonb`);
  if (patch.ingestResponseCode !== undefined) sets.push(sql.fragment`ingest_response_code = ${patch.ingestResponseCode}::int`);
  if (patch.signingEnabled !== undefined) sets.push(sql.fragment`signing_enabled = ${patch.signingEnabled}::boolean`);
  if (patch.paused !== undefined) sets.push(sql.fragment`paused = ${patch.paused}::boolean`);
  if (patch.eventTypeSource !== undefined) sets.push(sql.fragment`event_type_source = ${text(patch.eventTypeSource)}`);
  if (patch.eventTypePath !== undefined) sets.push(sql.fragment`event_type_path = ${text(patch.eventTypePath)}`);
  if (patch.maxBodyBytes !== undefined) sets.push(sql.fragment`max_body_bytes = ${patch.maxBodyBytes}::int`);
  if (patch.retentionDays !== undefined) sets.push(sql.fragment`retention_days = ${patch.retentionDays}::int`);
  if (patch.resignLate !== undefined) sets.push(sql.fragment`resign_late = ${patch.resignLate}::boolean`);
  sets.push(sql.fragment`updated_at = now()`);
  const [row] = await sql<{ id: string; paused: boolean }>`
    UPDATE inbound_endpoints e SET ${sql.join(sets, ', ')}
    WHERE e.id = ${id} AND e.project_id = ${projectId} AND ${liveEndpoint('e')}
    RETURNING e.id, e.paused`;
  return row;
}

/** Soft delete; undefined when the endpoint does not exist or is already deleted. */
export async function softDeleteInboundEndpoint(sql: Sql, projectId: string, id: string): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }>`
    UPDATE inbound_endpoints e SET deleted_at = now(), updated_at = now()
    WHERE e.id = ${id} AND e.project_id = ${projectId} AND ${liveEndpoint('e')}
    RETURNING e.id`;
  return row;
}

/**
 * Records the deletion of the project's expired ephemeral endpoints that still hold `url`. An expired
 * endpoint is already gone for the API, but until the sweeper runs its row keeps the URL in the
 * unique index; without this a new endpoint could not take the URL back in that window.
 */
export async function releaseExpiredInboundUrl(sql: Sql, projectId: string, url: string): Promise<string[]> {
  const rows = await sql<{ id: string }>`
    UPDATE inbound_endpoints SET deleted_at = expires_at
    WHERE project_id = ${projectId} AND url = ${url} AND ephemeral AND deleted_at IS NULL AND NOT ${liveEndpoint('inbound_endpoints')}
    RETURNING id`;
  return rows.map((r) => r.id);
}

/** Marks ephemeral endpoints whose TTL has elapsed as deleted (at their expiry); returns their ids. */
export async function sweepExpiredInboundEndpoints(sql: Sql, now: Date, batchSize = 500): Promise<string[]> {
  return sweepExpiredEphemeralEndpoints(sql, 'inbound_endpoints', now, batchSize);
}

/** The mode of an endpoint, deleted or not (a message keeps pointing at its endpoint). */
export async function findInboundEndpointMode(sql: Sql, id: string): Promise<InboundMode | undefined> {
  const [row] = await sql<{ mode: InboundMode }>`SELECT mode FROM inbound_endpoints WHERE id = ${id}`;
  return row?.mode;
}

export interface InboundEndpointActivity {
  connected_listeners: number;
  messages_24h: number;
}

/**
 * `connected_listeners` and `messages_24h` of the given endpoints (a list page, or one record).
 * Messages are counted by id from `sinceId` (a UUIDv7 of the window's start) on the
 * (inbound_endpoint_id, id) index, deleted ones included; connections by the stream rows whose
 * process refreshed them within `staleAfterSeconds`.
 */
export async function countInboundEndpointActivity(
  sql: Sql,
  ids: readonly string[],
  sinceId: string,
  staleAfterSeconds: number,
): Promise<Map<string, InboundEndpointActivity>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<InboundEndpointActivity & { id: string }>`
    SELECT e.id,
      (SELECT count(*)::int FROM inbound_stream_connections c
        WHERE c.inbound_endpoint_id = e.id AND c.seen_at > now() - make_interval(secs => ${staleAfterSeconds})) AS connected_listeners,
      (SELECT count(*)::int FROM inbound_messages m WHERE m.inbound_endpoint_id = e.id AND m.id >= ${sinceId}::uuid) AS messages_24h
    FROM unnest(${ids as string[]}::uuid[]) AS e(id)`;
  return new Map(rows.map(({ id, ...activity }) => [id, activity]));
}

/** What re-signing a late delivery reads of its endpoint (ingest/resign.ts); the secret sealed. */
export interface SenderSigningRow {
  hmac_scheme: VerificationSettings['hmac_scheme'];
  hmac_header_name: string | null;
  timestamp_header_name: string | null;
  hmac_secret_encrypted: string | null;
  resign_late: boolean;
}

/** The re-signing settings of a live endpoint; undefined when it is not live. */
export async function findSenderSigning(sql: Sql, endpointId: string): Promise<SenderSigningRow | undefined> {
  const [row] = await sql<SenderSigningRow>`
    SELECT e.hmac_scheme, e.hmac_header_name, e.timestamp_header_name, e.hmac_secret_encrypted, e.resign_late
    FROM inbound_endpoints e WHERE e.id = ${endpointId}::uuid AND ${liveEndpoint('e')}`;
  return row;
}
