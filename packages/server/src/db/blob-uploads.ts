import type { Sql } from './database.js';

/** Records a blob upload as pending, before its first byte is written (storage/blob-store.ts). */
export async function beginBlobUpload(sql: Sql, key: string): Promise<void> {
  await sql`INSERT INTO payload_uploads (key) VALUES (${key})`;
}

/** Forgets pending uploads whose blobs are removed (a cut or refused body). */
export async function endBlobUploads(sql: Sql, keys: readonly string[]): Promise<void> {
  if (keys.length > 0) await sql`DELETE FROM payload_uploads WHERE key = ANY(${[...keys]}::text[])`;
}

/**
 * Pending uploads begun before `startedBefore`, removed from the table in the caller's transaction:
 * no message holds their blobs (the commit of one removes its upload's row), so they go too.
 */
export async function claimAbandonedBlobUploads(sql: Sql, startedBefore: Date, limit: number): Promise<string[]> {
  const rows = await sql<{ key: string }>`
    DELETE FROM payload_uploads WHERE key IN (
      SELECT key FROM payload_uploads WHERE started_at < ${startedBefore} ORDER BY started_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ) RETURNING key`;
  return rows.map((r) => r.key);
}
