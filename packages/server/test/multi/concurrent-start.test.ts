import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/database.js';
import { MIGRATIONS_DIR } from '../../src/db/migrate.js';
import { createEmptyPostgresDatabaseUrl } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';

const started: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop(2000)));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('two server processes starting at once on one empty PostgreSQL database', () => {
  it('apply each migration once, bootstrap one project, serve the same key, and exit 0 on SIGTERM', async () => {
    const databaseUrl = await createEmptyPostgresDatabaseUrl();
    const apiKey = `hr_${randomBytes(20).toString('hex')}`;
    const env = (i: number) => {
      const dir = mkdtempSync(path.join(os.tmpdir(), `hookrelay-proc${i}-`));
      dirs.push(dir);
      return {
        DATABASE_URL: databaseUrl,
        HOOKRELAY_DATA_DIR: dir,
        HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
        HOOKRELAY_ENCRYPTION_KEY: '11'.repeat(32),
      };
    };
    const servers = await Promise.all([startServerProcess(env(1)), startServerProcess(env(2))]);
    started.push(...servers);

    const db = openPostgres({ url: databaseUrl, poolSize: 1 });
    try {
      const migrationFiles = readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql'));
      const applied = await db.sql<{ version: number }>`SELECT version FROM schema_migrations ORDER BY version`;
      expect(applied).toHaveLength(migrationFiles.length);
      const projects = await db.sql<{ name: string }>`SELECT name FROM projects`;
      expect(projects).toEqual([{ name: 'default' }]);
      const keys = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys`;
      expect(keys[0]!.n).toBe(1);
    } finally {
      await db.close();
    }

    for (const server of servers) {
      const response = await fetch(`${server.url}/v1/whoami`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { data: { project_name: string } }).data.project_name).toBe('default');
      // The key came from the environment, so it is never printed.
      expect(server.stdout()).not.toContain(apiKey);
    }

    const codes = await Promise.all(servers.map((s) => s.stop()));
    expect(codes).toEqual([0, 0]);
  });

  it('refuses to start on PostgreSQL without a shared encryption key', async () => {
    const databaseUrl = await createEmptyPostgresDatabaseUrl();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-nokey-'));
    dirs.push(dir);
    await expect(startServerProcess({ DATABASE_URL: databaseUrl, HOOKRELAY_DATA_DIR: dir }, 30_000)).rejects.toThrow(
      /HOOKRELAY_ENCRYPTION_KEY is required with DATABASE_URL/,
    );
  });
});
