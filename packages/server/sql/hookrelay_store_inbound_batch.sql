-- One group commit of inbound webhooks in one autocommit call: storeInboundBatch in
-- src/db/ingest.ts says what it does and why; a webhook that arrives alone without an idempotency
-- key is stored by storeInboundOne's statement there instead, and comes here only when that finds
-- its endpoint not live or no longer in the mode it was read in.
--
-- p_items: a JSON array of the webhooks to store, each
--   { n, ord, id, endpoint_id, project_id, method, path, query, content_type, size_bytes, sha256,
--     raw_headers, idempotency_key, received_at, body_offset, event_type, verified, trace_context,
--     payload_key, replay_of, replay_signed }
-- n: 0, 1, 2, … in array order; ord: the caller's own reference, returned as given; id: proposed by
-- the caller, growing per endpoint in arrival order; at most one item per (endpoint, idempotency
-- key); event_type (text or null), verified (a JSON array of check names) and trace_context (the
-- W3C traceparent of the request's span) may be absent, as processes of older versions send none;
-- so may replay_of and replay_signed, which only an edited replay's copy has (both, or neither).
-- payload_key, when given, names a body already written to the blob store (src/storage/blob-store.ts),
-- whose pending upload the commit ends; otherwise the payload key is `inbound/<proposed id>`. p_bodies:
-- the other bodies concatenated (item bytes at body_offset, size_bytes long), or NULL when the
-- payloads live in an object store and were written before this call. Returns one row per item: 'stored'
-- (message_id = its id), 'duplicate' (message_id = the message that holds the live idempotency
-- key), 'paused' or 'gone'; previous_last_id is the endpoint's last id before this commit.
--
-- Two statements. The first locks the batch's endpoint rows in id order (two batches over the same
-- endpoints cannot deadlock) and waits for the batch that held them. The second does all the work
-- with a snapshot taken after that wait, so it reads the rows as the previous holder committed them
-- and updates them without PostgreSQL's re-check of rows changed after a statement began. It sends
-- no NOTIFY for the new messages: the caller does, after the commit, since a NOTIFY in the commit
-- holds PostgreSQL's cluster-wide notify lock through the WAL flush. The forward-mode jobs are
-- announced in the commit (`hookrelay_deliveries`), as the workers must not miss them.
--
-- Arguments and results stay as they are while processes of the previous version may call it
-- during a rolling upgrade.
CREATE OR REPLACE FUNCTION hookrelay_store_inbound_batch(p_items jsonb, p_bodies bytea, p_key_expires_at timestamptz)
RETURNS TABLE (ord integer, outcome text, message_id uuid, endpoint_id uuid, previous_last_id uuid)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
BEGIN
  PERFORM 1 FROM inbound_endpoints e
    WHERE e.id IN (SELECT (x->>'endpoint_id')::uuid FROM jsonb_array_elements(p_items) AS x)
    ORDER BY e.id FOR UPDATE;

  RETURN QUERY
  WITH items AS MATERIALIZED (
    SELECT t.* FROM jsonb_to_recordset(p_items) AS t (n integer, ord integer, id uuid, endpoint_id uuid,
      project_id uuid, method text, path text, query text, content_type text, size_bytes integer, sha256 text,
      raw_headers jsonb, idempotency_key text, received_at timestamptz, body_offset integer, event_type text, verified jsonb, trace_context text,
      payload_key text, replay_of uuid, replay_signed boolean)
  ),
  endpoints AS MATERIALIZED (
    SELECT e.id, e.mode, e.paused, e.last_message_id,
           (e.deleted_at IS NOT NULL OR (e.expires_at IS NOT NULL AND e.expires_at <= now())) AS gone
    FROM inbound_endpoints e
    WHERE e.id IN (SELECT i.endpoint_id FROM items i)
  ),
  placed AS MATERIALIZED (
    SELECT i.*, l.mode, l.last_message_id AS previous_last_id,
           (l.id IS NULL OR l.gone) AS gone, coalesce(l.paused, false) AS paused,
           CASE WHEN l.last_message_id IS NULL OR l.last_message_id < (min(i.id::text) OVER w)::uuid THEN i.id
                ELSE hookrelay_uuidv7_after(l.last_message_id, rank() OVER (w ORDER BY i.id)) END AS final_id
    FROM items i LEFT JOIN endpoints l ON l.id = i.endpoint_id
    WINDOW w AS (PARTITION BY i.endpoint_id)
  ),
  claims AS (
    INSERT INTO inbound_idempotency_keys AS k (inbound_endpoint_id, idempotency_key, message_id, expires_at)
    SELECT p.endpoint_id, p.idempotency_key, p.final_id, p_key_expires_at
    FROM placed p WHERE p.idempotency_key IS NOT NULL AND NOT p.gone AND NOT p.paused
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
      payload_sha256, raw_headers, payload_key, idempotency_key, received_at, updated_at, event_type, verified, trace_context,
      replay_of, replay_signed)
    SELECT d.final_id, d.project_id, d.endpoint_id, d.method, d.path, d.query, d.content_type, d.size_bytes,
      d.sha256, d.raw_headers, coalesce(d.payload_key, 'inbound/' || d.id), d.idempotency_key, d.received_at, d.received_at,
      d.event_type, coalesce(d.verified, '[]'::jsonb), d.trace_context, d.replay_of, d.replay_signed
    FROM decided d WHERE d.accepted
  ),
  stored_payloads AS (
    INSERT INTO payloads (key, data)
    SELECT 'inbound/' || d.id, substring(p_bodies FROM d.body_offset + 1 FOR d.size_bytes)
    FROM decided d WHERE d.accepted AND p_bodies IS NOT NULL AND d.payload_key IS NULL
  ),
  uploads_ended AS (
    DELETE FROM payload_uploads u USING decided d WHERE d.accepted AND u.key = d.payload_key
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
  FROM decided d, (SELECT count(*) FROM jobs_announced) AS announced;
END;
$fn$;
