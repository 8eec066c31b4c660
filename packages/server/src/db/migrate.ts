import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database, Sql } from './database.js';
import { advisoryXactLock } from './locks.js';

/** Forward-only numbered migrations shipped next to dist/ (`migrations/NNN_name.sql`). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/**
 * The current body of each stored function, one file per function named after it
 * (`sql/<function>.sql`, a `CREATE OR REPLACE FUNCTION`), shipped next to dist/. A migration that
 * created or replaced a function is history, frozen like every migration; what the database runs
 * is in these files.
 */
export const CURRENT_SQL_DIR = fileURLToPath(new URL('../../sql/', import.meta.url));

/** Any constant shared by every hookrelay process: serialises concurrent starts. */
const MIGRATION_LOCK_KEY = 0x686f6f6b; // "hook"

export interface Migration {
  version: number;
  name: string;
  script: string;
}

/** One file of CURRENT_SQL_DIR: `name` is the function's name (the file's, without `.sql`). */
export interface CurrentSql {
  name: string;
  script: string;
}

export interface MigrateResult {
  /** The migrations applied, by name. */
  migrations: string[];
  /** The current SQL files applied (new or changed), by name. */
  currentSql: string[];
  /**
   * Current SQL files left as they are because the database has already replaced that very body by
   * another: this process is older than one that started before it (a rolling upgrade).
   */
  superseded: string[];
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{3,}_[\w-]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const version = Number.parseInt(file.split('_', 1)[0]!, 10);
    if (migrations.some((m) => m.version === version)) throw new Error(`duplicate migration version ${version} (${file})`);
    migrations.push({ version, name: file.replace(/\.sql$/, ''), script: await readFile(path.join(dir, file), 'utf8') });
  }
  // By number, not by file name: `1000_x.sql` comes after `999_y.sql`.
  return migrations.sort((a, b) => a.version - b.version);
}

/** The current SQL files, by name. */
export async function loadCurrentSql(dir = CURRENT_SQL_DIR): Promise<CurrentSql[]> {
  const files = (await readdir(dir)).filter((f) => /^[a-z][a-z0-9_]*\.sql$/.test(f)).sort();
  return Promise.all(files.map(async (file) => ({ name: file.replace(/\.sql$/, ''), script: await readFile(path.join(dir, file), 'utf8') })));
}

export function sha256Hex(script: string): string {
  return createHash('sha256').update(script).digest('hex');
}

/**
 * Applies every pending migration, then every current SQL file the database does not run yet, in
 * one transaction under an advisory lock: two processes starting at once apply each exactly once,
 * and never replace one function at the same time (PostgreSQL refuses the second with "tuple
 * concurrently updated").
 *
 * A current SQL file is applied when its SHA-256 is not the one recorded for it, and never when the
 * database has held that very body and replaced it since: during a rolling upgrade a process of the
 * previous version that restarts after a newer one leaves the newer body in place (and reports it
 * in `superseded`), so the database never goes back to an older function. Its callers of either
 * version keep working because a function keeps its arguments and results. Hashing rather than
 * applying at every start keeps the catalog as it is, so no connection re-plans the function.
 */
export async function migrate(db: Database, migrations?: Migration[], currentSql?: CurrentSql[]): Promise<MigrateResult> {
  const all = migrations ?? (await loadMigrations());
  const current = currentSql ?? (await loadCurrentSql());
  return db.sql.begin(async (tx) => {
    await advisoryXactLock(tx, MIGRATION_LOCK_KEY);
    await tx.execScript(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = new Set((await tx<{ version: number }>`SELECT version FROM schema_migrations`).map((r) => r.version));
    const result: MigrateResult = { migrations: [], currentSql: [], superseded: [] };
    for (const migration of all) {
      if (applied.has(migration.version)) continue;
      await tx.execScript(migration.script);
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${migration.version}, ${migration.name})`;
      result.migrations.push(migration.name);
    }
    await applyCurrentSql(tx, current, result);
    return result;
  });
}

async function applyCurrentSql(tx: Sql, files: readonly CurrentSql[], result: MigrateResult): Promise<void> {
  // Every body each function has had here; `replaced_at` is null for the one it runs.
  await tx.execScript(`CREATE TABLE IF NOT EXISTS schema_current_sql (
      name text NOT NULL,
      sha256 text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now(),
      replaced_at timestamptz,
      PRIMARY KEY (name, sha256)
    )`);
  const held = await tx<{ name: string; sha256: string; replaced: boolean }>`
    SELECT name, sha256, replaced_at IS NOT NULL AS replaced FROM schema_current_sql`;
  for (const file of files) {
    const sha256 = sha256Hex(file.script);
    const body = held.find((h) => h.name === file.name && h.sha256 === sha256);
    if (body !== undefined) {
      if (body.replaced) result.superseded.push(file.name);
      continue;
    }
    await tx.execScript(file.script);
    await tx`UPDATE schema_current_sql SET replaced_at = now() WHERE name = ${file.name} AND replaced_at IS NULL`;
    await tx`INSERT INTO schema_current_sql (name, sha256) VALUES (${file.name}, ${sha256})`;
    result.currentSql.push(file.name);
  }
}
