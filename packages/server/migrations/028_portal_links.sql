-- Portal links (docs/api.md, Portal links): a bearer token for one customer (an owner_id) of one
-- project, stored only as its SHA-256 hash, as API keys are. It authenticates until expires_at or
-- revoked_at, whichever comes first.
CREATE TABLE portal_links (
  id           uuid PRIMARY KEY,
  project_id   uuid NOT NULL REFERENCES projects (id),
  owner_id     text NOT NULL,
  token_hash   text NOT NULL UNIQUE,
  read_only    boolean NOT NULL,
  expires_at   timestamptz NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX portal_links_project_owner ON portal_links (project_id, owner_id, id DESC);
CREATE INDEX portal_links_project ON portal_links (project_id, id DESC);
