-- Owners and subscriptions of outbound endpoints, and events fanned out to them as outbound messages.

-- owner_id: the operator's name for the customer an endpoint belongs to (null: the operator's own).
-- event_types: globs of the event types it receives (null: every type but hookrelay.*).
-- channels: with a list, it receives only events naming one of them; null, events of any channel or none.
ALTER TABLE endpoints ADD COLUMN owner_id text;
ALTER TABLE endpoints ADD COLUMN event_types text[];
ALTER TABLE endpoints ADD COLUMN channels text[];
CREATE INDEX endpoints_owner_list ON endpoints (project_id, owner_id, seq DESC) WHERE deleted_at IS NULL;

-- One row per glob of a live endpoint (one `*` row for event_types null), written with the endpoint
-- by the server: the fan-out finds its endpoints by index here rather than reading a project's
-- endpoints. owner_key is the endpoint's owner_id, '' for none (an owner_id is never empty), so
-- that owner equality is an index condition. prefix is the glob's text before its first `*`: the
-- candidates for an event type are the rows whose prefix is one of the type's prefixes; pattern
-- (the glob as a LIKE pattern) then decides. reserved: the glob starts with `hookrelay.`, the only
-- globs that match the reserved types.
CREATE TABLE endpoint_subscriptions (
  endpoint_id  text NOT NULL REFERENCES endpoints (id),
  project_id   uuid NOT NULL,
  owner_key    text NOT NULL,
  glob         text NOT NULL,
  prefix       text NOT NULL,
  pattern      text NOT NULL,
  reserved     boolean NOT NULL,
  PRIMARY KEY (endpoint_id, glob)
);
CREATE INDEX endpoint_subscriptions_match ON endpoint_subscriptions (project_id, owner_key, prefix);

-- A deleted (or expired, once swept) endpoint leaves the index; the fan-out checks liveness itself.
CREATE FUNCTION hookrelay_drop_endpoint_subscriptions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM endpoint_subscriptions WHERE endpoint_id = NEW.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER endpoints_drop_subscriptions
  AFTER UPDATE OF deleted_at ON endpoints
  FOR EACH ROW
  WHEN (OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL)
  EXECUTE FUNCTION hookrelay_drop_endpoint_subscriptions();

-- An event is kept with its payload (one payload, `event/<id>`, shared by its messages), whether
-- or not any endpoint took it. message_count: the messages its fan-out made.
CREATE TABLE events (
  id               uuid PRIMARY KEY,
  project_id       uuid NOT NULL REFERENCES projects (id),
  event_type       text NOT NULL,
  owner_id         text,
  channels         text[] NOT NULL,
  idempotency_key  text,
  -- SHA-256 of what the request asked for (type, owner, channels, content type, payload): a repeat
  -- of an idempotency key with a different request is IDEMPOTENCY_CONFLICT.
  request_sha256   text NOT NULL,
  payload_format   text NOT NULL CHECK (payload_format IN ('json', 'text')),
  content_type     text NOT NULL,
  size_bytes       integer NOT NULL,
  payload_sha256   text NOT NULL,
  payload_key      text NOT NULL,
  message_count    integer NOT NULL,
  created_at       timestamptz NOT NULL
);
-- Pages newest first by id (UUIDv7), per project, per type or per owner.
CREATE INDEX events_project_id ON events (project_id, id DESC);
CREATE INDEX events_project_type ON events (project_id, event_type, id DESC);
CREATE INDEX events_project_owner ON events (project_id, owner_id, id DESC);
CREATE INDEX events_idempotency ON events (project_id, idempotency_key, created_at DESC) WHERE idempotency_key IS NOT NULL;

-- The event a message was fanned out for (null: sent directly). No foreign key: the statement that
-- inserts the event inserts its messages, events are never deleted, and a key would cost a check per
-- message of a fan-out of a thousand.
ALTER TABLE outbound_messages ADD COLUMN event_id uuid;
CREATE INDEX outbound_messages_event ON outbound_messages (event_id, id) WHERE event_id IS NOT NULL;
