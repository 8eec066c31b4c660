import type { Sql } from './database.js';

/** What ingestion needs to know about an inbound endpoint, found by its secret token's hash. */
export interface IngestEndpointRow {
  id: string;
  project_id: string;
  mode: 'forward' | 'cli';
  paused: boolean;
  /** Deleted, or ephemeral past its TTL: the ingest URL answers 410. */
  gone: boolean;
  ingest_response_code: number;
  idempotency_header_names: string[];
  verify_static_token: boolean;
  static_token_header_name: string | null;
  static_token_query_param: string | null;
  static_token_hash: string | null;
  verify_hmac: boolean;
  hmac_scheme: string;
  hmac_header_name: string | null;
  hmac_secret_encrypted: string | null;
  timestamp_header_name: string | null;
  timestamp_tolerance_seconds: number;
  verify_ip_allowlist: boolean;
  allowed_cidrs: string[];
}

export async function findIngestEndpointByTokenHash(sql: Sql, tokenHash: string): Promise<IngestEndpointRow | undefined> {
  const [row] = await sql<IngestEndpointRow>`
    SELECT id, project_id, mode, paused,
           (deleted_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= now())) AS gone,
           ingest_response_code, idempotency_header_names,
           verify_static_token, static_token_header_name, static_token_query_param, static_token_hash,
           verify_hmac, hmac_scheme, hmac_header_name, hmac_secret_encrypted,
           timestamp_header_name, timestamp_tolerance_seconds, verify_ip_allowlist, allowed_cidrs
    FROM inbound_endpoints WHERE secret_token_hash = ${tokenHash}`;
  return row;
}

export async function incrementRejectedCount(sql: Sql, endpointId: string): Promise<void> {
  await sql`UPDATE inbound_endpoints SET rejected_count = rejected_count + 1 WHERE id = ${endpointId}`;
}

export interface IngestLockRow {
  id: string;
  /** forward-mode messages are queued for delivery in the same transaction. */
  mode: 'forward' | 'cli';
  paused: boolean;
  gone: boolean;
  last_message_id: string | null;
}

/**
 * Row-locks the endpoints of a batch until commit, in id order (no deadlock between processes).
 * Holding the lock to commit is what makes ids of one endpoint visible in id order.
 */
export async function lockEndpointsForIngest(sql: Sql, endpointIds: readonly string[]): Promise<IngestLockRow[]> {
  return sql<IngestLockRow>`
    SELECT id, mode, paused,
           (deleted_at IS NOT NULL OR (expires_at IS NOT NULL AND expires_at <= now())) AS gone,
           last_message_id
    FROM inbound_endpoints WHERE id = ANY(${[...endpointIds]}::uuid[])
    ORDER BY id FOR UPDATE`;
}

export async function setLastMessageIds(sql: Sql, lasts: readonly { endpointId: string; messageId: string }[]): Promise<void> {
  if (lasts.length === 0) return;
  const values = lasts.map((l) => sql.fragment`(${l.endpointId}::uuid, ${l.messageId}::uuid)`);
  await sql`
    UPDATE inbound_endpoints e SET last_message_id = v.message_id
    FROM (VALUES ${sql.join(values, ', ')}) AS v (endpoint_id, message_id)
    WHERE e.id = v.endpoint_id`;
}

export interface IdempotencyClaim {
  endpointId: string;
  key: string;
  messageId: string;
}

/**
 * Claims idempotency keys for 24 h. Returns the claims that won; a key that is already live keeps
 * its first message. Concurrent claims of one key wait on each other in the unique index.
 */
export async function claimIdempotencyKeys(sql: Sql, claims: readonly IdempotencyClaim[], expiresAt: Date): Promise<Set<string>> {
  if (claims.length === 0) return new Set();
  const values = claims.map((c) => sql.fragment`(${c.endpointId}::uuid, ${c.key}, ${c.messageId}::uuid, ${expiresAt}::timestamptz)`);
  const won = await sql<{ message_id: string }>`
    INSERT INTO inbound_idempotency_keys AS k (inbound_endpoint_id, idempotency_key, message_id, expires_at)
    VALUES ${sql.join(values, ', ')}
    ON CONFLICT (inbound_endpoint_id, idempotency_key) DO UPDATE
      SET message_id = excluded.message_id, expires_at = excluded.expires_at
      WHERE k.expires_at <= now()
    RETURNING message_id`;
  return new Set(won.map((r) => r.message_id));
}

/** The message that holds a live idempotency key. */
export async function findIdempotencyHolders(sql: Sql, keys: readonly { endpointId: string; key: string }[]): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const values = keys.map((k) => sql.fragment`(${k.endpointId}::uuid, ${k.key})`);
  const rows = await sql<{ inbound_endpoint_id: string; idempotency_key: string; message_id: string }>`
    SELECT k.inbound_endpoint_id, k.idempotency_key, k.message_id
    FROM inbound_idempotency_keys k
    JOIN (VALUES ${sql.join(values, ', ')}) AS v (endpoint_id, key) ON k.inbound_endpoint_id = v.endpoint_id AND k.idempotency_key = v.key`;
  return new Map(rows.map((r) => [`${r.inbound_endpoint_id}\n${r.idempotency_key}`, r.message_id]));
}

export interface NewInboundMessage {
  id: string;
  projectId: string;
  endpointId: string;
  method: string;
  path: string;
  query: string;
  contentType: string;
  sizeBytes: number;
  payloadSha256: string;
  rawHeaders: [string, string][];
  payloadKey: string;
  idempotencyKey: string | null;
  receivedAt: Date;
}

export async function insertInboundMessages(sql: Sql, messages: readonly NewInboundMessage[]): Promise<void> {
  if (messages.length === 0) return;
  const rows = messages.map(
    (m) => sql.fragment`(${m.id}::uuid, ${m.projectId}::uuid, ${m.endpointId}::uuid, ${m.method}, ${m.path}, ${m.query},
      ${m.contentType}, ${m.sizeBytes}::int, ${m.payloadSha256}, ${m.rawHeaders}::jsonb, ${m.payloadKey},
      ${m.idempotencyKey}::text, ${m.receivedAt}::timestamptz, ${m.receivedAt}::timestamptz)`,
  );
  await sql`
    INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes,
      payload_sha256, raw_headers, payload_key, idempotency_key, received_at, updated_at)
    VALUES ${sql.join(rows, ', ')}`;
}

export async function deleteExpiredIdempotencyKeys(sql: Sql, now: Date, batchSize = 5000): Promise<number> {
  const rows = await sql<{ n: number }>`
    WITH gone AS (
      DELETE FROM inbound_idempotency_keys WHERE ctid IN (
        SELECT ctid FROM inbound_idempotency_keys WHERE expires_at <= ${now} LIMIT ${batchSize}
      ) RETURNING 1
    ) SELECT count(*)::int AS n FROM gone`;
  return rows[0]?.n ?? 0;
}
