import type { Sql } from './database.js';

/**
 * One piece of a blob of the chunk store, in its own autocommit statement (storage/blob-store.ts).
 * The bytes travel as base64 text, decoded by the database: the driver sends a bytea parameter as
 * hex, twice its size, which halves how fast a large body is stored.
 */
export async function insertBlobChunk(sql: Sql, key: string, seq: number, data: Buffer): Promise<void> {
  await sql`INSERT INTO payload_chunks (key, seq, data) VALUES (${key}, ${seq}, decode(${data.toString('base64')}, 'base64'))`;
}

/** Up to `limit` pieces of a blob from piece `fromSeq` on, in order. */
export async function readBlobChunks(sql: Sql, key: string, fromSeq: number, limit: number): Promise<{ seq: number; data: Buffer }[]> {
  const rows = await sql<{ seq: number; data: Uint8Array }>`
    SELECT seq, data FROM payload_chunks WHERE key = ${key} AND seq >= ${fromSeq} ORDER BY seq LIMIT ${limit}`;
  return rows.map((r) => ({ seq: r.seq, data: Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength) }));
}

export async function deleteBlobChunks(sql: Sql, keys: readonly string[]): Promise<void> {
  await sql`DELETE FROM payload_chunks WHERE key = ANY(${[...keys]}::text[])`;
}

export async function countBlobChunks(sql: Sql, key: string): Promise<number> {
  const [row] = await sql<{ n: number }>`SELECT count(*)::int AS n FROM payload_chunks WHERE key = ${key}`;
  return row!.n;
}
