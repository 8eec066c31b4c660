import { SqlFragment, type Sql } from './database.js';

/**
 * Statements that soft deletion runs alike on several tables; each aggregate's module exports its
 * own operation on top of them. Table names are written out here, never taken from a caller's text.
 */

/** Tables of messages deleted by id within a project. */
export type MessageTable = 'inbound_messages' | 'outbound_messages';
/** Tables whose deleted rows keep a payload key until the payload sweeper clears it. */
export type PayloadTable = MessageTable | 'pull_events';
/** Tables of endpoints that can be ephemeral. */
export type EphemeralEndpointTable = 'endpoints' | 'inbound_endpoints' | 'pull_endpoints';

function table(sql: Sql, name: PayloadTable | EphemeralEndpointTable): SqlFragment {
  switch (name) {
    case 'inbound_messages':
      return sql.fragment`inbound_messages`;
    case 'outbound_messages':
      return sql.fragment`outbound_messages`;
    case 'pull_events':
      return sql.fragment`pull_events`;
    case 'endpoints':
      return sql.fragment`endpoints`;
    case 'inbound_endpoints':
      return sql.fragment`inbound_endpoints`;
    case 'pull_endpoints':
      return sql.fragment`pull_endpoints`;
  }
}

/** How a statement names an endpoint row: the alias `e` (`p` for a pull endpoint), or the table's own name. */
export type EndpointRef = 'e' | 'p' | EphemeralEndpointTable;

const LIVE_ENDPOINT = new Map<EndpointRef, SqlFragment>(
  (['e', 'p', 'endpoints', 'inbound_endpoints', 'pull_endpoints'] as const).map((ref) => [
    ref,
    new SqlFragment([`(${ref}.deleted_at IS NULL AND (${ref}.expires_at IS NULL OR ${ref}.expires_at > now()))`], []),
  ]),
);

/**
 * The endpoint named `ref` is live: not deleted and, when ephemeral, not past its TTL. From its
 * expiry on an endpoint answers as deleted, before the sweeper marks it deleted, so every statement
 * that serves, stores for or delivers to an endpoint asks this, of an outbound, inbound or pull
 * endpoint alike.
 */
export function liveEndpoint(ref: EndpointRef): SqlFragment {
  return LIVE_ENDPOINT.get(ref)!;
}

/**
 * The payload key a message keeps once deleted, for the payload sweeper to remove its bytes. A
 * message fanned out from an event delivers the event's payload, which stays with the event: it
 * lets go of the key at once and leaves the sweeper nothing.
 */
function payloadKeyAfterDelete(sql: Sql, messages: MessageTable): SqlFragment {
  switch (messages) {
    case 'inbound_messages':
      return sql.fragment`m.payload_key`;
    case 'outbound_messages':
      return sql.fragment`CASE WHEN m.event_id IS NULL THEN m.payload_key END`;
  }
}

/** A row a soft delete touched: when it was deleted and whether it already was. */
export interface SoftDeleteResult {
  id: string;
  deleted_at: Date;
  already_deleted: boolean;
}

/**
 * Soft-deletes messages of the project (metadata stays, the payload becomes unreachable at once);
 * ids already deleted keep their first deletion. Ids not in the result were not found.
 */
export async function softDeleteMessages(
  sql: Sql,
  messages: MessageTable,
  projectId: string,
  ids: readonly string[],
  principal: { apiKeyId: string },
): Promise<SoftDeleteResult[]> {
  const name = table(sql, messages);
  return sql<SoftDeleteResult>`
    WITH target AS (
      SELECT id, deleted_at FROM ${name}
      WHERE id = ANY(${[...ids]}::uuid[]) AND project_id = ${projectId}::uuid
      FOR UPDATE
    ), updated AS (
      UPDATE ${name} m SET deleted_at = now(), deleted_by_api_key_id = ${principal.apiKeyId}::uuid, updated_at = now(),
        payload_key = ${payloadKeyAfterDelete(sql, messages)}
      FROM target WHERE m.id = target.id AND target.deleted_at IS NULL
      RETURNING m.id, m.deleted_at
    )
    SELECT t.id, coalesce(u.deleted_at, t.deleted_at) AS deleted_at, (t.deleted_at IS NOT NULL) AS already_deleted
    FROM target t LEFT JOIN updated u ON u.id = t.id`;
}

/** Payload keys of deleted rows still holding a payload, claimed for the sweeper's transaction. */
export async function claimDeletedPayloads(sql: Sql, rows: PayloadTable, limit: number): Promise<{ id: string; payload_key: string }[]> {
  return sql<{ id: string; payload_key: string }>`
    SELECT id, payload_key FROM ${table(sql, rows)}
    WHERE deleted_at IS NOT NULL AND payload_key IS NOT NULL
    ORDER BY deleted_at
    LIMIT ${limit}
    FOR UPDATE SKIP LOCKED`;
}

/** Forgets the payload keys of claimed rows once the sweeper has removed their payloads. */
export async function clearPayloadKeys(sql: Sql, rows: PayloadTable, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await sql`UPDATE ${table(sql, rows)} SET payload_key = NULL WHERE id = ANY(${[...ids]}::uuid[])`;
}

/** Marks ephemeral endpoints whose TTL has elapsed as deleted (at their expiry); returns their ids. */
export async function sweepExpiredEphemeralEndpoints(sql: Sql, endpoints: EphemeralEndpointTable, now: Date, batchSize: number): Promise<string[]> {
  const name = table(sql, endpoints);
  const rows = await sql<{ id: string }>`
    UPDATE ${name} SET deleted_at = expires_at
    WHERE id IN (
      SELECT id FROM ${name}
      WHERE ephemeral AND deleted_at IS NULL AND expires_at <= ${now}
      ORDER BY expires_at
      LIMIT ${batchSize}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING id`;
  return rows.map((r) => r.id);
}
