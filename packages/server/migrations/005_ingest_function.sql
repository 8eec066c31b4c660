-- Stores one group commit of inbound webhooks in a single autocommit call: one round trip and one
-- prepared statement for any batch size, instead of BEGIN, five statements and COMMIT (issue 3).
--
-- p_items: a JSON array of the webhooks to store, each
--   { ord, id, endpoint_id, project_id, method, path, query, content_type, size_bytes, sha256,
--     raw_headers, idempotency_key, received_at, body_offset }
-- with ids proposed by the caller, growing per endpoint in arrival order, and at most one item per
-- (endpoint, idempotency key). p_bodies: the bodies concatenated (item bytes at body_offset, size_bytes
-- long), or NULL when the payloads live in an object store and were written before this call.
--
-- Returns one row per item: 'stored' (message_id = its id), 'duplicate' (message_id = the message
-- that holds the live idempotency key), 'paused' or 'gone'; previous_last_id is the endpoint's last
-- id before this commit. The NOTIFY names each endpoint with its new last id (`<id>:<last id>,…`). When an endpoint's last committed id is
-- not below the first id proposed for it (another process committed later ids), it stores nothing
-- and returns one 'conflict' row per such endpoint with that last id; the caller proposes ids above
-- it and calls again. Holding each endpoint's row lock until commit is what makes one endpoint's
-- ids visible strictly in id order across processes (decisions.md §5).
CREATE FUNCTION hookrelay_ingest_inbound(p_items jsonb, p_bodies bytea, p_idempotency_expires_at timestamptz)
RETURNS TABLE (ord integer, outcome text, message_id uuid, endpoint_id uuid, previous_last_id uuid)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v_won uuid[];
  v_notify text;
  v_forward boolean;
BEGIN
  -- Locks in id order: two processes' batches over the same endpoints cannot deadlock.
  PERFORM 1 FROM inbound_endpoints e
    WHERE e.id IN (SELECT (x->>'endpoint_id')::uuid FROM jsonb_array_elements(p_items) AS x)
    ORDER BY e.id FOR UPDATE;

  -- Each statement below takes a new snapshot, so it sees what a batch that held the lock before
  -- us committed.
  RETURN QUERY
    SELECT NULL::integer, 'conflict'::text, e.last_message_id, e.id, e.last_message_id
    FROM inbound_endpoints e
    JOIN (SELECT t.endpoint_id, (array_agg(t.id ORDER BY t.id))[1] AS first_id
          FROM jsonb_to_recordset(p_items) AS t (id uuid, endpoint_id uuid)
          GROUP BY t.endpoint_id) AS b ON b.endpoint_id = e.id
    WHERE e.last_message_id >= b.first_id;
  IF FOUND THEN
    RETURN;
  END IF;

  -- The first claim of a key wins for 24 h; a concurrent claim of the same key waits in the
  -- unique index for the other transaction to end.
  WITH claimed AS (
    INSERT INTO inbound_idempotency_keys AS k (inbound_endpoint_id, idempotency_key, message_id, expires_at)
    SELECT t.endpoint_id, t.idempotency_key, t.id, p_idempotency_expires_at
    FROM jsonb_to_recordset(p_items) AS t (id uuid, endpoint_id uuid, idempotency_key text)
    JOIN inbound_endpoints e ON e.id = t.endpoint_id
    WHERE t.idempotency_key IS NOT NULL
      AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > now()) AND NOT e.paused
    ON CONFLICT (inbound_endpoint_id, idempotency_key) DO UPDATE
      SET message_id = excluded.message_id, expires_at = excluded.expires_at
      WHERE k.expires_at <= now()
    RETURNING k.message_id
  )
  SELECT coalesce(array_agg(claimed.message_id), '{}') INTO v_won FROM claimed;

  RETURN QUERY
    WITH items AS (
      SELECT t.*, e.mode, e.paused, e.last_message_id AS previous_last_id,
             (e.id IS NULL OR e.deleted_at IS NOT NULL OR (e.expires_at IS NOT NULL AND e.expires_at <= now())) AS gone
      FROM jsonb_to_recordset(p_items) AS t (ord integer, id uuid, endpoint_id uuid, project_id uuid, method text,
             path text, query text, content_type text, size_bytes integer, sha256 text, raw_headers jsonb,
             idempotency_key text, received_at timestamptz, body_offset integer)
      LEFT JOIN inbound_endpoints e ON e.id = t.endpoint_id
    ),
    accepted AS (
      SELECT i.* FROM items i
      WHERE NOT i.gone AND NOT i.paused AND (i.idempotency_key IS NULL OR i.id = ANY (v_won))
    ),
    stored_messages AS (
      INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes,
        payload_sha256, raw_headers, payload_key, idempotency_key, received_at, updated_at)
      SELECT a.id, a.project_id, a.endpoint_id, a.method, a.path, a.query, a.content_type, a.size_bytes,
        a.sha256, a.raw_headers, 'inbound/' || a.id, a.idempotency_key, a.received_at, a.received_at
      FROM accepted a
      RETURNING 1
    ),
    stored_payloads AS (
      INSERT INTO payloads (key, data)
      SELECT 'inbound/' || a.id, substring(p_bodies FROM a.body_offset + 1 FOR a.size_bytes)
      FROM accepted a WHERE p_bodies IS NOT NULL
      RETURNING 1
    ),
    last_ids AS (
      UPDATE inbound_endpoints e SET last_message_id = l.last_id
      FROM (SELECT a.endpoint_id, (array_agg(a.id ORDER BY a.id DESC))[1] AS last_id FROM accepted a GROUP BY a.endpoint_id) AS l
      WHERE e.id = l.endpoint_id
      RETURNING 1
    ),
    -- forward mode: the delivery is queued in the same commit.
    jobs AS (
      INSERT INTO delivery_jobs (message_id, kind, destination, run_at)
      SELECT a.id, 'inbound', a.endpoint_id::text, now() FROM accepted a WHERE a.mode = 'forward'
      ON CONFLICT (message_id) DO NOTHING
      RETURNING 1
    )
    SELECT i.ord,
           CASE WHEN i.gone THEN 'gone'
                WHEN i.paused THEN 'paused'
                WHEN i.idempotency_key IS NULL OR i.id = ANY (v_won) THEN 'stored'
                ELSE 'duplicate' END,
           CASE WHEN i.gone OR i.paused THEN NULL
                WHEN i.idempotency_key IS NULL OR i.id = ANY (v_won) THEN i.id
                ELSE k.message_id END,
           i.endpoint_id,
           i.previous_last_id
    FROM items i
    LEFT JOIN inbound_idempotency_keys k
      ON i.idempotency_key IS NOT NULL AND k.inbound_endpoint_id = i.endpoint_id AND k.idempotency_key = i.idempotency_key;

  -- Streams on every process, and forward-mode workers, learn of the new messages when, and only
  -- when, they commit.
  SELECT string_agg(e.id::text || ':' || e.last_message_id::text, ','), bool_or(e.mode = 'forward')
    INTO v_notify, v_forward
  FROM inbound_endpoints e
  WHERE e.id IN (SELECT t.endpoint_id FROM jsonb_to_recordset(p_items) AS t (id uuid, endpoint_id uuid, idempotency_key text)
                 WHERE t.idempotency_key IS NULL OR t.id = ANY (v_won))
    AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > now()) AND NOT e.paused;
  IF v_notify IS NOT NULL THEN
    PERFORM pg_notify('hookrelay_inbound_messages', v_notify);
  END IF;
  IF v_forward THEN
    PERFORM pg_notify('hookrelay_deliveries', '');
  END IF;
END;
$fn$;
