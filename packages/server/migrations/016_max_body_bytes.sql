-- An endpoint's own limit on an ingested body, in bytes; NULL: the server's ingest limit. It can
-- only lower that limit (the API refuses a value above it), so the column needs no upper bound of
-- its own beyond what an int holds.
ALTER TABLE inbound_endpoints ADD COLUMN max_body_bytes integer CHECK (max_body_bytes > 0);
ALTER TABLE pull_endpoints ADD COLUMN max_body_bytes integer CHECK (max_body_bytes > 0);
