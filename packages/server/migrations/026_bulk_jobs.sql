-- Bulk recovery jobs (docs/api.md, Bulk retries and replays): a retry of the outbound messages a
-- filter matches, or a replay of one inbound endpoint's messages. A job is this row; workers of
-- the worker role claim it with FOR UPDATE SKIP LOCKED and a lease, as deliveries are claimed, and
-- work through its messages in id order, a chunk per transaction.
CREATE TABLE bulk_jobs (
  id                   uuid PRIMARY KEY,
  project_id           uuid NOT NULL REFERENCES projects (id),
  kind                 text NOT NULL CHECK (kind IN ('outbound', 'inbound')),
  -- The filter as it was given; null where it was not. Outbound: endpoint_id, owner_id,
  -- event_type, statuses, the created_at window. Inbound: inbound_endpoint_id, event_type,
  -- statuses (null: any), the received_at window.
  endpoint_id          text,
  owner_id             text,
  inbound_endpoint_id  uuid REFERENCES inbound_endpoints (id),
  event_type           text,
  statuses             text[],
  time_from            timestamptz NOT NULL,
  -- Null: the window ends when the job was created (created_at).
  time_to              timestamptz,
  status               text NOT NULL CHECK (status IN ('running', 'done', 'cancelled')),
  -- The messages the filter matched when the job was created, and what became of those it reached.
  matched              integer NOT NULL,
  done                 integer NOT NULL DEFAULT 0,
  skipped              integer NOT NULL DEFAULT 0,
  failed               integer NOT NULL DEFAULT 0,
  last_error           text,
  -- The keyset position: the last message id the job has settled, committed in the transaction
  -- that retried it, so that no message is taken twice, whichever worker takes the next chunk.
  after_id             uuid,
  -- The lease of the worker that claimed it (a claim that never finished runs out and another worker takes the job).
  locked_by            text,
  locked_until         timestamptz,
  lease_id             uuid,
  claims               integer NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  finished_at          timestamptz,
  CHECK ((kind = 'inbound') = (inbound_endpoint_id IS NOT NULL)),
  CHECK ((locked_until IS NULL) = (lease_id IS NULL)),
  CHECK ((status = 'running') = (finished_at IS NULL))
);
-- GET /v1/bulk-retries pages newest first by id.
CREATE INDEX bulk_jobs_project_id ON bulk_jobs (project_id, id DESC);
-- Workers claim the running job that waited longest since its last chunk.
CREATE INDEX bulk_jobs_running ON bulk_jobs (updated_at, id) WHERE status = 'running';
