-- An outbound message's endpoint and project are no longer checked by foreign keys, as an inbound
-- message's are not (010). Both statements that insert messages take the endpoint id and project
-- id from the live endpoint row they read in the same statement (src/db/messages.ts,
-- enqueueOutboundMessages; src/db/events.ts, fanOutEvents), and endpoints and projects are never
-- removed, only soft-deleted: neither check could fail. Each cost every message a trigger's query
-- and a KEY SHARE lock on its endpoint's row — a written tuple header and a WAL record per
-- endpoint, and a multixact when concurrent commits lock the same endpoints: one event fanned out
-- to a thousand endpoints locked a thousand rows.
ALTER TABLE outbound_messages DROP CONSTRAINT outbound_messages_endpoint_id_fkey;
ALTER TABLE outbound_messages DROP CONSTRAINT outbound_messages_project_id_fkey;
