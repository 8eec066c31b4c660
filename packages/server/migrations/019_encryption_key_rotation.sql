-- While `encryption rotate-key` runs, and after it was cut short: the fixed text of the key check
-- sealed under the key the secrets are being sealed again under. A process must then open both
-- values, so that one started with either key alone, which would open only part of the secrets,
-- refuses to start. Cleared when the rotation rewrites check_value.
ALTER TABLE encryption_key_check ADD COLUMN rotating_check_value text;
