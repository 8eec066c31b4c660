import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/database.js';
import { loadCurrentSql, MIGRATIONS_DIR, sha256Hex } from '../../src/db/migrate.js';
import { createEmptyPostgresDatabaseUrl, createPostgresDatabaseUrl } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';

const started: ServerProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop(2000)));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('two server processes starting at once on one empty PostgreSQL database', () => {
  it('apply each migration and current SQL file once, bootstrap one project, serve the same key, and exit 0 on SIGTERM', async () => {
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
      // Each current SQL file applied once, by one of the two.
      const bodies = await db.sql<{ name: string; sha256: string; current: boolean }>`
        SELECT name, sha256, replaced_at IS NULL AS current FROM schema_current_sql ORDER BY name COLLATE "C"`;
      expect(bodies).toEqual((await loadCurrentSql()).map((f) => ({ name: f.name, sha256: sha256Hex(f.script), current: true })));
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

  it('a process that ships an older body of a function than the database runs keeps the newer one and says so', async () => {
    const databaseUrl = await createPostgresDatabaseUrl();
    const db = openPostgres({ url: databaseUrl, poolSize: 1 });
    const definition = async () =>
      (await db.sql<{ def: string }>`SELECT pg_get_functiondef('hookrelay_uuidv7_after'::regproc) AS def`)[0]!.def;
    try {
      // As a process of a newer version leaves it: another body current, this version's replaced.
      await db.sql`UPDATE schema_current_sql SET replaced_at = now() WHERE name = 'hookrelay_uuidv7_after'`;
      await db.sql`INSERT INTO schema_current_sql (name, sha256) VALUES ('hookrelay_uuidv7_after', ${'f'.repeat(64)})`;
      const shipped = (await loadCurrentSql()).find((f) => f.name === 'hookrelay_uuidv7_after')!.script;
      await db.sql.execScript(shipped.replace('AS $fn$\n', 'AS $fn$\n  -- a newer body\n'));
      const before = await definition();
      expect(before).toContain('a newer body');
      const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-older-'));
      dirs.push(dir);
      const server = await startServerProcess({ DATABASE_URL: databaseUrl, HOOKRELAY_DATA_DIR: dir, HOOKRELAY_ENCRYPTION_KEY: '11'.repeat(32) });
      started.push(server);
      const warning = server
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: string; msg: string; functions?: string[] })
        .find((line) => line.msg.includes('newer bodies of these functions'));
      expect(warning).toMatchObject({ level: 'warn', functions: ['hookrelay_uuidv7_after'] });
      expect(await definition()).toBe(before);
      const [current] = await db.sql<{ sha256: string }>`
        SELECT sha256 FROM schema_current_sql WHERE name = 'hookrelay_uuidv7_after' AND replaced_at IS NULL`;
      expect(current!.sha256).toBe('f'.repeat(64));
      expect(await server.stop()).toBe(0);
    } finally {
      await db.close();
    }
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
