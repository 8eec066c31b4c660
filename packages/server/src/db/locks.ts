import type { Sql } from './database.js';

/** A transaction-scoped advisory lock if free now; false when another session holds it. */
export async function tryAdvisoryXactLock(sql: Sql, key: number): Promise<boolean> {
  const [row] = await sql<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${key}) AS locked`;
  return row?.locked === true;
}

/** Waits for a transaction-scoped advisory lock (migrations, bootstrap). */
export async function advisoryXactLock(sql: Sql, key: number): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(${key})`;
}
