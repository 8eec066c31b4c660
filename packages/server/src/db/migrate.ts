import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.js';
import { advisoryXactLock } from './locks.js';

/** Forward-only numbered migrations shipped next to dist/ (`migrations/NNN_name.sql`). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

/** Any constant shared by every hookrelay process: serialises concurrent starts. */
const MIGRATION_LOCK_KEY = 0x686f6f6b; // "hook"

export interface Migration {
  version: number;
  name: string;
  script: string;
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

/**
 * Applies every pending migration in one transaction under an advisory lock, so two processes
 * starting at once apply each migration exactly once. Returns the names applied.
 */
export async function migrate(db: Database, migrations?: Migration[]): Promise<string[]> {
  const all = migrations ?? (await loadMigrations());
  return db.sql.begin(async (tx) => {
    await advisoryXactLock(tx, MIGRATION_LOCK_KEY);
    await tx.execScript(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = new Set((await tx<{ version: number }>`SELECT version FROM schema_migrations`).map((r) => r.version));
    const names: string[] = [];
    for (const migration of all) {
      if (applied.has(migration.version)) continue;
      await tx.execScript(migration.script);
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${migration.version}, ${migration.name})`;
      names.push(migration.name);
    }
    return names;
  });
}
