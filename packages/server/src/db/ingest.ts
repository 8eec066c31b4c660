import type { EventTypeSource, VerificationSettings } from '@hookrelay/shared';
import type { Sql } from './database.js';
import { DELIVERIES_CHANNEL } from './channels.js';
import { liveEndpoint } from './soft-delete.js';

/** What ingestion needs to know about an inbound endpoint, found by its secret token's hash. */
export interface IngestEndpointRow extends VerificationSettings {
  id: string;
  project_id: string;
  mode: 'forward' | 'cli';
  paused: boolean;
  /** Deleted, or ephemeral past its TTL: the ingest URL answers 410. */
  gone: boolean;
  ingest_response_code: number;
  idempotency_header_names: string[];
  static_token_hash: string | null;
  hmac_secret_encrypted: string | null;
  event_type_source: EventTypeSource | null;
  event_type_path: string | null;
  max_body_bytes: number | null;
  resign_late: boolean;
}

export async function findIngestEndpointByTokenHash(sql: Sql, tokenHash: string): Promise<IngestEndpointRow | undefined> {
  const [row] = await sql<IngestEndpointRow>`
    SELECT id, project_id, mode, paused,
           NOT ${liveEndpoint('inbound_endpoints')} AS gone,
           ingest_response_code, idempotency_header_names,
           verify_static_token, static_token_header_name, static_token_query_param, static_token_hash,
           verify_hmac, hmac_scheme, hmac_header_name, hmac_secret_encrypted,
           timestamp_header_name, timestamp_tolerance_seconds, verify_ip_allowlist, allowed_cidrs,
           event_type_source, event_type_path, max_body_bytes, resign_late
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
  event_type: string | null;
  /** The verification checks that passed (`static_token`, `hmac`, `ip_allowlist`). */
  verified: readonly string[];
  /** The `traceparent` of the request's span (docs/operating.md, Tracing); null without tracing. */
  trace_context: string | null;
  /** A body already in the blob store: its key, and the commit ends its pending upload. Null: inline. */
  payload_key: string | null;
  /** An edited replay's copy: the message it copies (null for a webhook that arrived). */
  replay_of: string | null;
  /** An edited replay's copy: whether the server signed it; null exactly when `replay_of` is. */
  replay_signed: boolean | null;
}

/** `previous_last_id`: the endpoint's last committed id before this call. */
export type IngestBatchResultRow =
  | { ord: number; outcome: 'stored' | 'duplicate'; message_id: string; endpoint_id: string; previous_last_id: string | null }
  | { ord: number; outcome: 'paused' | 'gone'; message_id: null; endpoint_id: string; previous_last_id: string | null };

/**
 * Stores a batch in one autocommit call of `hookrelay_store_inbound_batch` (sql/, its own
 * transaction, answered after the commit): the batch's endpoint rows are locked in id order and
 * read as the batch that held the lock before committed them; each endpoint's messages keep their
 * proposed ids when these are above its last committed id, and otherwise get the ids right after it
 * (another process committed later ids meanwhile), in the proposed order; idempotency keys are
 * claimed (the first claim of a key wins for 24 h; a concurrent claim waits in the unique index for
 * the other transaction to end, and learns the winner's message id from the conflict); then
 * messages, payloads (when `bodies` is given: the database store), each endpoint's new last id and
 * forward-mode delivery jobs are written, and the jobs are announced on `hookrelay_deliveries`.
 *
 * Holding each endpoint's row lock until the commit, and storing only ids above its last committed
 * id, is what makes one endpoint's ids visible strictly in id order across processes
 * (docs/architecture.md, Ordering). The NOTIFY of the new messages is the caller's, after the
 * commit (`notifyAfterCommit`): in the commit it would hold PostgreSQL's cluster-wide notify lock
 * through the WAL flush.
 */
export async function storeInboundBatch(
  sql: Sql,
  items: readonly IngestBatchItem[],
  bodies: Buffer | null,
  idempotencyExpiresAt: Date,
): Promise<IngestBatchResultRow[]> {
  return sql<IngestBatchResultRow>`
    SELECT ord, outcome, message_id, endpoint_id, previous_last_id
    FROM hookrelay_store_inbound_batch(${items as unknown as object}::jsonb, ${bodies}::bytea, ${idempotencyExpiresAt.toISOString()}::text::timestamptz)`;
}

/**
 * Stores one webhook without an idempotency key, the batch of every webhook that arrives alone, as
 * one autocommit statement instead of a call of `hookrelay_store_inbound_batch`: the same row lock,
 * ids, rows, job and NOTIFY as that function with this one webhook, and the same answer row, so
 * that both order one endpoint's messages alike (test/db/batcher.test.ts holds them equal). The lock
 * comes with the UPDATE of the endpoint's last id (READ COMMITTED re-reads the row a concurrent
 * store committed, so the id is placed above that store's), which answers the id before it through
 * `previous_last_message_id` (migration 009). One statement skips the function's separate
 * statements, its decoding of the jsonb items and a separate row lock, a measurable share of a
 * one-webhook commit (BENCHMARKS.md, Commit parts). An endpoint that is not live (paused, deleted,
 * expired, unknown) updates no row: the function then answers which, under the lock. `body` is null
 * when the payloads live in an object store.
 *
 * `mode` is the endpoint's mode as the caller last read it. For `cli` the statement has no delivery
 * job and no NOTIFY, whose table PostgreSQL would open and lock for nothing (BENCHMARKS.md, Commit
 * parts), and it stores only while the endpoint is
 * still in cli mode: one switched to forward meanwhile updates no row and goes to the function too.
 */
export async function storeInboundOne(sql: Sql, item: IngestBatchItem, body: Buffer | null, mode: 'forward' | 'cli'): Promise<IngestBatchResultRow> {
  const receivedAt = item.received_at.toISOString();
  // A forward endpoint's delivery job, announced on the deliveries channel; a cli endpoint's store
  // holds only while it is still in cli mode.
  const forward = mode === 'forward';
  const modeCheck = forward ? sql.fragment`` : sql.fragment`AND e.mode = 'cli'`;
  const job = forward
    ? sql.fragment`,
    job AS (
      INSERT INTO delivery_jobs (message_id, kind, destination, run_at)
      SELECT p.final_id, 'inbound', p.endpoint_id::text, now() FROM placed p WHERE p.mode = 'forward'
      ON CONFLICT (message_id) DO NOTHING
      RETURNING 1
    )`
    : sql.fragment``;
  const announced = forward
    ? sql.fragment`, (SELECT count(pg_notify(${DELIVERIES_CHANNEL}, '')) FROM (SELECT 1 FROM job LIMIT 1) AS any_job) AS announced`
    : sql.fragment``;
  const uploadEnded = item.payload_key === null
    ? sql.fragment``
    : sql.fragment`,
    upload_ended AS (
      DELETE FROM payload_uploads WHERE key = ${item.payload_key}::text AND EXISTS (SELECT 1 FROM placed)
    )`;
  const [row] = await sql<IngestBatchResultRow>`
    WITH placed AS (
      UPDATE inbound_endpoints e
      SET previous_last_message_id = e.last_message_id,
          last_message_id = CASE WHEN e.last_message_id IS NULL OR e.last_message_id < ${item.id}::uuid THEN ${item.id}::uuid
                                 ELSE hookrelay_uuidv7_after(e.last_message_id, 1) END
      WHERE e.id = ${item.endpoint_id}::uuid AND ${liveEndpoint('e')} AND NOT e.paused
        ${modeCheck}
      RETURNING e.id AS endpoint_id, e.mode, e.last_message_id AS final_id, e.previous_last_message_id AS previous_last_id
    ),
    stored AS (
      INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes,
        payload_sha256, raw_headers, payload_key, received_at, updated_at, event_type, verified, trace_context, replay_of, replay_signed)
      SELECT p.final_id, ${item.project_id}::uuid, p.endpoint_id, ${item.method}::text, ${item.path}::text, ${item.query}::text,
             ${item.content_type}::text, ${item.size_bytes}::integer, ${item.sha256}::text, ${item.raw_headers as unknown as object}::jsonb,
             coalesce(${item.payload_key}::text, 'inbound/' || ${item.id}::text), r.at, r.at, ${item.event_type ?? null}::text, coalesce(${item.verified as unknown as object}::jsonb, '[]'),
             ${item.trace_context}::text, ${item.replay_of}::uuid, ${item.replay_signed}::boolean
      FROM placed p, (SELECT ${receivedAt}::text::timestamptz AS at) AS r
    ),
    stored_payload AS (
      INSERT INTO payloads (key, data)
      SELECT 'inbound/' || ${item.id}::text, b.data FROM placed, (SELECT ${body}::bytea AS data) AS b WHERE b.data IS NOT NULL
    )${uploadEnded}${job}
    SELECT ${item.ord}::integer AS ord, 'stored' AS outcome, p.final_id AS message_id, p.endpoint_id, p.previous_last_id
    FROM placed p${announced}`;
  if (row !== undefined) return row;
  // No idempotency key, so the key expiry is never used.
  const [answer] = await storeInboundBatch(sql, [item], body, new Date());
  return answer!;
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
