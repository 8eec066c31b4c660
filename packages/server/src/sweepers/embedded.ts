import type { Database } from '../db/database.js';
import { checkpoint, checkpointDue, tableActivity, vacuumTable, type TableActivity, type VacuumTarget } from '../db/maintenance.js';

export const EMBEDDED_VACUUM = 'embedded-vacuum';
export const EMBEDDED_CHECKPOINT = 'embedded-checkpoint';

/**
 * Rows' worth of free space in a table from which it is rewritten (`VACUUM FULL`), once it is more
 * than the rows it holds: below this its file is small either way.
 */
export const REWRITE_MIN_FREE_ROWS = 10_000;

/**
 * What the upkeep remembers from round to round: each table's counts of inserted and deleted rows
 * when it was last rewritten, or when this process first saw it (what happened before is not known
 * to it).
 */
export type RewriteMarks = Map<string, { inserted: number; deleted: number }>;

export interface EmbeddedUpkeepReport {
  /** A step that did something: what it did, and how long it took. */
  step: typeof EMBEDDED_VACUUM | typeof EMBEDDED_CHECKPOINT;
  ms: number;
  /** The tables vacuumed; `rewritten`: those of them vacuumed FULL; `analyzed`: the tables whose statistics were renewed. */
  tables?: string[];
  rewritten?: string[];
  analyzed?: string[];
  walBytes?: number;
}

/**
 * The tables to vacuum or analyze: those autovacuum would vacuum, plain, or analyze; and FULL those in which more rows'
 * worth of space is free than they hold (and at least REWRITE_MIN_FREE_ROWS): the rows deleted since
 * their last rewrite less the rows inserted since, which took freed space again. That is a table
 * after retention removed a backlog, never one where as many rows arrive as expire. A plain vacuum
 * leaves such a table's file as large as it was: the free pages are seldom at its end, since the
 * oldest rows, which go first, come first. The rewrite copies fewer rows than were deleted, and
 * gives all the free space back.
 */
export function vacuumTargets(tables: readonly TableActivity[], marks: RewriteMarks): VacuumTarget[] {
  const targets: VacuumTarget[] = [];
  for (const table of tables) {
    let mark = marks.get(table.name);
    if (mark === undefined) marks.set(table.name, (mark = { inserted: table.inserted, deleted: table.deleted }));
    const freeRows = table.deleted - mark.deleted - (table.inserted - mark.inserted);
    const full = freeRows >= REWRITE_MIN_FREE_ROWS && freeRows > table.live;
    if (full || table.due || table.analyzeDue) targets.push({ name: table.name, full, vacuum: full || table.due, analyze: table.analyzeDue });
  }
  return targets;
}

/**
 * What autovacuum and the checkpointer would do now, done in this process: PGlite has neither, so
 * without this the embedded data dir grows with every update and delete (dead rows are never
 * reclaimed) and with every write (WAL is kept from the start of the process). Vacuums first: its
 * own WAL is then part of the checkpoint. `marks` are the caller's from round to round
 * (vacuumTargets). Returns the steps that ran.
 */
export async function runEmbeddedUpkeep(db: Database, stopped: () => boolean = () => false, marks: RewriteMarks = new Map()): Promise<EmbeddedUpkeepReport[]> {
  const reports: EmbeddedUpkeepReport[] = [];
  const activity = await tableActivity(db.sql);
  const counts = new Map(activity.map((table) => [table.name, { inserted: table.inserted, deleted: table.deleted }]));
  const tables = vacuumTargets(activity, marks);
  if (tables.length > 0) {
    const started = performance.now();
    const vacuumed: string[] = [];
    const rewritten: string[] = [];
    const analyzed: string[] = [];
    for (const table of tables) {
      if (stopped()) break;
      await vacuumTable(db.sql, table);
      if (table.vacuum) vacuumed.push(table.name);
      if (table.analyze) analyzed.push(table.name);
      if (table.full) {
        rewritten.push(table.name);
        marks.set(table.name, counts.get(table.name)!);
      }
    }
    reports.push({ step: EMBEDDED_VACUUM, ms: Math.round(performance.now() - started), tables: vacuumed, rewritten, analyzed });
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
