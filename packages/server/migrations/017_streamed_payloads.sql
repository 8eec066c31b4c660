-- Large webhook bodies are written as they arrive, before the commit of their message, to a blob
-- store: files in the data dir on the embedded database, rows of payload_chunks on PostgreSQL
-- (src/storage/blob-store.ts). An upload is pending from before its first byte until the commit
-- that stores its message deletes its row: a pending upload older than any upload may take holds a
-- body no message has, which the abandoned-uploads sweeper removes.
CREATE TABLE payload_uploads (
  key        text PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payload_uploads_started ON payload_uploads (started_at);

-- A blob of the chunk store: pieces of at most 1 MiB, in order of seq from 0.
CREATE TABLE payload_chunks (
  key  text NOT NULL,
  seq  integer NOT NULL CHECK (seq >= 0),
  data bytea NOT NULL,
  PRIMARY KEY (key, seq)
);
-- Out of line and uncompressed: compressing each piece costs more time on the ingest path than the
-- disk it saves is worth for the bodies large enough to stream.
ALTER TABLE payload_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
