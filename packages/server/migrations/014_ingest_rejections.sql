-- Requests refused at an ingest URL (docs/api.md, Refused requests): what a developer needs to see
-- why a webhook never arrived. Kept per endpoint up to a cap (the writer removes the oldest) and
-- removed with the endpoint: by cascade when its row goes, by trigger when it is soft-deleted.
CREATE TABLE ingest_rejections (
  -- UUIDv7 taken when the request arrived: orders the list and backs its keyset cursor.
  id                   uuid PRIMARY KEY,
  project_id           uuid NOT NULL,
  endpoint_kind        text NOT NULL CHECK (endpoint_kind IN ('inbound', 'pull')),
  inbound_endpoint_id  uuid REFERENCES inbound_endpoints (id) ON DELETE CASCADE,
  pull_endpoint_id     uuid REFERENCES pull_endpoints (id) ON DELETE CASCADE,
  endpoint_id          uuid GENERATED ALWAYS AS (COALESCE(inbound_endpoint_id, pull_endpoint_id)) STORED,
  received_at          timestamptz NOT NULL,
  reason               text NOT NULL,
  detail               text NOT NULL,
  status               integer NOT NULL,
  method               text NOT NULL,
  path                 text NOT NULL,
  query                text NOT NULL,
  -- The header lines in order, as [name, value] pairs, the endpoint's static token redacted.
  raw_headers          jsonb NOT NULL,
  size_bytes           bigint NOT NULL,
  -- Null when the body was not read (refused for its size).
  body_sha256          text,
  body_prefix          bytea NOT NULL,
  body_truncated       boolean NOT NULL,
  source_address       text NOT NULL,
  CHECK ((endpoint_kind = 'inbound') = (inbound_endpoint_id IS NOT NULL)),
  CHECK ((endpoint_kind = 'pull') = (pull_endpoint_id IS NOT NULL))
);
CREATE INDEX ingest_rejections_endpoint ON ingest_rejections (endpoint_id, id);
CREATE INDEX ingest_rejections_endpoint_reason ON ingest_rejections (endpoint_id, reason, id);

-- Refusals that were counted but not stored (over the per-endpoint rate, or the writer's queue full).
ALTER TABLE inbound_endpoints ADD COLUMN rejections_dropped_count bigint NOT NULL DEFAULT 0;
ALTER TABLE pull_endpoints ADD COLUMN rejected_count bigint NOT NULL DEFAULT 0;
ALTER TABLE pull_endpoints ADD COLUMN rejections_dropped_count bigint NOT NULL DEFAULT 0;

-- A soft-deleted endpoint's refused requests go with it, whichever statement deletes it (the API,
-- the expiry sweeper).
CREATE FUNCTION hookrelay_drop_inbound_rejections() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM ingest_rejections WHERE inbound_endpoint_id = NEW.id;
  RETURN NULL;
END;
$$;
CREATE TRIGGER inbound_endpoints_drop_rejections AFTER UPDATE OF deleted_at ON inbound_endpoints
  FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
  EXECUTE FUNCTION hookrelay_drop_inbound_rejections();

CREATE FUNCTION hookrelay_drop_pull_rejections() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM ingest_rejections WHERE pull_endpoint_id = NEW.id;
  RETURN NULL;
END;
$$;
CREATE TRIGGER pull_endpoints_drop_rejections AFTER UPDATE OF deleted_at ON pull_endpoints
  FOR EACH ROW WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
  EXECUTE FUNCTION hookrelay_drop_pull_rejections();
