-- Projects, API keys, outbound endpoints and their signing keys.

CREATE TABLE projects (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX projects_name_key ON projects (name);

-- Keys are stored only as SHA-256 hashes: the database never holds a usable key.
CREATE TABLE api_keys (
  id          uuid PRIMARY KEY,
  project_id  uuid NOT NULL REFERENCES projects (id),
  key_hash    text NOT NULL UNIQUE,
  key_hint    text NOT NULL,
  name        text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_project ON api_keys (project_id);

-- seq orders lists (newest first) and backs their keyset cursors: endpoint ids are random.
CREATE TABLE endpoints (
  id              text PRIMARY KEY CHECK (id ~ '^ep_[a-f0-9]{32}$'),
  seq             bigint GENERATED ALWAYS AS IDENTITY,
  project_id      uuid NOT NULL REFERENCES projects (id),
  url             text NOT NULL,
  description     text NOT NULL DEFAULT '',
  rate_limit_rps  integer NOT NULL DEFAULT 0 CHECK (rate_limit_rps BETWEEN 0 AND 1000),
  burst           integer NOT NULL DEFAULT 0 CHECK (burst BETWEEN 0 AND 10000),
  headers         jsonb NOT NULL DEFAULT '{}'::jsonb,
  paused          boolean NOT NULL DEFAULT false,
  ephemeral       boolean NOT NULL DEFAULT false,
  expires_at      timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  deleted_at      timestamptz,
  CHECK (ephemeral = (expires_at IS NOT NULL))
);
CREATE UNIQUE INDEX endpoints_seq_key ON endpoints (seq);
CREATE INDEX endpoints_project_list ON endpoints (project_id, seq DESC) WHERE deleted_at IS NULL;
CREATE INDEX endpoints_expiry ON endpoints (expires_at) WHERE ephemeral AND deleted_at IS NULL;

-- Delivery signing keys of outbound endpoints and (later) inbound endpoints, keyed by owner id.
-- The secret is AES-256-GCM encrypted; expires_at is set on the previous key during a rotation.
CREATE TABLE signing_keys (
  id                text PRIMARY KEY CHECK (id ~ '^sk_[a-f0-9]+$'),
  owner_id          text NOT NULL,
  secret_encrypted  text NOT NULL,
  key_hint          text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz
);
CREATE INDEX signing_keys_owner ON signing_keys (owner_id, created_at DESC);
