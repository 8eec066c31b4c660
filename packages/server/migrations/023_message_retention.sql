-- Message retention (docs/operating.md, Message retention): the message-retention sweeper removes
-- outbound and inbound messages older than their endpoint's retention_days, or, where that is NULL,
-- than the server's HOOKRELAY_MESSAGE_RETENTION_DAYS. Each endpoint's expired messages are found
-- on its (endpoint, id) index: ids are UUIDv7, so an id range is a time range.
ALTER TABLE endpoints ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650);
ALTER TABLE inbound_endpoints ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650);

-- Payloads of removed messages that are not rows of this database (files of the embedded blob
-- store, objects of an S3 store): listed by the transaction that removes their messages, and removed
-- from their store by a later run, so that a crash leaves neither a message without its payload nor
-- a payload that nothing will ever remove.
CREATE TABLE payload_removals (
  key text PRIMARY KEY
);
