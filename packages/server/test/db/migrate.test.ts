import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { loadMigrations, migrate, type Migration } from '../../src/db/migrate.js';
import { createTestDatabase } from '../helpers/database.js';

/** Forward-only numbered migrations, on both backends. */

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
const migrationFiles = () => readdirSync(MIGRATIONS_DIR).filter((f) => /^\d{3,}_[\w-]+\.sql$/.test(f)).sort();

let db: Database;
const tempDirs: string[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-migrations-'));
  tempDirs.push(dir);
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
  return dir;
}

async function regclass(name: string): Promise<string | null> {
  const [row] = await db.sql<{ t: string | null }>`SELECT to_regclass(${name})::text AS t`;
  return row!.t;
}

describe('migrate', () => {
  it('applies nothing on an already migrated database and returns []', async () => {
    const before = await db.sql`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`;
    expect(await migrate(db)).toEqual({ migrations: [], currentSql: [], superseded: [] });
    expect(await migrate(db)).toEqual({ migrations: [], currentSql: [], superseded: [] });
    const after = await db.sql`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`;
    expect(after).toEqual(before);
  });

  it('schema_migrations holds one row per file in packages/server/migrations', async () => {
    const files = migrationFiles();
    expect(files.length).toBeGreaterThan(0);
    const rows = await db.sql<{ version: number; name: string }>`SELECT version, name FROM schema_migrations ORDER BY version`;
    expect(rows).toEqual(
      files
        .map((f) => ({ version: Number.parseInt(f, 10), name: f.replace(/\.sql$/, '') }))
        .sort((a, b) => a.version - b.version),
    );
    for (const table of ['projects', 'api_keys', 'endpoints', 'signing_keys']) expect(await regclass(table)).toBe(table);
  });

  it('applies only a new migration, once', async () => {
    const extra: Migration = { version: 9001, name: '9001_test_extra', script: 'CREATE TABLE test_extra (id integer PRIMARY KEY);' };
    const all = [...(await loadMigrations()), extra];
    expect((await migrate(db, all)).migrations).toEqual(['9001_test_extra']);
    expect(await regclass('test_extra')).toBe('test_extra');
    expect((await migrate(db, all)).migrations).toEqual([]);
    const [row] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM schema_migrations WHERE version = 9001`;
    expect(row!.n).toBe(1);
  });

  it('rolls a failing migration back entirely', async () => {
    const bad: Migration = {
      version: 9002,
      name: '9002_test_bad',
      script: 'CREATE TABLE test_bad (id integer); INSERT INTO no_such_table VALUES (1);',
    };
    await expect(migrate(db, [...(await loadMigrations()), bad])).rejects.toThrow();
    expect(await regclass('test_bad')).toBeNull();
    const [row] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM schema_migrations WHERE version = 9002`;
    expect(row!.n).toBe(0);
    // The database is still usable afterwards.
    expect((await migrate(db)).migrations).toEqual([]);
  });
});

describe('loadMigrations', () => {
  it('loads the shipped migrations in version order with their scripts', async () => {
    const loaded = await loadMigrations();
    expect(loaded.map((m) => `${m.name}.sql`)).toEqual(migrationFiles());
    for (const m of loaded) {
      expect(m.script.length).toBeGreaterThan(0);
      expect(m.name.startsWith(String(m.version).padStart(3, '0'))).toBe(true);
    }
  });

  it('sorts by numeric version, not by file name, and ignores other files', async () => {
    const dir = tempDir({
      '1000_fourth.sql': 'SELECT 4;',
      '010_second.sql': 'SELECT 2;',
      '999_third.sql': 'SELECT 3;',
      '002_first.sql': 'SELECT 1;',
      'README.md': '# not a migration',
      'notes.sql': 'SELECT 0;',
      '003_draft.sql.bak': 'SELECT 0;',
    });
    const loaded = await loadMigrations(dir);
    expect(loaded.map((m) => m.version)).toEqual([2, 10, 999, 1000]);
    expect(loaded.map((m) => m.name)).toEqual(['002_first', '010_second', '999_third', '1000_fourth']);
    expect(loaded.map((m) => m.script)).toEqual(['SELECT 1;', 'SELECT 2;', 'SELECT 3;', 'SELECT 4;']);
  });

  it('refuses two files with the same version', async () => {
    const dir = tempDir({ '001_a.sql': 'SELECT 1;', '0001_b.sql': 'SELECT 2;' });
    await expect(loadMigrations(dir)).rejects.toThrow(/duplicate migration version 1/);
  });
});
