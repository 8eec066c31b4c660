import type { Sql } from './database.js';

/**
 * Connected CLI streams, across every server process (migration 008): what `connected_listeners`
 * counts. A connection counts while its process has refreshed it within `STALE_AFTER_SECONDS`.
 */
export const STALE_AFTER_SECONDS = 90;

export async function insertStreamConnection(sql: Sql, row: { id: string; endpointId: string; processId: string }): Promise<void> {
  await sql`
    INSERT INTO inbound_stream_connections (id, inbound_endpoint_id, process_id)
    VALUES (${row.id}::uuid, ${row.endpointId}::uuid, ${row.processId}::uuid)`;
}

export async function deleteStreamConnection(sql: Sql, id: string): Promise<void> {
  await sql`DELETE FROM inbound_stream_connections WHERE id = ${id}::uuid`;
}

/** Refreshes this process's connections, and deletes any process's connections stale for long. */
export async function refreshStreamConnections(sql: Sql, processId: string): Promise<void> {
  await sql`UPDATE inbound_stream_connections SET seen_at = now() WHERE process_id = ${processId}::uuid`;
  await sql`DELETE FROM inbound_stream_connections WHERE seen_at < now() - make_interval(secs => ${STALE_AFTER_SECONDS * 10})`;
}

/** This process's connections, at shutdown. */
export async function deleteProcessStreamConnections(sql: Sql, processId: string): Promise<void> {
  await sql`DELETE FROM inbound_stream_connections WHERE process_id = ${processId}::uuid`;
}
