-- Inbound endpoints, their messages, idempotency keys, delivery attempts and stored payloads.

CREATE TABLE inbound_endpoints (
  id                           uuid PRIMARY KEY,
  seq                          bigint GENERATED ALWAYS AS IDENTITY,
  project_id                   uuid NOT NULL REFERENCES projects (id),
  name                         text NOT NULL,
  description                  text NOT NULL DEFAULT '',
  mode                         text NOT NULL CHECK (mode IN ('forward', 'cli')),
  -- Kept while in cli mode (shown as ""), used again if the endpoint is switched to forward.
  url                          text NOT NULL DEFAULT '',
  -- The token must be shown again in ingest_url, so it is encrypted; lookups use its hash.
  secret_token_encrypted       text NOT NULL,
  secret_token_hash            text NOT NULL UNIQUE,
  verify_static_token          boolean NOT NULL DEFAULT false,
  static_token_header_name     text,
  static_token_query_param     text,
  static_token_hash            text,
  verify_hmac                  boolean NOT NULL DEFAULT false,
  hmac_scheme                  text NOT NULL DEFAULT 'hex',
  hmac_header_name             text,
  hmac_secret_encrypted        text,
  timestamp_header_name        text,
  timestamp_tolerance_seconds  integer NOT NULL DEFAULT 300,
  verify_ip_allowlist          boolean NOT NULL DEFAULT false,
  allowed_cidrs                jsonb NOT NULL DEFAULT '[]'::jsonb,
  idempotency_header_names     jsonb NOT NULL DEFAULT '[]'::jsonb,
  ingest_response_code         integer NOT NULL DEFAULT 200 CHECK (ingest_response_code BETWEEN 200 AND 299),
  signing_enabled              boolean NOT NULL DEFAULT false,
  paused                       boolean NOT NULL DEFAULT false,
  ephemeral                    boolean NOT NULL DEFAULT false,
  expires_at                   timestamptz,
  rejected_count               bigint NOT NULL DEFAULT 0,
  -- The highest message id assigned: ids of one endpoint are assigned and committed in order
  -- under this row's lock (docs/architecture.md, Ordering).
  last_message_id              uuid,
  created_at                   timestamptz NOT NULL DEFAULT now(),
  updated_at                   timestamptz NOT NULL DEFAULT now(),
  deleted_at                   timestamptz,
  CHECK (ephemeral = (expires_at IS NOT NULL))
);
CREATE UNIQUE INDEX inbound_endpoints_seq_key ON inbound_endpoints (seq);
CREATE INDEX inbound_endpoints_project_list ON inbound_endpoints (project_id, seq DESC) WHERE deleted_at IS NULL;
CREATE INDEX inbound_endpoints_expiry ON inbound_endpoints (expires_at) WHERE ephemeral AND deleted_at IS NULL;
-- DUPLICATE_URL: non-empty URLs are unique among a project's live endpoints.
CREATE UNIQUE INDEX inbound_endpoints_project_url ON inbound_endpoints (project_id, url) WHERE url <> '' AND deleted_at IS NULL;

-- Payload bytes, by key: the default payload store (an S3-compatible store may replace it).
CREATE TABLE payloads (
  key         text PRIMARY KEY,
  data        bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE inbound_messages (
  id                     uuid PRIMARY KEY,
  project_id             uuid NOT NULL,
  inbound_endpoint_id    uuid NOT NULL REFERENCES inbound_endpoints (id),
  status                 text NOT NULL DEFAULT 'queued'
                         CHECK (status IN ('queued', 'delivering', 'succeeded', 'pending_retry', 'failed_permanent')),
  attempt_count          integer NOT NULL DEFAULT 0,
  replay_count           integer NOT NULL DEFAULT 0,
  method                 text NOT NULL,
  path                   text NOT NULL,
  query                  text NOT NULL DEFAULT '',
  content_type           text NOT NULL DEFAULT '',
  size_bytes             integer NOT NULL,
  payload_sha256         text NOT NULL,
  -- The request's header lines in order, as [name, value] pairs (repeats kept).
  raw_headers            jsonb NOT NULL,
  -- Key in the payload store; null once the payload is gone (deleted, swept).
  payload_key            text,
  idempotency_key        text,
  response_status        integer,
  response_latency_ms    integer,
  last_error             text,
  first_attempt_at       timestamptz,
  next_attempt_at        timestamptz,
  queue_wait_ms          integer,
  total_delivery_ms      integer,
  received_at            timestamptz NOT NULL,
  updated_at             timestamptz NOT NULL,
  delivered_at           timestamptz,
  failed_at              timestamptz,
  deleted_at             timestamptz,
  deleted_by_api_key_id  uuid,
  deleted_by_user_id     text,
  CHECK (deleted_by_api_key_id IS NULL OR deleted_by_user_id IS NULL)
);
-- Listen pages by id per endpoint; logs page newest first per project.
CREATE INDEX inbound_messages_endpoint_id ON inbound_messages (inbound_endpoint_id, id);
CREATE INDEX inbound_messages_project_id ON inbound_messages (project_id, id DESC);
CREATE INDEX inbound_messages_payload_sweep ON inbound_messages (deleted_at) WHERE deleted_at IS NOT NULL AND payload_key IS NOT NULL;

-- Idempotency keys of the last 24 h: one message per (endpoint, key) while the key is live.
CREATE TABLE inbound_idempotency_keys (
  inbound_endpoint_id  uuid NOT NULL,
  idempotency_key      text NOT NULL,
  message_id           uuid NOT NULL,
  expires_at           timestamptz NOT NULL,
  PRIMARY KEY (inbound_endpoint_id, idempotency_key)
);
CREATE INDEX inbound_idempotency_keys_expiry ON inbound_idempotency_keys (expires_at);

-- Attempt history of deliveries and CLI reports, for outbound and inbound messages alike.
CREATE TABLE delivery_attempts (
  id               uuid PRIMARY KEY,
  message_id       uuid NOT NULL,
  attempt_number   integer NOT NULL,
  started_at       timestamptz NOT NULL,
  response_status  integer,
  latency_ms       integer,
  error            text,
  response_body    text
);
CREATE INDEX delivery_attempts_message ON delivery_attempts (message_id, attempt_number);
