-- An inbound message's endpoint is no longer checked by a foreign key. Every store takes a message's
-- endpoint id from the endpoint row it holds locked and whose last message id it writes in the same
-- transaction (src/db/ingest.ts, hookrelay_store_inbound_batch), and endpoints are never removed,
-- only soft-deleted: the check could never fail. It cost every commit a KEY SHARE lock on the row
-- the store had just written, one more WAL record and a trigger's query on every commit
-- (BENCHMARKS.md, Commit parts).
ALTER TABLE inbound_messages DROP CONSTRAINT inbound_messages_inbound_endpoint_id_fkey;
