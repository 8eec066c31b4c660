-- Outbound messages, the delivery work queue (outbound and forward-mode inbound), rate-limit state.

CREATE TABLE outbound_messages (
  id                     uuid PRIMARY KEY,
  project_id             uuid NOT NULL REFERENCES projects (id),
  endpoint_id            text NOT NULL REFERENCES endpoints (id),
  event_type             text,
  idempotency_key        text,
  -- SHA-256 of what the request asked for (endpoint, event type, content type, payload): a repeat of
  -- an idempotency key with a different request is IDEMPOTENCY_CONFLICT.
  request_sha256         text NOT NULL,
  -- How the payload was submitted and is shown again: 'json' (`payload`) or 'text' (`body`).
  payload_format         text NOT NULL CHECK (payload_format IN ('json', 'text')),
  content_type           text NOT NULL,
  size_bytes             integer NOT NULL,
  payload_sha256         text NOT NULL,
  -- Key in the payload store; null once the payload is gone (deleted and swept).
  payload_key            text,
  status                 text NOT NULL DEFAULT 'queued'
                         CHECK (status IN ('queued', 'delivering', 'succeeded', 'pending_retry', 'failed_permanent')),
  attempt_count          integer NOT NULL DEFAULT 0,
  response_status        integer,
  response_latency_ms    integer,
  processing_ms          integer,
  last_error             text,
  first_attempt_at       timestamptz,
  next_attempt_at        timestamptz,
  queue_wait_ms          integer,
  total_delivery_ms      integer,
  created_at             timestamptz NOT NULL,
  updated_at             timestamptz NOT NULL,
  delivered_at           timestamptz,
  failed_at              timestamptz,
  deleted_at             timestamptz,
  deleted_by_api_key_id  uuid,
  deleted_by_user_id     text,
  CHECK (deleted_by_api_key_id IS NULL OR deleted_by_user_id IS NULL)
);
-- Logs page newest first by id (UUIDv7), per project or per endpoint.
CREATE INDEX outbound_messages_project_id ON outbound_messages (project_id, id DESC);
CREATE INDEX outbound_messages_endpoint_id ON outbound_messages (endpoint_id, id DESC);
CREATE INDEX outbound_messages_idempotency ON outbound_messages (project_id, idempotency_key, created_at DESC) WHERE idempotency_key IS NOT NULL;
CREATE INDEX outbound_messages_payload_sweep ON outbound_messages (deleted_at) WHERE deleted_at IS NOT NULL AND payload_key IS NOT NULL;

-- The work queue: one row per message that still has a delivery to make, outbound or inbound.
-- A worker claims due rows with FOR UPDATE SKIP LOCKED and commits a lease (locked_by,
-- locked_until, lease_id) before it sends; the row is deleted when the delivery ends, or moved to the
-- next attempt's time. A lease that runs out (a crashed worker) is returned by the reaper.
CREATE TABLE delivery_jobs (
  message_id    uuid PRIMARY KEY,
  kind          text NOT NULL CHECK (kind IN ('outbound', 'inbound')),
  -- The endpoint (outbound `ep_…` id or inbound endpoint uuid): pause, delete and rate limits.
  destination   text NOT NULL,
  -- When the job is due. 'infinity' parks the job of a paused endpoint until it is resumed.
  run_at        timestamptz NOT NULL,
  -- attempt_count when this delivery began: the retry schedule counts from here, so a manual retry
  -- or a replay gets the whole schedule again.
  attempt_base  integer NOT NULL DEFAULT 0,
  -- A retry or replay asked for while the job was leased: deliver again once this attempt ends.
  rerun         boolean NOT NULL DEFAULT false,
  locked_by     text,
  locked_until  timestamptz,
  lease_id      uuid,
  claims        integer NOT NULL DEFAULT 0,
  created_at    timestamptz NOT NULL DEFAULT now(),
  CHECK ((locked_until IS NULL) = (lease_id IS NULL))
);
CREATE INDEX delivery_jobs_due ON delivery_jobs (run_at, message_id) WHERE locked_until IS NULL;
CREATE INDEX delivery_jobs_leased ON delivery_jobs (locked_until) WHERE locked_until IS NOT NULL;
CREATE INDEX delivery_jobs_destination ON delivery_jobs (destination);

-- Token bucket of an endpoint as GCRA: the theoretical arrival time of the next request. Claiming
-- workers update it under the row lock, so the limit holds across every worker process.
ALTER TABLE endpoints ADD COLUMN rate_limit_tat timestamptz;

-- Which worker made an attempt (operators' debugging; not in the API).
ALTER TABLE delivery_attempts ADD COLUMN worker_id text;

-- When an endpoint is resumed, its parked jobs become due; when it is deleted (or an inbound endpoint
-- leaves forward mode) every job that waits becomes due, so that workers settle its messages now
-- rather than at their next retry time. Jobs being claimed at this moment are skipped: the worker
-- holding them re-reads the endpoint.
CREATE FUNCTION hookrelay_wake_destination_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
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
$$;

CREATE TRIGGER endpoints_wake_delivery_jobs
  AFTER UPDATE OF paused, deleted_at ON endpoints
  FOR EACH ROW
  WHEN ((OLD.paused AND NOT NEW.paused) OR (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL))
  EXECUTE FUNCTION hookrelay_wake_destination_jobs();

CREATE TRIGGER inbound_endpoints_wake_delivery_jobs
  AFTER UPDATE OF deleted_at, mode ON inbound_endpoints
  FOR EACH ROW
  WHEN ((OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL) OR (OLD.mode = 'forward' AND NEW.mode <> 'forward'))
  EXECUTE FUNCTION hookrelay_wake_destination_jobs();
