-- The schema of a freshly migrated hookrelay database, read from its catalog. Written by
-- `pnpm schema:dump` (packages/server/scripts/dump-schema.mjs); test/db/schema.test.ts holds
-- it equal to what the migrations and packages/server/sql/ make, on PostgreSQL and on PGlite.
-- Nothing runs this file: it is the current schema in one place, to read.

-- migrations applied (schema_migrations):
--   001_foundation
--   002_inbound
--   003_outbound_messages
--   004_pull
--   005_ingest_function
--   006_store_inbound_batch
--   007_store_inbound_one
--   008_event_types_answers
--   009_previous_last_message_id
--   010_inbound_messages_endpoint_fk
--   011_encryption_key_check
--   012_result_ids
--   013_drop_ingest_inbound
--   014_ingest_rejections
--   015_trace_context
--   016_max_body_bytes
--   017_streamed_payloads
--   018_pull_ephemeral
--   019_encryption_key_rotation
--   020_project_deletion
--   021_events_fanout
--   022_event_types
--   023_message_retention
--   024_resign_late
--   025_endpoint_auto_pause
--   026_bulk_jobs
--   027_edited_replays
--   028_portal_links
--   029_outbound_messages_fks

CREATE TABLE api_keys (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    key_hash text NOT NULL,
    key_hint text NOT NULL,
    name text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone
);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
CREATE INDEX api_keys_project ON public.api_keys USING btree (project_id);

CREATE TABLE bulk_jobs (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    kind text NOT NULL,
    endpoint_id text,
    owner_id text,
    inbound_endpoint_id uuid,
    event_type text,
    statuses text[],
    time_from timestamp with time zone NOT NULL,
    time_to timestamp with time zone,
    status text NOT NULL,
    matched integer NOT NULL,
    done integer DEFAULT 0 NOT NULL,
    skipped integer DEFAULT 0 NOT NULL,
    failed integer DEFAULT 0 NOT NULL,
    last_error text,
    after_id uuid,
    locked_by text,
    locked_until timestamp with time zone,
    lease_id uuid,
    claims integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    finished_at timestamp with time zone
);
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_check CHECK (((kind = 'inbound'::text) = (inbound_endpoint_id IS NOT NULL)));
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_check1 CHECK (((locked_until IS NULL) = (lease_id IS NULL)));
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_check2 CHECK (((status = 'running'::text) = (finished_at IS NULL)));
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_inbound_endpoint_id_fkey FOREIGN KEY (inbound_endpoint_id) REFERENCES inbound_endpoints(id);
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_kind_check CHECK ((kind = ANY (ARRAY['outbound'::text, 'inbound'::text])));
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_pkey PRIMARY KEY (id);
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
ALTER TABLE bulk_jobs ADD CONSTRAINT bulk_jobs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'done'::text, 'cancelled'::text])));
CREATE INDEX bulk_jobs_project_id ON public.bulk_jobs USING btree (project_id, id DESC);
CREATE INDEX bulk_jobs_running ON public.bulk_jobs USING btree (updated_at, id) WHERE (status = 'running'::text);

CREATE TABLE delivery_attempts (
    id uuid NOT NULL,
    message_id uuid NOT NULL,
    attempt_number integer NOT NULL,
    started_at timestamp with time zone NOT NULL,
    response_status integer,
    latency_ms integer,
    error text,
    response_body text,
    worker_id text,
    result_id uuid,
    resigned boolean DEFAULT false NOT NULL
);
ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id);
CREATE INDEX delivery_attempts_message ON public.delivery_attempts USING btree (message_id, attempt_number);
CREATE UNIQUE INDEX delivery_attempts_result ON public.delivery_attempts USING btree (message_id, result_id) WHERE (result_id IS NOT NULL);

CREATE TABLE delivery_jobs (
    message_id uuid NOT NULL,
    kind text NOT NULL,
    destination text NOT NULL,
    run_at timestamp with time zone NOT NULL,
    attempt_base integer DEFAULT 0 NOT NULL,
    rerun boolean DEFAULT false NOT NULL,
    locked_by text,
    locked_until timestamp with time zone,
    lease_id uuid,
    claims integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE delivery_jobs ADD CONSTRAINT delivery_jobs_check CHECK (((locked_until IS NULL) = (lease_id IS NULL)));
ALTER TABLE delivery_jobs ADD CONSTRAINT delivery_jobs_kind_check CHECK ((kind = ANY (ARRAY['outbound'::text, 'inbound'::text])));
ALTER TABLE delivery_jobs ADD CONSTRAINT delivery_jobs_pkey PRIMARY KEY (message_id);
CREATE INDEX delivery_jobs_destination ON public.delivery_jobs USING btree (destination);
CREATE INDEX delivery_jobs_due ON public.delivery_jobs USING btree (run_at, message_id) WHERE (locked_until IS NULL);
CREATE INDEX delivery_jobs_leased ON public.delivery_jobs USING btree (locked_until) WHERE (locked_until IS NOT NULL);

CREATE TABLE encryption_key_check (
    singleton boolean DEFAULT true NOT NULL,
    check_value text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    rotating_check_value text
);
ALTER TABLE encryption_key_check ADD CONSTRAINT encryption_key_check_pkey PRIMARY KEY (singleton);
ALTER TABLE encryption_key_check ADD CONSTRAINT encryption_key_check_singleton_check CHECK (singleton);

CREATE TABLE endpoint_subscriptions (
    endpoint_id text NOT NULL,
    project_id uuid NOT NULL,
    owner_key text NOT NULL,
    glob text NOT NULL,
    prefix text NOT NULL,
    pattern text NOT NULL,
    reserved boolean NOT NULL
);
ALTER TABLE endpoint_subscriptions ADD CONSTRAINT endpoint_subscriptions_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES endpoints(id);
ALTER TABLE endpoint_subscriptions ADD CONSTRAINT endpoint_subscriptions_pkey PRIMARY KEY (endpoint_id, glob);
CREATE INDEX endpoint_subscriptions_match ON public.endpoint_subscriptions USING btree (project_id, owner_key, prefix);

CREATE TABLE endpoints (
    id text NOT NULL,
    seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    project_id uuid NOT NULL,
    url text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    rate_limit_rps integer DEFAULT 0 NOT NULL,
    burst integer DEFAULT 0 NOT NULL,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    ephemeral boolean DEFAULT false NOT NULL,
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    rate_limit_tat timestamp with time zone,
    owner_id text,
    event_types text[],
    channels text[],
    retention_days integer,
    paused_reason text,
    paused_at timestamp with time zone,
    failing_since timestamp with time zone,
    failed_messages integer DEFAULT 0 NOT NULL
);
ALTER TABLE endpoints ADD CONSTRAINT endpoints_burst_check CHECK (((burst >= 0) AND (burst <= 10000)));
ALTER TABLE endpoints ADD CONSTRAINT endpoints_check CHECK ((ephemeral = (expires_at IS NOT NULL)));
ALTER TABLE endpoints ADD CONSTRAINT endpoints_id_check CHECK ((id ~ '^ep_[a-f0-9]{32}$'::text));
ALTER TABLE endpoints ADD CONSTRAINT endpoints_paused_reason CHECK ((((paused_reason IS NOT NULL) = paused) AND ((paused_at IS NOT NULL) = paused)));
ALTER TABLE endpoints ADD CONSTRAINT endpoints_paused_reason_check CHECK ((paused_reason = ANY (ARRAY['manual'::text, 'failing'::text])));
ALTER TABLE endpoints ADD CONSTRAINT endpoints_pkey PRIMARY KEY (id);
ALTER TABLE endpoints ADD CONSTRAINT endpoints_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
ALTER TABLE endpoints ADD CONSTRAINT endpoints_rate_limit_rps_check CHECK (((rate_limit_rps >= 0) AND (rate_limit_rps <= 1000)));
ALTER TABLE endpoints ADD CONSTRAINT endpoints_retention_days_check CHECK (((retention_days >= 1) AND (retention_days <= 3650)));
CREATE INDEX endpoints_expiry ON public.endpoints USING btree (expires_at) WHERE (ephemeral AND (deleted_at IS NULL));
CREATE INDEX endpoints_owner_list ON public.endpoints USING btree (project_id, owner_id, seq DESC) WHERE (deleted_at IS NULL);
CREATE INDEX endpoints_project_list ON public.endpoints USING btree (project_id, seq DESC) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX endpoints_seq_key ON public.endpoints USING btree (seq);
CREATE TRIGGER endpoints_drop_subscriptions AFTER UPDATE OF deleted_at ON public.endpoints FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION hookrelay_drop_endpoint_subscriptions();
CREATE TRIGGER endpoints_wake_delivery_jobs AFTER UPDATE OF paused, deleted_at ON public.endpoints FOR EACH ROW WHEN (((old.paused AND (NOT new.paused)) OR ((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL)))) EXECUTE FUNCTION hookrelay_wake_destination_jobs();

CREATE TABLE event_types (
    project_id uuid NOT NULL,
    name text COLLATE "C" NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    payload_schema json,
    example json,
    archived boolean DEFAULT false NOT NULL,
    revision integer DEFAULT 1 NOT NULL,
    json_bytes integer GENERATED ALWAYS AS ((COALESCE(octet_length((payload_schema)::text), 0) + COALESCE(octet_length((example)::text), 0))) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE event_types ADD CONSTRAINT event_types_name_check CHECK (((name ~ '^[A-Za-z0-9._:/-]+$'::text) AND (length(name) <= 256) AND (lower(name) !~~ 'hookrelay.%'::text)));
ALTER TABLE event_types ADD CONSTRAINT event_types_pkey PRIMARY KEY (project_id, name);
ALTER TABLE event_types ADD CONSTRAINT event_types_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);

CREATE TABLE events (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    event_type text NOT NULL,
    owner_id text,
    channels text[] NOT NULL,
    idempotency_key text,
    request_sha256 text NOT NULL,
    payload_format text NOT NULL,
    content_type text NOT NULL,
    size_bytes integer NOT NULL,
    payload_sha256 text NOT NULL,
    payload_key text NOT NULL,
    message_count integer NOT NULL,
    created_at timestamp with time zone NOT NULL
);
ALTER TABLE events ADD CONSTRAINT events_payload_format_check CHECK ((payload_format = ANY (ARRAY['json'::text, 'text'::text])));
ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id);
ALTER TABLE events ADD CONSTRAINT events_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
CREATE INDEX events_idempotency ON public.events USING btree (project_id, idempotency_key, created_at DESC) WHERE (idempotency_key IS NOT NULL);
CREATE INDEX events_project_id ON public.events USING btree (project_id, id DESC);
CREATE INDEX events_project_owner ON public.events USING btree (project_id, owner_id, id DESC);
CREATE INDEX events_project_type ON public.events USING btree (project_id, event_type, id DESC);

CREATE TABLE inbound_endpoints (
    id uuid NOT NULL,
    seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    project_id uuid NOT NULL,
    name text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    mode text NOT NULL,
    url text DEFAULT ''::text NOT NULL,
    secret_token_encrypted text NOT NULL,
    secret_token_hash text NOT NULL,
    verify_static_token boolean DEFAULT false NOT NULL,
    static_token_header_name text,
    static_token_query_param text,
    static_token_hash text,
    verify_hmac boolean DEFAULT false NOT NULL,
    hmac_scheme text DEFAULT 'hex'::text NOT NULL,
    hmac_header_name text,
    hmac_secret_encrypted text,
    timestamp_header_name text,
    timestamp_tolerance_seconds integer DEFAULT 300 NOT NULL,
    verify_ip_allowlist boolean DEFAULT false NOT NULL,
    allowed_cidrs jsonb DEFAULT '[]'::jsonb NOT NULL,
    idempotency_header_names jsonb DEFAULT '[]'::jsonb NOT NULL,
    ingest_response_code integer DEFAULT 200 NOT NULL,
    signing_enabled boolean DEFAULT false NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    ephemeral boolean DEFAULT false NOT NULL,
    expires_at timestamp with time zone,
    rejected_count bigint DEFAULT 0 NOT NULL,
    last_message_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    event_type_source text,
    event_type_path text,
    previous_last_message_id uuid,
    rejections_dropped_count bigint DEFAULT 0 NOT NULL,
    max_body_bytes integer,
    retention_days integer,
    resign_late boolean DEFAULT true NOT NULL
);
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_check CHECK ((ephemeral = (expires_at IS NOT NULL)));
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_event_type_source_check CHECK ((event_type_source = ANY (ARRAY['body'::text, 'header'::text])));
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_ingest_response_code_check CHECK (((ingest_response_code >= 200) AND (ingest_response_code <= 299)));
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_max_body_bytes_check CHECK ((max_body_bytes > 0));
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_mode_check CHECK ((mode = ANY (ARRAY['forward'::text, 'cli'::text])));
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_pkey PRIMARY KEY (id);
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_retention_days_check CHECK (((retention_days >= 1) AND (retention_days <= 3650)));
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_secret_token_hash_key UNIQUE (secret_token_hash);
CREATE INDEX inbound_endpoints_expiry ON public.inbound_endpoints USING btree (expires_at) WHERE (ephemeral AND (deleted_at IS NULL));
CREATE INDEX inbound_endpoints_project_list ON public.inbound_endpoints USING btree (project_id, seq DESC) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX inbound_endpoints_project_url ON public.inbound_endpoints USING btree (project_id, url) WHERE ((url <> ''::text) AND (deleted_at IS NULL));
CREATE UNIQUE INDEX inbound_endpoints_seq_key ON public.inbound_endpoints USING btree (seq);
CREATE TRIGGER inbound_endpoints_drop_rejections AFTER UPDATE OF deleted_at ON public.inbound_endpoints FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION hookrelay_drop_inbound_rejections();
CREATE TRIGGER inbound_endpoints_wake_delivery_jobs AFTER UPDATE OF deleted_at, mode ON public.inbound_endpoints FOR EACH ROW WHEN ((((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL)) OR ((old.mode = 'forward'::text) AND (new.mode <> 'forward'::text)))) EXECUTE FUNCTION hookrelay_wake_destination_jobs();

CREATE TABLE inbound_idempotency_keys (
    inbound_endpoint_id uuid NOT NULL,
    idempotency_key text NOT NULL,
    message_id uuid NOT NULL,
    expires_at timestamp with time zone NOT NULL
);
ALTER TABLE inbound_idempotency_keys ADD CONSTRAINT inbound_idempotency_keys_pkey PRIMARY KEY (inbound_endpoint_id, idempotency_key);
CREATE INDEX inbound_idempotency_keys_expiry ON public.inbound_idempotency_keys USING btree (expires_at);

CREATE TABLE inbound_message_answers (
    message_id uuid NOT NULL,
    listener text NOT NULL,
    status integer,
    latency_ms integer NOT NULL,
    error text,
    response_headers jsonb DEFAULT '[]'::jsonb NOT NULL,
    response_body bytea,
    response_body_truncated boolean DEFAULT false NOT NULL,
    first_answered_at timestamp with time zone NOT NULL,
    answered_at timestamp with time zone NOT NULL,
    resigned boolean DEFAULT false NOT NULL
);
ALTER TABLE inbound_message_answers ADD CONSTRAINT inbound_message_answers_pkey PRIMARY KEY (message_id, listener);

CREATE TABLE inbound_messages (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    inbound_endpoint_id uuid NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    replay_count integer DEFAULT 0 NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    query text DEFAULT ''::text NOT NULL,
    content_type text DEFAULT ''::text NOT NULL,
    size_bytes integer NOT NULL,
    payload_sha256 text NOT NULL,
    raw_headers jsonb NOT NULL,
    payload_key text,
    idempotency_key text,
    response_status integer,
    response_latency_ms integer,
    last_error text,
    first_attempt_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    queue_wait_ms integer,
    total_delivery_ms integer,
    received_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    delivered_at timestamp with time zone,
    failed_at timestamp with time zone,
    deleted_at timestamp with time zone,
    deleted_by_api_key_id uuid,
    deleted_by_user_id text,
    event_type text,
    verified jsonb DEFAULT '[]'::jsonb NOT NULL,
    trace_context text,
    replay_of uuid,
    replay_signed boolean
);
ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_check CHECK (((deleted_by_api_key_id IS NULL) OR (deleted_by_user_id IS NULL)));
ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_pkey PRIMARY KEY (id);
ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_replay_copy CHECK (((replay_of IS NULL) = (replay_signed IS NULL)));
ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'delivering'::text, 'succeeded'::text, 'pending_retry'::text, 'failed_permanent'::text])));
CREATE INDEX inbound_messages_endpoint_id ON public.inbound_messages USING btree (inbound_endpoint_id, id);
CREATE INDEX inbound_messages_payload_sweep ON public.inbound_messages USING btree (deleted_at) WHERE ((deleted_at IS NOT NULL) AND (payload_key IS NOT NULL));
CREATE INDEX inbound_messages_project_id ON public.inbound_messages USING btree (project_id, id DESC);

CREATE TABLE inbound_stream_connections (
    id uuid NOT NULL,
    inbound_endpoint_id uuid NOT NULL,
    process_id uuid NOT NULL,
    connected_at timestamp with time zone DEFAULT now() NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE inbound_stream_connections ADD CONSTRAINT inbound_stream_connections_pkey PRIMARY KEY (id);
CREATE INDEX inbound_stream_connections_endpoint ON public.inbound_stream_connections USING btree (inbound_endpoint_id);
CREATE INDEX inbound_stream_connections_process ON public.inbound_stream_connections USING btree (process_id);

CREATE TABLE ingest_rejections (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    endpoint_kind text NOT NULL,
    inbound_endpoint_id uuid,
    pull_endpoint_id uuid,
    endpoint_id uuid GENERATED ALWAYS AS (COALESCE(inbound_endpoint_id, pull_endpoint_id)) STORED,
    received_at timestamp with time zone NOT NULL,
    reason text NOT NULL,
    detail text NOT NULL,
    status integer NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    query text NOT NULL,
    raw_headers jsonb NOT NULL,
    size_bytes bigint NOT NULL,
    body_sha256 text,
    body_prefix bytea NOT NULL,
    body_truncated boolean NOT NULL,
    source_address text NOT NULL
);
ALTER TABLE ingest_rejections ADD CONSTRAINT ingest_rejections_check CHECK (((endpoint_kind = 'inbound'::text) = (inbound_endpoint_id IS NOT NULL)));
ALTER TABLE ingest_rejections ADD CONSTRAINT ingest_rejections_check1 CHECK (((endpoint_kind = 'pull'::text) = (pull_endpoint_id IS NOT NULL)));
ALTER TABLE ingest_rejections ADD CONSTRAINT ingest_rejections_endpoint_kind_check CHECK ((endpoint_kind = ANY (ARRAY['inbound'::text, 'pull'::text])));
ALTER TABLE ingest_rejections ADD CONSTRAINT ingest_rejections_inbound_endpoint_id_fkey FOREIGN KEY (inbound_endpoint_id) REFERENCES inbound_endpoints(id) ON DELETE CASCADE;
ALTER TABLE ingest_rejections ADD CONSTRAINT ingest_rejections_pkey PRIMARY KEY (id);
ALTER TABLE ingest_rejections ADD CONSTRAINT ingest_rejections_pull_endpoint_id_fkey FOREIGN KEY (pull_endpoint_id) REFERENCES pull_endpoints(id) ON DELETE CASCADE;
CREATE INDEX ingest_rejections_endpoint ON public.ingest_rejections USING btree (endpoint_id, id);
CREATE INDEX ingest_rejections_endpoint_reason ON public.ingest_rejections USING btree (endpoint_id, reason, id);

CREATE TABLE outbound_messages (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    endpoint_id text NOT NULL,
    event_type text,
    idempotency_key text,
    request_sha256 text NOT NULL,
    payload_format text NOT NULL,
    content_type text NOT NULL,
    size_bytes integer NOT NULL,
    payload_sha256 text NOT NULL,
    payload_key text,
    status text DEFAULT 'queued'::text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    response_status integer,
    response_latency_ms integer,
    processing_ms integer,
    last_error text,
    first_attempt_at timestamp with time zone,
    next_attempt_at timestamp with time zone,
    queue_wait_ms integer,
    total_delivery_ms integer,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    delivered_at timestamp with time zone,
    failed_at timestamp with time zone,
    deleted_at timestamp with time zone,
    deleted_by_api_key_id uuid,
    deleted_by_user_id text,
    event_id uuid
);
ALTER TABLE outbound_messages ADD CONSTRAINT outbound_messages_check CHECK (((deleted_by_api_key_id IS NULL) OR (deleted_by_user_id IS NULL)));
ALTER TABLE outbound_messages ADD CONSTRAINT outbound_messages_payload_format_check CHECK ((payload_format = ANY (ARRAY['json'::text, 'text'::text])));
ALTER TABLE outbound_messages ADD CONSTRAINT outbound_messages_pkey PRIMARY KEY (id);
ALTER TABLE outbound_messages ADD CONSTRAINT outbound_messages_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'delivering'::text, 'succeeded'::text, 'pending_retry'::text, 'failed_permanent'::text])));
CREATE INDEX outbound_messages_endpoint_id ON public.outbound_messages USING btree (endpoint_id, id DESC);
CREATE INDEX outbound_messages_event ON public.outbound_messages USING btree (event_id, id) WHERE (event_id IS NOT NULL);
CREATE INDEX outbound_messages_idempotency ON public.outbound_messages USING btree (project_id, idempotency_key, created_at DESC) WHERE (idempotency_key IS NOT NULL);
CREATE INDEX outbound_messages_payload_sweep ON public.outbound_messages USING btree (deleted_at) WHERE ((deleted_at IS NOT NULL) AND (payload_key IS NOT NULL));
CREATE INDEX outbound_messages_project_id ON public.outbound_messages USING btree (project_id, id DESC);

CREATE TABLE payload_chunks (
    key text NOT NULL,
    seq integer NOT NULL,
    data bytea NOT NULL STORAGE EXTERNAL
);
ALTER TABLE payload_chunks ADD CONSTRAINT payload_chunks_pkey PRIMARY KEY (key, seq);
ALTER TABLE payload_chunks ADD CONSTRAINT payload_chunks_seq_check CHECK ((seq >= 0));

CREATE TABLE payload_removals (
    key text NOT NULL
);
ALTER TABLE payload_removals ADD CONSTRAINT payload_removals_pkey PRIMARY KEY (key);

CREATE TABLE payload_uploads (
    key text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE payload_uploads ADD CONSTRAINT payload_uploads_pkey PRIMARY KEY (key);
CREATE INDEX payload_uploads_started ON public.payload_uploads USING btree (started_at);

CREATE TABLE payloads (
    key text NOT NULL,
    data bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE payloads ADD CONSTRAINT payloads_pkey PRIMARY KEY (key);

CREATE TABLE portal_links (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    owner_id text NOT NULL,
    token_hash text NOT NULL,
    read_only boolean NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone
);
ALTER TABLE portal_links ADD CONSTRAINT portal_links_pkey PRIMARY KEY (id);
ALTER TABLE portal_links ADD CONSTRAINT portal_links_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
ALTER TABLE portal_links ADD CONSTRAINT portal_links_token_hash_key UNIQUE (token_hash);
CREATE INDEX portal_links_project ON public.portal_links USING btree (project_id, id DESC);
CREATE INDEX portal_links_project_owner ON public.portal_links USING btree (project_id, owner_id, id DESC);

CREATE TABLE projects (
    id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);
ALTER TABLE projects ADD CONSTRAINT projects_pkey PRIMARY KEY (id);
CREATE UNIQUE INDEX projects_name_key ON public.projects USING btree (name) WHERE (deleted_at IS NULL);

CREATE TABLE pull_endpoints (
    id uuid NOT NULL,
    seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    project_id uuid NOT NULL,
    name text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    retention_days integer DEFAULT 7 NOT NULL,
    event_type_source text,
    event_type_path text,
    secret_token_hash text NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    rejected_count bigint DEFAULT 0 NOT NULL,
    rejections_dropped_count bigint DEFAULT 0 NOT NULL,
    max_body_bytes integer,
    ephemeral boolean DEFAULT false NOT NULL,
    expires_at timestamp with time zone
);
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_check CHECK (((event_type_source IS NULL) = (event_type_path IS NULL)));
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_ephemeral_expiry CHECK ((ephemeral = (expires_at IS NOT NULL)));
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_event_type_source_check CHECK ((event_type_source = ANY (ARRAY['body'::text, 'header'::text])));
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_max_body_bytes_check CHECK ((max_body_bytes > 0));
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_pkey PRIMARY KEY (id);
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_retention_days_check CHECK (((retention_days >= 1) AND (retention_days <= 90)));
CREATE INDEX pull_endpoints_expiry ON public.pull_endpoints USING btree (expires_at) WHERE (ephemeral AND (deleted_at IS NULL));
CREATE INDEX pull_endpoints_project_list ON public.pull_endpoints USING btree (project_id, seq DESC) WHERE (deleted_at IS NULL);
CREATE UNIQUE INDEX pull_endpoints_seq_key ON public.pull_endpoints USING btree (seq);
CREATE TRIGGER pull_endpoints_drop_rejections AFTER UPDATE OF deleted_at ON public.pull_endpoints FOR EACH ROW WHEN (((old.deleted_at IS NULL) AND (new.deleted_at IS NOT NULL))) EXECUTE FUNCTION hookrelay_drop_pull_rejections();

CREATE TABLE pull_events (
    id uuid NOT NULL,
    project_id uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    status text DEFAULT 'stored'::text NOT NULL,
    event_type text,
    method text NOT NULL,
    query text DEFAULT ''::text NOT NULL,
    content_type text DEFAULT ''::text NOT NULL,
    size_bytes integer NOT NULL,
    payload_sha256 text NOT NULL,
    raw_headers jsonb NOT NULL,
    payload_key text,
    ingest_processing_ms integer,
    received_at timestamp with time zone NOT NULL,
    fetched_at timestamp with time zone,
    delivered_at timestamp with time zone,
    deleted_at timestamp with time zone,
    deleted_by_api_key_id uuid,
    deleted_by_user_id text
);
ALTER TABLE pull_events ADD CONSTRAINT pull_events_check CHECK (((deleted_by_api_key_id IS NULL) OR (deleted_by_user_id IS NULL)));
ALTER TABLE pull_events ADD CONSTRAINT pull_events_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES pull_endpoints(id);
ALTER TABLE pull_events ADD CONSTRAINT pull_events_pkey PRIMARY KEY (id);
ALTER TABLE pull_events ADD CONSTRAINT pull_events_status_check CHECK ((status = ANY (ARRAY['stored'::text, 'fetched'::text, 'delivered'::text])));
CREATE INDEX pull_events_endpoint_id ON public.pull_events USING btree (endpoint_id, id);
CREATE INDEX pull_events_list ON public.pull_events USING btree (endpoint_id, status, id) WHERE (deleted_at IS NULL);
CREATE INDEX pull_events_list_type ON public.pull_events USING btree (endpoint_id, status, event_type, id) WHERE ((deleted_at IS NULL) AND (event_type IS NOT NULL));
CREATE INDEX pull_events_payload_sweep ON public.pull_events USING btree (deleted_at) WHERE ((deleted_at IS NOT NULL) AND (payload_key IS NOT NULL));

CREATE TABLE schema_current_sql (
    name text NOT NULL,
    sha256 text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    replaced_at timestamp with time zone
);
ALTER TABLE schema_current_sql ADD CONSTRAINT schema_current_sql_pkey PRIMARY KEY (name, sha256);

CREATE TABLE schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE schema_migrations ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

CREATE TABLE signing_keys (
    id text NOT NULL,
    owner_id text NOT NULL,
    secret_encrypted text NOT NULL,
    key_hint text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone
);
ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_id_check CHECK ((id ~ '^sk_[a-f0-9]+$'::text));
ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_pkey PRIMARY KEY (id);
CREATE INDEX signing_keys_owner ON public.signing_keys USING btree (owner_id, created_at DESC);

CREATE SEQUENCE endpoints_seq_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1 OWNED BY endpoints.seq (identity);
CREATE SEQUENCE inbound_endpoints_seq_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1 OWNED BY inbound_endpoints.seq (identity);
CREATE SEQUENCE pull_endpoints_seq_seq AS bigint START 1 INCREMENT 1 MINVALUE 1 MAXVALUE 9223372036854775807 CACHE 1 OWNED BY pull_endpoints.seq (identity);

CREATE OR REPLACE FUNCTION public.hookrelay_drop_endpoint_subscriptions()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM endpoint_subscriptions WHERE endpoint_id = NEW.id;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.hookrelay_drop_inbound_rejections()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM ingest_rejections WHERE inbound_endpoint_id = NEW.id;
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.hookrelay_drop_pull_rejections()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  DELETE FROM ingest_rejections WHERE pull_endpoint_id = NEW.id;
  RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION public.hookrelay_store_inbound_batch(p_items jsonb, p_bodies bytea, p_key_expires_at timestamp with time zone)
 RETURNS TABLE(ord integer, outcome text, message_id uuid, endpoint_id uuid, previous_last_id uuid)
 LANGUAGE plpgsql
AS $function$
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
$function$;

CREATE OR REPLACE FUNCTION public.hookrelay_uuidv7_after(p_id uuid, p_n bigint)
 RETURNS uuid
 LANGUAGE sql
 IMMUTABLE STRICT
AS $function$
  SELECT (
    lpad(to_hex(('x' || substr(p_id::text, 1, 8) || substr(p_id::text, 10, 4))::bit(48)::bigint
                + ((('x' || substr(p_id::text, 16, 3))::bit(12)::bigint
                    + (((('x' || substr(p_id::text, 20, 4) || substr(p_id::text, 25, 12))::bit(64)::bigint & 4611686018427387903) + p_n) >> 62))
                   >> 12)), 12, '0')
    || '7'
    || lpad(to_hex((('x' || substr(p_id::text, 16, 3))::bit(12)::bigint
                    + (((('x' || substr(p_id::text, 20, 4) || substr(p_id::text, 25, 12))::bit(64)::bigint & 4611686018427387903) + p_n) >> 62))
                   & 4095), 3, '0')
    || to_hex((((('x' || substr(p_id::text, 20, 4) || substr(p_id::text, 25, 12))::bit(64)::bigint & 4611686018427387903) + p_n)
               & 4611686018427387903) | x'8000000000000000'::bigint)
  )::uuid
$function$;

CREATE OR REPLACE FUNCTION public.hookrelay_wake_destination_jobs()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  -- The inbound trigger fires only on a delete or on leaving forward mode: both settle everything.
  settle_all boolean := NEW.deleted_at IS NOT NULL OR TG_TABLE_NAME = 'inbound_endpoints';
BEGIN
  UPDATE delivery_jobs SET run_at = now()
  WHERE message_id IN (
    SELECT message_id FROM delivery_jobs
    WHERE destination = NEW.id::text AND locked_until IS NULL
      AND (run_at = 'infinity' OR (settle_all AND run_at > now()))
    FOR UPDATE SKIP LOCKED
  );
  PERFORM pg_notify('hookrelay_deliveries', '');
  RETURN NULL;
END
$function$;
