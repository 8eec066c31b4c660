-- hookrelay_store_inbound_batch (migration 006) with a path of its own for a batch of one webhook
-- without an idempotency key, which is every batch at a low rate: simple statements on the one
-- endpoint row instead of the set-based statement every batch needs otherwise (JSON to rows, window
-- functions, idempotency claims, jobs). Same arguments, results, locks and NOTIFY, so processes of
-- the previous version call it unchanged. bench/commit-parts.mjs compares it with migration 006's
-- body.
CREATE OR REPLACE FUNCTION hookrelay_store_inbound_batch(p_items jsonb, p_bodies bytea, p_key_expires_at timestamptz)
RETURNS TABLE (ord integer, outcome text, message_id uuid, endpoint_id uuid, previous_last_id uuid)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v_item jsonb;
  v_endpoint_id uuid;
  v_id uuid;
  v_mode text;
  v_paused boolean;
  v_gone boolean;
  v_last uuid;
  v_final uuid;
BEGIN
  -- One webhook without an idempotency key: the batch of every webhook that arrives alone.
  IF jsonb_array_length(p_items) = 1 AND p_items->0->>'idempotency_key' IS NULL THEN
    v_item := p_items->0;
    v_endpoint_id := (v_item->>'endpoint_id')::uuid;
    SELECT e.mode, e.paused, e.last_message_id, (e.deleted_at IS NOT NULL OR (e.expires_at IS NOT NULL AND e.expires_at <= now()))
      INTO v_mode, v_paused, v_last, v_gone
      FROM inbound_endpoints e WHERE e.id = v_endpoint_id FOR UPDATE;
    ord := (v_item->>'ord')::integer;
    endpoint_id := v_endpoint_id;
    previous_last_id := v_last;
    IF NOT FOUND OR v_gone OR v_paused THEN
      outcome := CASE WHEN v_paused AND NOT v_gone THEN 'paused' ELSE 'gone' END;
      message_id := NULL;
      RETURN NEXT;
      RETURN;
    END IF;
    v_id := (v_item->>'id')::uuid;
    v_final := CASE WHEN v_last IS NULL OR v_last < v_id THEN v_id ELSE hookrelay_uuidv7_after(v_last, 1) END;
    INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes,
      payload_sha256, raw_headers, payload_key, received_at, updated_at)
    VALUES (v_final, (v_item->>'project_id')::uuid, v_endpoint_id, v_item->>'method', v_item->>'path', v_item->>'query',
      v_item->>'content_type', (v_item->>'size_bytes')::integer, v_item->>'sha256', v_item->'raw_headers', 'inbound/' || v_id,
      (v_item->>'received_at')::timestamptz, (v_item->>'received_at')::timestamptz);
    IF p_bodies IS NOT NULL THEN
      INSERT INTO payloads (key, data)
      VALUES ('inbound/' || v_id, substring(p_bodies FROM (v_item->>'body_offset')::integer + 1 FOR (v_item->>'size_bytes')::integer));
    END IF;
    IF v_mode = 'forward' THEN
      INSERT INTO delivery_jobs (message_id, kind, destination, run_at) VALUES (v_final, 'inbound', v_endpoint_id::text, now())
      ON CONFLICT (message_id) DO NOTHING;
      IF FOUND THEN PERFORM pg_notify('hookrelay_deliveries', ''); END IF;
    END IF;
    UPDATE inbound_endpoints SET last_message_id = v_final WHERE id = v_endpoint_id;
    outcome := 'stored';
    message_id := v_final;
    RETURN NEXT;
    RETURN;
  END IF;

  -- Any other batch.
  PERFORM 1 FROM inbound_endpoints e
    WHERE e.id IN (SELECT (x->>'endpoint_id')::uuid FROM jsonb_array_elements(p_items) AS x)
    ORDER BY e.id FOR UPDATE;

  RETURN QUERY
  WITH items AS MATERIALIZED (
    SELECT t.* FROM jsonb_to_recordset(p_items) AS t (n integer, ord integer, id uuid, endpoint_id uuid,
      project_id uuid, method text, path text, query text, content_type text, size_bytes integer, sha256 text,
      raw_headers jsonb, idempotency_key text, received_at timestamptz, body_offset integer)
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
      payload_sha256, raw_headers, payload_key, idempotency_key, received_at, updated_at)
    SELECT d.final_id, d.project_id, d.endpoint_id, d.method, d.path, d.query, d.content_type, d.size_bytes,
      d.sha256, d.raw_headers, 'inbound/' || d.id, d.idempotency_key, d.received_at, d.received_at
    FROM decided d WHERE d.accepted
  ),
  stored_payloads AS (
    INSERT INTO payloads (key, data)
    SELECT 'inbound/' || d.id, substring(p_bodies FROM d.body_offset + 1 FOR d.size_bytes)
    FROM decided d WHERE d.accepted AND p_bodies IS NOT NULL
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
