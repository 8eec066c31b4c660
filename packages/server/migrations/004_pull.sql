-- Pull endpoints and their events (docs/api.md, Pull endpoints and events).

-- seq orders the endpoint list (newest first) and backs its keyset cursor.
CREATE TABLE pull_endpoints (
  id                 uuid PRIMARY KEY,
  seq                bigint GENERATED ALWAYS AS IDENTITY,
  project_id         uuid NOT NULL REFERENCES projects (id),
  name               text NOT NULL,
  description        text NOT NULL DEFAULT '',
  retention_days     integer NOT NULL DEFAULT 7 CHECK (retention_days BETWEEN 1 AND 90),
  -- Extraction is configured by both or by neither.
  event_type_source  text CHECK (event_type_source IN ('body', 'header')),
  event_type_path    text,
  -- Pull secret tokens are stored as SHA-256 hashes only; shown once, at create.
  secret_token_hash  text NOT NULL,
  paused             boolean NOT NULL DEFAULT false,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  deleted_at         timestamptz,
  CHECK ((event_type_source IS NULL) = (event_type_path IS NULL))
);
CREATE UNIQUE INDEX pull_endpoints_seq_key ON pull_endpoints (seq);
CREATE INDEX pull_endpoints_project_list ON pull_endpoints (project_id, seq DESC) WHERE deleted_at IS NULL;

-- received_at is the millisecond of the event's UUIDv7 id (both are taken when the webhook
-- arrives), so a time bound is also an id bound and every list query is a range scan on an index.
CREATE TABLE pull_events (
  id                     uuid PRIMARY KEY,
  project_id             uuid NOT NULL,
  endpoint_id            uuid NOT NULL REFERENCES pull_endpoints (id),
  status                 text NOT NULL DEFAULT 'stored' CHECK (status IN ('stored', 'fetched', 'delivered')),
  event_type             text,
  method                 text NOT NULL,
  query                  text NOT NULL DEFAULT '',
  content_type           text NOT NULL DEFAULT '',
  size_bytes             integer NOT NULL,
  payload_sha256         text NOT NULL,
  -- The request's header lines in order, as [name, value] pairs (repeats kept).
  raw_headers            jsonb NOT NULL,
  -- Key in the payload store; null once the payload is gone (swept after a soft delete).
  payload_key            text,
  ingest_processing_ms   integer,
  received_at            timestamptz NOT NULL,
  fetched_at             timestamptz,
  delivered_at           timestamptz,
  deleted_at             timestamptz,
  deleted_by_api_key_id  uuid,
  deleted_by_user_id     text,
  CHECK (deleted_by_api_key_id IS NULL OR deleted_by_user_id IS NULL)
);
-- Every event of an endpoint in id (= time) order, deleted ones included: counts and retention.
CREATE INDEX pull_events_endpoint_id ON pull_events (endpoint_id, id);
-- The events list and delete-all: one ordered range per status (the query merges the statuses).
CREATE INDEX pull_events_list ON pull_events (endpoint_id, status, id) WHERE deleted_at IS NULL;
CREATE INDEX pull_events_list_type ON pull_events (endpoint_id, status, event_type, id)
  WHERE deleted_at IS NULL AND event_type IS NOT NULL;
CREATE INDEX pull_events_payload_sweep ON pull_events (deleted_at) WHERE deleted_at IS NOT NULL AND payload_key IS NOT NULL;
