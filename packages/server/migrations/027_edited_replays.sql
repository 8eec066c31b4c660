-- Edited replays (docs/api.md, Edited replays): a replay with edits stores a new message, a copy of
-- the one it replays with the edits made. replay_of names that message (null for every message that
-- arrived); replay_signed says whether the server signed the copy with the endpoint's secret. Both
-- are set together, or neither. No foreign key: a copy outlives the removal of its original (delete,
-- retention), and removing a message then costs no look-up of its copies.
ALTER TABLE inbound_messages ADD COLUMN replay_of uuid;
ALTER TABLE inbound_messages ADD COLUMN replay_signed boolean;
ALTER TABLE inbound_messages ADD CONSTRAINT inbound_messages_replay_copy
  CHECK ((replay_of IS NULL) = (replay_signed IS NULL));
