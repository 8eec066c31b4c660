-- Migration 005's hookrelay_ingest_inbound: no process has called it since
-- hookrelay_store_inbound_batch (migration 006) took its place. The current body of every stored
-- function the server calls is in packages/server/sql/, applied after the migrations.
DROP FUNCTION IF EXISTS hookrelay_ingest_inbound(jsonb, bytea, timestamptz);
