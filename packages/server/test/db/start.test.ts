import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPGlite, openPostgres, type Database } from '../../src/db/database.js';
import { OTEL_PACKAGES } from '../../src/tracing/tracing.js';
import { backend, createEmptyPostgresDatabaseUrl } from '../helpers/database.js';
import { installedServer } from '../helpers/installed.js';
import { SERVER_MAIN } from '../helpers/process.js';

/**
 * What `hookrelay-server start` does before it serves, as a real process on a new database of the
 * project's backend: a refusal of its configuration changes nothing, the bootstrap key is printed by
 * the start that made it and written only to the data dir, and the log says what the start applied
 * and which settings open the server up.
 */

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-start-'));
  dirs.push(dir);
  return dir;
}

interface Ended {
  /** The exit code, or 'listening' when the process got to serve (it is then stopped with SIGTERM). */
  code: number | null | 'listening';
  stdout: string;
  stderr: string;
}

/** Runs `<program> start` in `cwd` to its end (bounded); one that gets to listen is stopped and reported. */
function runStart(program: string, env: Record<string, string>, cwd: string, whileListening: (url: string, stdout: string) => Promise<void> = async () => {}): Promise<Ended> {
  const child = spawn(process.execPath, [program, 'start'], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: cwd, HOOKRELAY_PORT: '0', HOOKRELAY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let listening = false;
  let during: Promise<unknown> = Promise.resolve();
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const match = /hookrelay-server listening on (\S+)/.exec(stdout);
    if (!listening && match) {
      listening = true;
      during = whileListening(match[1]!, stdout).catch((error: unknown) => error).finally(() => child.kill('SIGTERM'));
    }
  });
  return new Promise<Ended>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      void during.then((error) => (error instanceof Error ? reject(error) : resolve({ code: listening ? 'listening' : code, stdout, stderr })));
    });
  });
}

/** A new database: PostgreSQL with no schema at all, or a data dir that does not exist yet. */
async function newDeployment(): Promise<{ env: Record<string, string>; dataDir: string; tables: () => Promise<number>; open: () => Promise<Database> }> {
  const dataDir = path.join(tempDir(), 'data');
  if (backend() === 'pglite') {
    return {
      env: { HOOKRELAY_DATA_DIR: dataDir },
      dataDir,
      tables: async () => (existsSync(dataDir) ? 1 : 0),
      open: () => openPGlite({ dataDir: path.join(dataDir, 'pgdata') }),
    };
  }
  const url = await createEmptyPostgresDatabaseUrl();
  return {
    env: { DATABASE_URL: url, HOOKRELAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'), HOOKRELAY_DATA_DIR: dataDir },
    dataDir,
    open: async () => openPostgres({ url, poolSize: 1 }),
    tables: async () => {
      const db = openPostgres({ url, poolSize: 1 });
      try {
        const [row] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`;
        return row!.n;
      } finally {
        await db.close();
      }
    },
  };
}

const KEY_LINE = /^hookrelay-server bootstrap API key \(shown once; (.*)\): (hr_[0-9a-f]{40})$/m;

async function whoami(url: string, key: string): Promise<number> {
  return (await fetch(`${url}/v1/whoami`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(10_000) })).status;
}

/** The JSON log lines of `stdout` whose msg is `msg`. */
function logLines(stdout: string, msg: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);
}

describe('a start refused for its configuration', () => {
  it('without the OpenTelemetry or AWS SDK installed: exits 2 with the global install command, writes nothing; the next start prints the bootstrap key', async () => {
    const d = await newDeployment();
    const cwd = tempDir();
    const { program } = installedServer(tempDir(), 'global');

    const traced = await runStart(program, { ...d.env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }, cwd);
    expect(traced.code, traced.stdout + traced.stderr).toBe(2);
    expect(traced.stderr).toContain(`npm install -g ${OTEL_PACKAGES.join(' ')} (or unset`);
    expect(traced.stdout).not.toContain('bootstrap');
    const s3 = await runStart(program, { ...d.env, HOOKRELAY_PAYLOAD_STORE: 's3://hookrelay-payloads/p' }, cwd);
    expect(s3.code, s3.stdout + s3.stderr).toBe(2);
    expect(s3.stderr).toContain('Install it beside hookrelay-server: npm install -g @aws-sdk/client-s3@3\n');
    // Nothing written: no table (no project, no key), no data dir, nothing in the working directory.
    expect(await d.tables()).toBe(0);
    expect(existsSync(d.dataDir)).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);

    let status = 0;
    const good = await runStart(program, d.env, cwd, async (url, stdout) => {
      status = await whoami(url, KEY_LINE.exec(stdout)?.[2] ?? 'none');
    });
    const [, where, key] = KEY_LINE.exec(good.stdout) ?? [];
    expect(good.code, good.stdout + good.stderr).toBe('listening');
    expect(where).toBe(`also written to ${path.join(d.dataDir, 'bootstrap-api-key')}`);
    expect(readFileSync(path.join(d.dataDir, 'bootstrap-api-key'), 'utf8')).toBe(`${key}\n`);
    expect(status).toBe(200);
  }, 240_000);

  it.runIf(backend() === 'pglite')("beside a project's install: prints the command that installs into that project", async () => {
    const { program, project } = installedServer(tempDir(), 'local');
    const cwd = tempDir();
    const traced = await runStart(program, { HOOKRELAY_DATA_DIR: path.join(cwd, 'data'), OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }, cwd);
    expect(traced.code).toBe(2);
    expect(traced.stderr).toContain(`: npm install --prefix ${project} ${OTEL_PACKAGES.join(' ')} (or unset`);
    expect(readdirSync(cwd)).toEqual([]);
  }, 120_000);
});

describe('the bootstrap key', () => {
  it.runIf(backend() === 'postgres')('with DATABASE_URL and no data dir: printed only, nothing written to the working directory', async () => {
    const d = await newDeployment();
    const cwd = tempDir();
    const { HOOKRELAY_DATA_DIR: _unset, ...env } = d.env;
    let status = 0;
    const started = await runStart(SERVER_MAIN, env, cwd, async (url, stdout) => {
      status = await whoami(url, KEY_LINE.exec(stdout)?.[2] ?? 'none');
    });
    expect(started.code, started.stdout + started.stderr).toBe('listening');
    expect(KEY_LINE.exec(started.stdout)?.[1]).toBe('not written to a file, as no data dir is set: store it now');
    expect(status).toBe(200);
    expect(readdirSync(cwd)).toEqual([]);
  }, 120_000);

  it.runIf(backend() === 'postgres')('a key file that cannot be written: the key is printed all the same and the server starts', async () => {
    const d = await newDeployment();
    const cwd = tempDir();
    const notADir = path.join(cwd, 'a-file');
    writeFileSync(notADir, '');
    let status = 0;
    const started = await runStart(SERVER_MAIN, { ...d.env, HOOKRELAY_DATA_DIR: path.join(notADir, 'data') }, cwd, async (url, stdout) => {
      status = await whoami(url, KEY_LINE.exec(stdout)?.[2] ?? 'none');
    });
    expect(started.code, started.stdout + started.stderr).toBe('listening');
    expect(KEY_LINE.exec(started.stdout)?.[1]).toBe(`it could not be written to ${path.join(notADir, 'data', 'bootstrap-api-key')}: ENOTDIR: store it now`);
    expect(status).toBe(200);
  }, 120_000);
});

describe('the log of a start', () => {
  it('names the migrations it applied, and says nothing of them when there were none', async () => {
    const d = await newDeployment();
    const cwd = tempDir();
    const env = { ...d.env, HOOKRELAY_LOG_LEVEL: 'info' };
    const applied = async (): Promise<Record<string, unknown>[]> => {
      const started = await runStart(SERVER_MAIN, env, cwd);
      expect(started.code, started.stdout + started.stderr).toBe('listening');
      return logLines(started.stdout, 'applied database migrations');
    };
    const first = await applied();
    if (backend() === 'postgres') {
      expect(first).toHaveLength(1);
      expect(first[0]!.level).toBe('info');
      expect(first[0]!.migrations).toEqual(expect.arrayContaining(['001_foundation', '019_encryption_key_rotation']));
      expect(first[0]!.current_sql).toEqual(expect.arrayContaining(['hookrelay_store_inbound_batch']));
    } else {
      // A new data dir comes from the template, migrated when it was built.
      expect(first).toEqual([]);
    }
    // As a database of the version before the last migration.
    const db = await d.open();
    try {
      await db.sql`ALTER TABLE encryption_key_check DROP COLUMN rotating_check_value`;
      await db.sql`DELETE FROM schema_migrations WHERE name = '019_encryption_key_rotation'`;
    } finally {
      await db.close();
    }
    expect((await applied()).map((line) => [line.level, line.migrations, line.current_sql])).toEqual([['info', ['019_encryption_key_rotation'], []]]);
    expect(await applied()).toEqual([]);
  }, 180_000);

  it.runIf(backend() === 'pglite')('warns once for each setting that opens the server up: a trusted proxy block of every address, private networks', async () => {
    const cwd = tempDir();
    const dataDir = path.join(cwd, 'data');
    const risky = await runStart(SERVER_MAIN, { HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_TRUSTED_PROXIES: '10.0.0.0/8,0.0.0.0/0,::/0', HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true' }, cwd);
    expect(risky.code, risky.stdout + risky.stderr).toBe('listening');
    const warnings = risky.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: string; setting?: string; msg: string })
      .filter((entry) => entry.setting !== undefined);
    expect(warnings.map((w) => [w.level, w.setting])).toEqual([
      ['warn', 'HOOKRELAY_TRUSTED_PROXIES'],
      ['warn', 'HOOKRELAY_ALLOW_PRIVATE_NETWORKS'],
    ]);
    expect(warnings[0]!.msg).toContain('HOOKRELAY_TRUSTED_PROXIES holds 0.0.0.0/0, ::/0, which trusts every peer as a proxy: any client can choose the address');
    expect(warnings[1]!.msg).toContain('HOOKRELAY_ALLOW_PRIVATE_NETWORKS is on: endpoints may deliver to loopback, private and link-local addresses');

    const plain = await runStart(SERVER_MAIN, { HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_TRUSTED_PROXIES: '10.0.0.0/8,::1' }, cwd);
    expect(plain.code).toBe('listening');
    expect(plain.stdout).not.toMatch(/"setting":/);
  }, 120_000);
});
