import type { Sql, SqlFragment } from './database.js';
import { uuidv7Floor } from './keyset.js';

/** Tables of messages that retention removes (docs/operating.md, Message retention). */
export type RetainedMessages = 'inbound_messages' | 'outbound_messages';

/** What differs between the two: table names written out here, never taken from a caller's text. */
function shape(sql: Sql, messages: RetainedMessages) {
  return messages === 'inbound_messages'
    ? {
        endpoints: sql.fragment`inbound_endpoints`,
        messages: sql.fragment`inbound_messages`,
        endpointOf: sql.fragment`m.inbound_endpoint_id`,
        bornAt: sql.fragment`m.received_at`,
        ownPayload: sql.fragment`m.payload_key`,
        answers: sql.fragment`, answers AS (DELETE FROM inbound_message_answers a USING gone g WHERE a.message_id = g.id)`,
      }
    : {
        endpoints: sql.fragment`endpoints`,
        messages: sql.fragment`outbound_messages`,
        endpointOf: sql.fragment`m.endpoint_id`,
        bornAt: sql.fragment`m.created_at`,
        // A message fanned out from an event delivers the event's payload, which stays with the event.
        ownPayload: sql.fragment`CASE WHEN m.event_id IS NULL THEN m.payload_key END`,
        answers: sql.fragment``,
      };
}

/**
 * Removes for good up to `limit` messages older than their endpoint's retention at `now`
 * (`retention_days`, or `defaultDays` where that is NULL; 0 keeps them), deleted ones included,
 * with their delivery attempts, their answers, and their own payloads (not an event's, which its
 * messages share) that are rows of this database (`payloads`, `payload_chunks`). The keys of their
 * other payloads (files, objects) go to
 * `payload_removals` in the same statement; `claimPayloadRemovals` hands them to a later run.
 *
 * A message with a delivery job is still being delivered (due, leased, waiting for a retry, or held
 * by a paused endpoint) and stays. Each endpoint's messages are found on its (endpoint, id) index:
 * an id made before the cutoff's millisecond bounds the range, and the time column decides (an
 * inbound id may be later than its received_at, never earlier). No order is asked for, so that no
 * plan prefers the primary key's id order, which would pass every endpoint's old messages to find
 * one endpoint's. Rows another transaction holds are skipped, so concurrent runs take disjoint
 * batches. Returns how many messages went.
 */
export async function purgeExpiredMessages(sql: Sql, messages: RetainedMessages, now: Date, defaultDays: number, limit: number): Promise<number> {
  const t = shape(sql, messages);
  const retention = sql.fragment`coalesce(e.retention_days, ${defaultDays}::int)`;
  const cutoff: SqlFragment = sql.fragment`c.cutoff`;
  const [row] = await sql<{ count: number }>`
    WITH doomed AS (
      SELECT d.id FROM ${t.endpoints} e
      CROSS JOIN LATERAL (SELECT ${now.toISOString()}::text::timestamptz - make_interval(days => ${retention}) AS cutoff) c
      CROSS JOIN LATERAL (
        SELECT m.id FROM ${t.messages} m
        WHERE ${t.endpointOf} = e.id AND m.id < ${uuidv7Floor(sql, cutoff)} AND ${t.bornAt} < ${cutoff}
          -- OFFSET 0: a probe of the job's primary key per message, not an anti-join that would
          -- want the messages in id order (which only the primary key's index gives).
          AND NOT EXISTS (SELECT 1 FROM delivery_jobs j WHERE j.message_id = m.id OFFSET 0)
        LIMIT ${limit}::int
        FOR UPDATE OF m SKIP LOCKED
      ) d
      -- An endpoint created after the cutoff has no message before it.
      WHERE ${retention} > 0 AND e.created_at < ${cutoff}
      LIMIT ${limit}::int
    ), gone AS (
      DELETE FROM ${t.messages} m USING doomed d WHERE m.id = d.id RETURNING m.id, ${t.ownPayload} AS payload_key
    ), attempts AS (
      DELETE FROM delivery_attempts a USING gone g WHERE a.message_id = g.id
    ) ${t.answers}, stored AS (
      DELETE FROM payloads p USING gone g WHERE p.key = g.payload_key RETURNING p.key
    ), chunked AS (
      DELETE FROM payload_chunks c USING gone g WHERE c.key = g.payload_key RETURNING c.key
    ), listed AS (
      INSERT INTO payload_removals (key)
      SELECT DISTINCT g.payload_key FROM gone g
      WHERE g.payload_key IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM stored s WHERE s.key = g.payload_key)
        AND NOT EXISTS (SELECT 1 FROM chunked c WHERE c.key = g.payload_key)
      ON CONFLICT (key) DO NOTHING
    )
    SELECT count(*)::int AS count FROM gone`;
  return row!.count;
}
