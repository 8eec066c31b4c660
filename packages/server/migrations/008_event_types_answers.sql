-- Event types and verification outcomes of inbound messages, an inbound endpoint's own event type
-- rule, the local app's answers as each CLI listener reports them, and the connected CLI streams.

-- The endpoint's event type rule, in the forms of the pull endpoints' extraction; both null means
-- provider detection (src/ingest/event-type.ts).
ALTER TABLE inbound_endpoints
  ADD COLUMN event_type_source text CHECK (event_type_source IN ('body', 'header')),
  ADD COLUMN event_type_path   text;

-- Computed at ingest: the event type (null when none could be read) and the names of the checks
-- that passed (`static_token`, `hmac`, `ip_allowlist`; [] when none is configured). Constant
-- defaults: adding them rewrites no row.
ALTER TABLE inbound_messages
  ADD COLUMN event_type text,
  ADD COLUMN verified   jsonb NOT NULL DEFAULT '[]'::jsonb;

-- The endpoint message list pages newest first on inbound_messages_endpoint_id (inbound_endpoint_id, id),
-- read backwards: a second index in the other direction would only slow every ingest down.

-- One answer per (message, listener): a later report of the same listener replaces it, and a
-- message keeps the answers of its 20 most recently answering listeners (the others are dropped
-- when a new listener answers). Headers and body are bounded by the API (16 KiB, 64 KiB).
CREATE TABLE inbound_message_answers (
  message_id               uuid NOT NULL,
  listener                 text NOT NULL,
  status                   integer,
  latency_ms               integer NOT NULL,
  error                    text,
  response_headers         jsonb NOT NULL DEFAULT '[]'::jsonb,
  response_body            bytea,
  response_body_truncated  boolean NOT NULL DEFAULT false,
  -- When this listener first answered: answers are listed oldest listener first.
  first_answered_at        timestamptz NOT NULL,
  answered_at              timestamptz NOT NULL,
  PRIMARY KEY (message_id, listener)
);

-- The CLI streams connected to each endpoint, across every server process: a row per connection,
-- added on connect and removed on close; each process refreshes `seen_at` of its own rows, so the
-- rows of a process that died stop counting once they are stale (and are deleted later).
CREATE TABLE inbound_stream_connections (
  id                   uuid PRIMARY KEY,
  inbound_endpoint_id  uuid NOT NULL,
  process_id           uuid NOT NULL,
  connected_at         timestamptz NOT NULL DEFAULT now(),
  seen_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX inbound_stream_connections_endpoint ON inbound_stream_connections (inbound_endpoint_id);
CREATE INDEX inbound_stream_connections_process ON inbound_stream_connections (process_id);

-- This migration also made hookrelay_store_inbound_batch store two more item fields, `event_type`
-- and `verified`; that body has been superseded (migration 006's note says why it is not kept here),
-- and packages/server/sql/hookrelay_store_inbound_batch.sql is the one every database runs.
