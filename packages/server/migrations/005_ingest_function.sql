-- Stores one group commit of inbound webhooks in a single autocommit call: one round trip and one
-- prepared statement for any batch size, instead of BEGIN, five statements and COMMIT.

-- The UUIDv7 `p_n` steps after `p_id` (p_n ≥ 1): the low 48 bits of its random part plus p_n, or,
-- when that would overflow, the next millisecond with counter p_n. Always above p_id, growing with p_n.
CREATE FUNCTION hookrelay_uuidv7_after(p_id uuid, p_n bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT AS $fn$
  SELECT CASE
    WHEN v.low + p_n < 281474976710656 THEN (left(v.t, 24) || lpad(to_hex(v.low + p_n), 12, '0'))::uuid
    ELSE (lpad(to_hex(v.ms + 1), 12, '0') || '7000' || '8000' || lpad(to_hex(p_n), 12, '0'))::uuid
  END
  FROM (SELECT p_id::text AS t,
               ('x' || right(p_id::text, 12))::bit(48)::bigint AS low,
               ('x' || left(replace(p_id::text, '-', ''), 12))::bit(48)::bigint AS ms) AS v;
$fn$;

-- p_items: a JSON array of the webhooks to store, each
--   { n, ord, id, endpoint_id, project_id, method, path, query, content_type, size_bytes, sha256,
--     raw_headers, idempotency_key, received_at, body_offset }
-- n: 0, 1, 2, … in array order; ord: the caller's own reference, returned as given; id: proposed by
-- the caller, growing per endpoint in arrival order; at most one item per (endpoint, idempotency
-- key). The payload key is `inbound/<proposed id>`. p_bodies: the bodies concatenated (item bytes at
-- body_offset, size_bytes long), or NULL when the payloads live in an object store and were written
-- before this call.
--
-- Holding each endpoint's row lock until commit, and storing only ids above its last committed id,
-- is what makes one endpoint's ids visible strictly in id order across processes
-- (docs/architecture.md, Ordering). When another process committed later ids meanwhile, this
-- batch's messages of that endpoint get the ids right after the committed last id instead of the
-- proposed ones, in the proposed order.
--
-- Returns one row per item: 'stored' (message_id = its id), 'duplicate' (message_id = the message
-- that holds the live idempotency key), 'paused' or 'gone'; previous_last_id is the endpoint's last
-- id before this commit. The NOTIFY names each endpoint with its new last id (`<id>:<last id>,…`).
CREATE FUNCTION hookrelay_ingest_inbound(p_items jsonb, p_bodies bytea, p_idempotency_expires_at timestamptz)
RETURNS TABLE (ord integer, outcome text, message_id uuid, endpoint_id uuid, previous_last_id uuid)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v_ids uuid[];
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
  SELECT array_agg(
           CASE WHEN e.last_message_id IS NULL OR e.last_message_id < p.first_id THEN p.id
                ELSE hookrelay_uuidv7_after(e.last_message_id, p.rank) END
           ORDER BY p.n)
    INTO v_ids
  FROM (SELECT t.n, t.id, t.endpoint_id,
               rank() OVER (PARTITION BY t.endpoint_id ORDER BY t.id) AS rank,
               min(t.id::text) OVER (PARTITION BY t.endpoint_id)::uuid AS first_id
        FROM jsonb_to_recordset(p_items) AS t (n integer, id uuid, endpoint_id uuid)) AS p
  LEFT JOIN inbound_endpoints e ON e.id = p.endpoint_id;

  -- The first claim of a key wins for 24 h; a concurrent claim of the same key waits in the
  -- unique index for the other transaction to end.
  WITH claimed AS (
    INSERT INTO inbound_idempotency_keys AS k (inbound_endpoint_id, idempotency_key, message_id, expires_at)
    SELECT t.endpoint_id, t.idempotency_key, v_ids[t.n + 1], p_idempotency_expires_at
    FROM jsonb_to_recordset(p_items) AS t (n integer, endpoint_id uuid, idempotency_key text)
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
      SELECT t.*, v_ids[t.n + 1] AS final_id, e.mode, e.paused, e.last_message_id AS previous_last_id,
             (e.id IS NULL OR e.deleted_at IS NOT NULL OR (e.expires_at IS NOT NULL AND e.expires_at <= now())) AS gone
      FROM jsonb_to_recordset(p_items) AS t (n integer, ord integer, id uuid, endpoint_id uuid, project_id uuid,
             method text, path text, query text, content_type text, size_bytes integer, sha256 text, raw_headers jsonb,
             idempotency_key text, received_at timestamptz, body_offset integer)
      LEFT JOIN inbound_endpoints e ON e.id = t.endpoint_id
    ),
    accepted AS (
      SELECT i.* FROM items i
      WHERE NOT i.gone AND NOT i.paused AND (i.idempotency_key IS NULL OR i.final_id = ANY (v_won))
    ),
    stored_messages AS (
      INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes,
        payload_sha256, raw_headers, payload_key, idempotency_key, received_at, updated_at)
      SELECT a.final_id, a.project_id, a.endpoint_id, a.method, a.path, a.query, a.content_type, a.size_bytes,
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
      FROM (SELECT a.endpoint_id, (array_agg(a.final_id ORDER BY a.final_id DESC))[1] AS last_id
            FROM accepted a GROUP BY a.endpoint_id) AS l
      WHERE e.id = l.endpoint_id
      RETURNING 1
    ),
    -- forward mode: the delivery is queued in the same commit.
    jobs AS (
      INSERT INTO delivery_jobs (message_id, kind, destination, run_at)
      SELECT a.final_id, 'inbound', a.endpoint_id::text, now() FROM accepted a WHERE a.mode = 'forward'
      ON CONFLICT (message_id) DO NOTHING
      RETURNING 1
    )
    SELECT i.ord,
           CASE WHEN i.gone THEN 'gone'
                WHEN i.paused THEN 'paused'
                WHEN i.idempotency_key IS NULL OR i.final_id = ANY (v_won) THEN 'stored'
                ELSE 'duplicate' END,
           CASE WHEN i.gone OR i.paused THEN NULL
                WHEN i.idempotency_key IS NULL OR i.final_id = ANY (v_won) THEN i.final_id
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
  WHERE e.id IN (SELECT t.endpoint_id FROM jsonb_to_recordset(p_items) AS t (n integer, endpoint_id uuid, idempotency_key text)
                 WHERE t.idempotency_key IS NULL OR v_ids[t.n + 1] = ANY (v_won))
    AND e.deleted_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > now()) AND NOT e.paused;
  IF v_notify IS NOT NULL THEN
    PERFORM pg_notify('hookrelay_inbound_messages', v_notify);
  END IF;
  IF v_forward THEN
    PERFORM pg_notify('hookrelay_deliveries', '');
  END IF;
END;
$fn$;
