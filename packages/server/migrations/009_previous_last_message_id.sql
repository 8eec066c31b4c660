-- The endpoint's last message id before the store that set `last_message_id`, written by that same
-- UPDATE (src/db/ingest.ts, storeInboundOne): an UPDATE's RETURNING sees only the new row, and this
-- is what the store answers as `previous_last_id`. It takes the endpoint row's lock with its UPDATE
-- instead of a `SELECT … FOR UPDATE` first, which saves a lock record per webhook. Other writers of
-- `last_message_id` (hookrelay_store_inbound_batch) leave it as it is: it is read only in the
-- statement that writes it. Nullable with no default: adding it rewrites no row.
ALTER TABLE inbound_endpoints ADD COLUMN previous_last_message_id uuid;
