import type { Sql } from './database.js';

/**
 * Upkeep that PostgreSQL's background processes do on their own (autovacuum, the checkpointer) and
 * that PGlite, one backend in single-user mode, never does: the embedded server's sweepers call
 * these. The thresholds are PostgreSQL's own settings, read from the database, so
 * HOOKRELAY_PGLITE_OPTIONS tunes them as it would on a server.
 */

/** A table as the statistics describe it now: what the upkeep decides its vacuum by. */
export interface TableActivity {
  /** `schema.name`, quoted. */
  name: string;
  /** Autovacuum would vacuum it now. */
  due: boolean;
  /** Autovacuum would analyze it now: its planner statistics are that far behind its rows. */
  analyzeDue: boolean;
  /** Rows inserted into it and deleted from it, counted since the statistics began (they survive a clean stop). */
  inserted: number;
  deleted: number;
  live: number;
}

/**
 * Every table, most dead rows first, and whether autovacuum would vacuum it now: dead rows over
 * `autovacuum_vacuum_threshold` + `autovacuum_vacuum_scale_factor` × rows, rows inserted since the
 * last vacuum over the insert threshold and scale factor (so pages become all-visible and frozen),
 * or transaction ids older than `autovacuum_freeze_max_age`; and whether it would analyze it: rows
 * changed since the last analyze over `autovacuum_analyze_threshold` +
 * `autovacuum_analyze_scale_factor` × rows. Without statistics the planner takes every table for a
 * few pages and joins by scanning it whole, at a cost that grows with the table.
 */
export async function tableActivity(sql: Sql): Promise<TableActivity[]> {
  return sql<TableActivity>`
    SELECT format('%I.%I', s.schemaname, s.relname) AS name,
           (s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
                           + current_setting('autovacuum_vacuum_scale_factor')::float8 * t.tuples
            OR (current_setting('autovacuum_vacuum_insert_threshold')::float8 >= 0
                AND s.n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8
                                           + current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * t.tuples)
            OR age(c.relfrozenxid) > current_setting('autovacuum_freeze_max_age')::float8) AS due,
           s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                                   + current_setting('autovacuum_analyze_scale_factor')::float8 * t.tuples AS "analyzeDue",
           s.n_tup_ins::float8 AS inserted, s.n_tup_del::float8 AS deleted, s.n_live_tup::float8 AS live
    FROM pg_stat_user_tables s
    JOIN pg_class c ON c.oid = s.relid
    CROSS JOIN LATERAL (SELECT greatest(c.reltuples, 0)::float8 AS tuples) t
    ORDER BY s.n_dead_tup DESC, s.relname`;
}

/**
 * A table to vacuum, analyze or both: `full`, rewritten (VACUUM FULL) rather than vacuumed;
 * `vacuum: false`, analyzed only.
 */
export interface VacuumTarget {
  name: string;
  full: boolean;
  vacuum: boolean;
  analyze: boolean;
}

/**
 * A VACUUM of one table (a name from tableActivity). Plain: its dead rows' space becomes free for new
 * rows, and free pages at the table's end go back to the file system. FULL: the table and its
 * indexes are written anew with the live rows only and the old files removed, so all the free space
 * goes back; the table is locked meanwhile and needs room for the copy. One table per statement, so
 * that queries waiting for the embedded database's one connection run between two tables.
 */
export async function vacuumTable(sql: Sql, table: VacuumTarget): Promise<void> {
  const options = [...(table.full ? ['FULL'] : []), ...(table.analyze ? ['ANALYZE'] : [])];
  if (!table.vacuum && !table.full) await sql.execScript(`ANALYZE ${table.name}`);
  else await sql.execScript(`VACUUM ${options.length > 0 ? `(${options.join(', ')}) ` : ''}${table.name}`);
}

/**
 * Bytes of WAL written since the last checkpoint, when the checkpointer would start one now: that
 * much WAL reaches `max_wal_size` / (1 + `checkpoint_completion_target`), or `checkpoint_timeout`
 * has passed since the last one and more than its own record was written. Null when none is due.
 */
export async function checkpointDue(sql: Sql): Promise<number | null> {
  const [row] = await sql<{ wal_bytes: number; due: boolean }>`
    SELECT w.bytes AS wal_bytes,
           w.bytes > pg_size_bytes(current_setting('max_wal_size'))::float8
                     / (1 + current_setting('checkpoint_completion_target')::float8)
           OR (w.bytes > 8192
               AND now() - cp.checkpoint_time >= make_interval(secs => (SELECT setting::float8 FROM pg_settings WHERE name = 'checkpoint_timeout')))
             AS due
    FROM pg_control_checkpoint() cp
    CROSS JOIN LATERAL (SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), cp.redo_lsn)::float8 AS bytes) w`;
  return row?.due ? row.wal_bytes : null;
}

/** A checkpoint: WAL segments before it are recycled or removed, and a crash replays only what follows. */
export async function checkpoint(sql: Sql): Promise<void> {
  await sql`CHECKPOINT`;
}
