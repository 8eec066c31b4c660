import type { Database, Sql } from './database.js';

/** NOTIFY inside the caller's transaction: listeners hear it only if, and when, it commits. */
export async function notifyOnCommit(sql: Sql, channel: string, payload: string): Promise<void> {
  await sql`SELECT pg_notify(${channel}, ${payload})`;
}

/** PostgreSQL refuses NOTIFY payloads of 8,000 bytes or more. */
const MAX_NOTIFY_PAYLOAD_BYTES = 7_900;

/**
 * Announces `entries` (ASCII, joined with commas) on `channel` after their commit, in as many
 * NOTIFYs as the payload limit needs (`Database.announce`: a wake-up, the rows were committed
 * durably before).
 */
export async function notifyAfterCommit(db: Pick<Database, 'announce'>, channel: string, entries: readonly string[]): Promise<void> {
  const payloads: string[] = [];
  let current = '';
  for (const entry of entries) {
    if (current !== '' && current.length + 1 + entry.length > MAX_NOTIFY_PAYLOAD_BYTES) {
      payloads.push(current);
      current = '';
    }
    current = current === '' ? entry : `${current},${entry}`;
  }
  if (current !== '') payloads.push(current);
  if (payloads.length === 0) return;
  await db.announce(channel, payloads);
}
