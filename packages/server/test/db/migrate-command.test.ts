import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCurrentSql, loadMigrations } from '../../src/db/migrate.js';
import { backend, createEmptyPostgresDatabaseUrl } from '../helpers/database.js';
import { SERVER_MAIN } from '../helpers/process.js';

/** `hookrelay-server migrate --json` on a new database, then on the same one up to date. */
const run = promisify(execFile);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-migrate-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function migrateJson(env: Record<string, string>): Promise<{ migrations: string[]; current_sql: string[]; superseded: string[] }> {
  const { stdout } = await run(process.execPath, [SERVER_MAIN, 'migrate', '--json'], {
    env: { PATH: process.env.PATH ?? '', HOOKRELAY_LOG_LEVEL: 'warn', ...env },
    timeout: 120_000,
  });
  return JSON.parse(stdout) as { migrations: string[]; current_sql: string[]; superseded: string[] };
}

describe('hookrelay-server migrate --json', () => {
  it('says which migrations and current SQL files ran, then [] once the database is up to date', async () => {
    const env: Record<string, string> =
      backend() === 'postgres'
        ? { DATABASE_URL: await createEmptyPostgresDatabaseUrl(), HOOKRELAY_ENCRYPTION_KEY: 'ab'.repeat(32) }
        : { HOOKRELAY_DATA_DIR: dataDir };
    const shipped = (await loadMigrations()).map((m) => m.name);
    const functions = (await loadCurrentSql()).map((f) => f.name);

    const first = await migrateJson(env);
    if (backend() === 'postgres') {
      expect(first).toEqual({ migrations: shipped, current_sql: functions, superseded: [] });
    } else {
      // A new embedded data dir comes from the build's template, which holds every shipped migration.
      expect(first.migrations).toEqual([]);
      expect(first.superseded).toEqual([]);
      for (const name of first.current_sql) expect(functions).toContain(name);
    }
    expect(await migrateJson(env)).toEqual({ migrations: [], current_sql: [], superseded: [] });
  }, 180_000);
});
