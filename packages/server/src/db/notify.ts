import type { Sql } from './database.js';

/** NOTIFY inside the caller's transaction: listeners hear it only if, and when, it commits. */
export async function notifyOnCommit(sql: Sql, channel: string, payload: string): Promise<void> {
  await sql`SELECT pg_notify(${channel}, ${payload})`;
}
