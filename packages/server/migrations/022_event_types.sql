-- The event-type catalogue of each project (docs/api.md, Event types): the names outbound events
-- are sent under, each with an optional JSON Schema its payloads must match and an example payload.
-- hookrelay's own types (`hookrelay.…`) are no rows: every project has them from the code.
-- json, not jsonb: a schema reads back with its keys in the order they were written.
CREATE TABLE event_types (
  project_id      uuid NOT NULL REFERENCES projects (id),
  -- Byte order: the list's keyset and its order are the same on every database.
  name            text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9._:/-]+$' AND length(name) <= 256 AND lower(name) NOT LIKE 'hookrelay.%'),
  description     text NOT NULL DEFAULT '',
  payload_schema  json,
  example         json,
  archived        boolean NOT NULL DEFAULT false,
  -- Goes up with every change: compiled schemas are cached by (project, name, revision).
  revision        integer NOT NULL DEFAULT 1,
  -- What a list page carries of the row, which bounds the bytes of a page.
  json_bytes      integer GENERATED ALWAYS AS (coalesce(octet_length(payload_schema::text), 0) + coalesce(octet_length(example::text), 0)) STORED,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, name)
);
