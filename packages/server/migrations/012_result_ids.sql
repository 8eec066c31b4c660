-- The reporter's id of a CLI result report (its `result_id`): a report the CLI sends again, because
-- the acknowledgement of the first send was lost with a server that crashed after the commit, is
-- recognised and recorded once. Unique per message, so that a report cannot pass a concurrent copy
-- of itself; NULL (forward-mode deliveries, reports of CLIs that send no id) is never compared.
-- Nullable with no default: adding it rewrites no row.
ALTER TABLE delivery_attempts ADD COLUMN result_id uuid;
CREATE UNIQUE INDEX delivery_attempts_result ON delivery_attempts (message_id, result_id) WHERE result_id IS NOT NULL;
