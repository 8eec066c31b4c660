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

/** One webhook of a group commit, as `storeInboundBatch` takes it (as JSON). */
export interface IngestBatchItem {
  /** 0, 1, 2, … in array order. */
  n: number;
  /** The caller's reference; results come back keyed by it. */
  ord: number;
  /**
   * Proposed id, above every id this process proposed for the endpoint before; the payload key is
   * `inbound/<proposed id>`. The stored id differs when another process committed later ids meanwhile.
   */
  id: string;
  endpoint_id: string;
  project_id: string;
  method: string;
  path: string;
  query: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  raw_headers: [string, string][];
  /** At most one item per (endpoint, key) in a batch. */
  idempotency_key: string | null;
  received_at: Date;
  /** Where the body starts in the batch's concatenated bodies. */
  body_offset: number;
}

/** `previous_last_id`: the endpoint's last committed id before this call. */
export type IngestBatchResultRow =
  | { ord: number; outcome: 'stored' | 'duplicate'; message_id: string; endpoint_id: string; previous_last_id: string | null }
  | { ord: number; outcome: 'paused' | 'gone'; message_id: null; endpoint_id: string; previous_last_id: string | null };

/**
 * Stores a batch in one autocommit statement (its own transaction; it returns after the commit), in
 * this order: the batch's endpoint rows are locked in id order (two batches over the same endpoints
 * cannot deadlock) and read as the lock gives them, i.e. with what the batch that held the lock before
 * committed; each endpoint's messages keep their proposed ids when these are above its last committed
 * id, and otherwise get the ids right after it (another process committed later ids meanwhile), in
 * the proposed order; idempotency keys are claimed (the first claim of a key wins for 24 h; a
 * concurrent claim waits in the unique index for the other transaction to end, and learns the
 * winner's message id from the conflict); then messages, payloads (when `bodies` is given: the
 * database store), each endpoint's new last id and forward-mode delivery jobs are written, and the
 * jobs are announced on `hookrelay_deliveries`.
 *
 * Holding each endpoint's row lock until the commit, and storing only ids above its last committed
 * id, is what makes one endpoint's ids visible strictly in id order across processes (decisions.md
 * §5). The NOTIFY of the new messages is the caller's, after the commit (`notifyAfterCommit`): in the
 * commit it would hold PostgreSQL's cluster-wide notify lock through the WAL flush.
 *
 * One statement rather than migration 005's PL/pgSQL function, which this version no longer calls
 * (processes of the previous version still do during a rolling upgrade): 0.2 ms less per webhook at
 * 50 msg/s in bench/listen.mjs.
 */
export async function storeInboundBatch(
  sql: Sql,
  items: readonly IngestBatchItem[],
  bodies: Buffer | null,
  idempotencyExpiresAt: Date,
): Promise<IngestBatchResultRow[]> {
  return sql<IngestBatchResultRow>`
    WITH params AS MATERIALIZED (
      SELECT ${items as unknown as object}::jsonb AS items, ${bodies}::bytea AS bodies,
             ${idempotencyExpiresAt.toISOString()}::text::timestamptz AS key_expires_at
    ),
    items AS MATERIALIZED (
      SELECT t.* FROM params, jsonb_to_recordset(params.items) AS t (n integer, ord integer, id uuid, endpoint_id uuid,
        project_id uuid, method text, path text, query text, content_type text, size_bytes integer, sha256 text,
        raw_headers jsonb, idempotency_key text, received_at timestamptz, body_offset integer)
    ),
    locked AS MATERIALIZED (
      SELECT e.id, e.mode, e.paused, e.last_message_id,
             (e.deleted_at IS NOT NULL OR (e.expires_at IS NOT NULL AND e.expires_at <= now())) AS gone
      FROM inbound_endpoints e
      WHERE e.id IN (SELECT i.endpoint_id FROM items i)
      ORDER BY e.id
      FOR UPDATE
    ),
    placed AS MATERIALIZED (
      SELECT i.*, l.mode, l.last_message_id AS previous_last_id,
             (l.id IS NULL OR l.gone) AS gone, coalesce(l.paused, false) AS paused,
             CASE WHEN l.last_message_id IS NULL OR l.last_message_id < (min(i.id::text) OVER w)::uuid THEN i.id
                  ELSE hookrelay_uuidv7_after(l.last_message_id, rank() OVER (w ORDER BY i.id)) END AS final_id
      FROM items i LEFT JOIN locked l ON l.id = i.endpoint_id
      WINDOW w AS (PARTITION BY i.endpoint_id)
    ),
    claims AS (
      INSERT INTO inbound_idempotency_keys AS k (inbound_endpoint_id, idempotency_key, message_id, expires_at)
      SELECT p.endpoint_id, p.idempotency_key, p.final_id, params.key_expires_at
      FROM placed p, params WHERE p.idempotency_key IS NOT NULL AND NOT p.gone AND NOT p.paused
      ON CONFLICT (inbound_endpoint_id, idempotency_key) DO UPDATE
        SET message_id = CASE WHEN k.expires_at <= now() THEN excluded.message_id ELSE k.message_id END,
            expires_at = CASE WHEN k.expires_at <= now() THEN excluded.expires_at ELSE k.expires_at END
      RETURNING k.inbound_endpoint_id, k.idempotency_key, k.message_id
    ),
    decided AS MATERIALIZED (
      SELECT p.*, c.message_id AS key_holder,
             NOT p.gone AND NOT p.paused AND (p.idempotency_key IS NULL OR c.message_id = p.final_id) AS accepted
      FROM placed p LEFT JOIN claims c ON c.inbound_endpoint_id = p.endpoint_id AND c.idempotency_key = p.idempotency_key
    ),
    stored AS (
      INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes,
        payload_sha256, raw_headers, payload_key, idempotency_key, received_at, updated_at)
      SELECT d.final_id, d.project_id, d.endpoint_id, d.method, d.path, d.query, d.content_type, d.size_bytes,
        d.sha256, d.raw_headers, 'inbound/' || d.id, d.idempotency_key, d.received_at, d.received_at
      FROM decided d WHERE d.accepted
    ),
    stored_payloads AS (
      INSERT INTO payloads (key, data)
      SELECT 'inbound/' || d.id, substring(params.bodies FROM d.body_offset + 1 FOR d.size_bytes)
      FROM decided d, params WHERE d.accepted AND params.bodies IS NOT NULL
    ),
    jobs AS (
      INSERT INTO delivery_jobs (message_id, kind, destination, run_at)
      SELECT d.final_id, 'inbound', d.endpoint_id::text, now() FROM decided d WHERE d.accepted AND d.mode = 'forward'
      ON CONFLICT (message_id) DO NOTHING
      RETURNING 1
    ),
    last_ids AS (
      UPDATE inbound_endpoints e SET last_message_id = l.last_id
      FROM (SELECT d.endpoint_id, (array_agg(d.final_id ORDER BY d.final_id DESC))[1] AS last_id
            FROM decided d WHERE d.accepted GROUP BY d.endpoint_id) AS l
      WHERE e.id = l.endpoint_id
    ),
    jobs_announced AS (
      SELECT pg_notify('hookrelay_deliveries', '') FROM (SELECT 1 FROM jobs LIMIT 1) AS any_job
    )
    SELECT d.ord,
           CASE WHEN d.gone THEN 'gone' WHEN d.paused THEN 'paused' WHEN d.accepted THEN 'stored' ELSE 'duplicate' END AS outcome,
           CASE WHEN d.gone OR d.paused THEN NULL WHEN d.accepted THEN d.final_id ELSE d.key_holder END AS message_id,
           d.endpoint_id, d.previous_last_id
    FROM decided d, (SELECT count(*) FROM jobs_announced) AS announced`;
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
