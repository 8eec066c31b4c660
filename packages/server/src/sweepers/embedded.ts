import type { Database } from '../db/database.js';
import { checkpoint, checkpointDue, tablesDueForVacuum, vacuumTable } from '../db/maintenance.js';

export const EMBEDDED_VACUUM = 'embedded-vacuum';
export const EMBEDDED_CHECKPOINT = 'embedded-checkpoint';

export interface EmbeddedUpkeepReport {
  /** A step that did something: what it did, and how long it took. */
  step: typeof EMBEDDED_VACUUM | typeof EMBEDDED_CHECKPOINT;
  ms: number;
  tables?: string[];
  walBytes?: number;
}

/**
 * What autovacuum and the checkpointer would do now, done in this process: PGlite has neither, so
 * without this the embedded data dir grows with every update and delete (dead rows are never
 * reclaimed) and with every write (WAL is kept from the start of the process). Vacuums first: its
 * own WAL is then part of the checkpoint. Returns the steps that ran.
 */
export async function runEmbeddedUpkeep(db: Database, stopped: () => boolean = () => false): Promise<EmbeddedUpkeepReport[]> {
  const reports: EmbeddedUpkeepReport[] = [];
  const tables = await tablesDueForVacuum(db.sql);
  if (tables.length > 0) {
    const started = performance.now();
    const vacuumed: string[] = [];
    for (const table of tables) {
      if (stopped()) break;
      await vacuumTable(db.sql, table);
      vacuumed.push(table);
    }
    reports.push({ step: EMBEDDED_VACUUM, ms: Math.round(performance.now() - started), tables: vacuumed });
  }
  if (stopped()) return reports;
  const walBytes = await checkpointDue(db.sql);
  if (walBytes !== null) {
    const started = performance.now();
    await checkpoint(db.sql);
    reports.push({ step: EMBEDDED_CHECKPOINT, ms: Math.round(performance.now() - started), walBytes });
  }
  return reports;
}
