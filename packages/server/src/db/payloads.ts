import type { Sql } from './database.js';

export async function insertPayloads(sql: Sql, items: readonly { key: string; data: Uint8Array }[]): Promise<void> {
  const rows = items.map((item) => sql.fragment`(${item.key}, ${Buffer.from(item.data.buffer, item.data.byteOffset, item.data.byteLength)}::bytea)`);
  await sql`INSERT INTO payloads (key, data) VALUES ${sql.join(rows, ', ')}`;
}

export async function getPayload(sql: Sql, key: string): Promise<Buffer | undefined> {
  const [row] = await sql<{ data: Uint8Array }>`SELECT data FROM payloads WHERE key = ${key}`;
  return row ? Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength) : undefined;
}

export async function getPayloads(sql: Sql, keys: readonly string[]): Promise<Map<string, Buffer>> {
  const rows = await sql<{ key: string; data: Uint8Array }>`SELECT key, data FROM payloads WHERE key = ANY(${[...keys]}::text[])`;
  return new Map(rows.map((r) => [r.key, Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength)]));
}

export async function deletePayloads(sql: Sql, keys: readonly string[]): Promise<void> {
  await sql`DELETE FROM payloads WHERE key = ANY(${[...keys]}::text[])`;
}

/**
 * Up to `limit` keys of payloads whose messages are gone (db/retention.ts), taken off the list in
 * the caller's transaction: the caller removes the payloads before it commits, so a failure keeps
 * the keys listed for the next run. Keys another transaction holds are skipped.
 */
export async function claimPayloadRemovals(sql: Sql, limit: number): Promise<string[]> {
  const rows = await sql<{ key: string }>`
    DELETE FROM payload_removals WHERE key IN (
      SELECT key FROM payload_removals LIMIT ${limit}::int FOR UPDATE SKIP LOCKED
    ) RETURNING key`;
  return rows.map((r) => r.key);
}
