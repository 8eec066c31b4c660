-- A pull endpoint can be ephemeral, as outbound and inbound endpoints are: it answers as deleted
-- from expires_at on, and the expired-endpoints sweeper then marks it deleted at its expiry.
ALTER TABLE pull_endpoints ADD COLUMN ephemeral boolean NOT NULL DEFAULT false;
ALTER TABLE pull_endpoints ADD COLUMN expires_at timestamptz;
ALTER TABLE pull_endpoints ADD CONSTRAINT pull_endpoints_ephemeral_expiry CHECK (ephemeral = (expires_at IS NOT NULL));
CREATE INDEX pull_endpoints_expiry ON pull_endpoints (expires_at) WHERE ephemeral AND deleted_at IS NULL;
