-- bench/commit-parts.mjs: the one-webhook path of hookrelay_store_inbound_batch (migration 008) with
-- typed arguments instead of a jsonb array of items, to measure what decoding the items costs.
CREATE OR REPLACE FUNCTION bench_store_inbound_one(
  p_id uuid, p_endpoint_id uuid, p_project_id uuid, p_method text, p_path text, p_query text, p_content_type text,
  p_size_bytes integer, p_sha256 text, p_raw_headers jsonb, p_received_at timestamptz, p_event_type text, p_verified jsonb, p_body bytea,
  OUT outcome text, OUT message_id uuid, OUT previous_last_id uuid)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_mode text; v_paused boolean; v_gone boolean; v_last uuid; v_final uuid;
BEGIN
  SELECT e.mode, e.paused, e.last_message_id, (e.deleted_at IS NOT NULL OR (e.expires_at IS NOT NULL AND e.expires_at <= now()))
    INTO v_mode, v_paused, v_last, v_gone
    FROM inbound_endpoints e WHERE e.id = p_endpoint_id FOR UPDATE;
  previous_last_id := v_last;
  IF NOT FOUND OR v_gone OR v_paused THEN
    outcome := CASE WHEN v_paused AND NOT v_gone THEN 'paused' ELSE 'gone' END;
    RETURN;
  END IF;
  v_final := CASE WHEN v_last IS NULL OR v_last < p_id THEN p_id ELSE hookrelay_uuidv7_after(v_last, 1) END;
  INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, query, content_type, size_bytes,
    payload_sha256, raw_headers, payload_key, received_at, updated_at, event_type, verified)
  VALUES (v_final, p_project_id, p_endpoint_id, p_method, p_path, p_query, p_content_type, p_size_bytes, p_sha256, p_raw_headers,
    'inbound/' || p_id, p_received_at, p_received_at, p_event_type, coalesce(p_verified, '[]'::jsonb));
  IF p_body IS NOT NULL THEN
    INSERT INTO payloads (key, data) VALUES ('inbound/' || p_id, p_body);
  END IF;
  IF v_mode = 'forward' THEN
    INSERT INTO delivery_jobs (message_id, kind, destination, run_at) VALUES (v_final, 'inbound', p_endpoint_id::text, now())
    ON CONFLICT (message_id) DO NOTHING;
    IF FOUND THEN PERFORM pg_notify('hookrelay_deliveries', ''); END IF;
  END IF;
  UPDATE inbound_endpoints SET last_message_id = v_final WHERE id = p_endpoint_id;
  outcome := 'stored';
  message_id := v_final;
END;
$fn$;
