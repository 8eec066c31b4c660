import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * A throwaway PostgreSQL cluster for tests (toolchain.md recipe): initdb into a temp dir, run as
 * the `postgres` OS user when we are root (the server refuses root), on a free loopback port.
 */
export interface PgCluster {
  url: string;
  port: number;
  dir: string;
  /**
   * Stops the server but keeps its data dir, as an outage does: `fast` ends client sessions with
   * 57P01 (an operator's restart), `immediate` drops them as a crash does. Runs pg_ctl without
   * blocking the caller's event loop, so the clients under test keep running meanwhile.
   */
  halt(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts a halted server again on the same port and data dir. */
  resume(): Promise<void>;
  /** Stops the server (if running) and removes the data dir. */
  stop(): void;
}

const CANDIDATE_BIN_DIRS = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'];

export function findPgBin(env: Readonly<Record<string, string | undefined>>): string {
  const fromEnv = env.HOOKRELAY_TEST_PGBIN;
  if (fromEnv && existsSync(path.join(fromEnv, 'initdb'))) return fromEnv;
  for (const dir of CANDIDATE_BIN_DIRS) if (existsSync(path.join(dir, 'initdb'))) return dir;
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return path.dirname(which.stdout.trim());
  throw new Error('PostgreSQL server binaries (initdb, pg_ctl) not found: install postgresql-15 or set HOOKRELAY_TEST_PGBIN');
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface PgClusterOptions {
  /**
   * Keep PostgreSQL's durable defaults (fsync, synchronous_commit, full_page_writes on), so that a
   * commit waits for the WAL flush as in production. Benchmarks need this; tests do not.
   */
  durable?: boolean;
}

export async function startPgCluster(env: Readonly<Record<string, string | undefined>>, opts: PgClusterOptions = {}): Promise<PgCluster> {
  const bin = findPgBin(env);
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-pg-'));
  const command = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args]] : [path.join(bin, cmd), args];
  const run = (cmd: string, args: string[]) => {
    const [file, argv] = command(cmd, args);
    execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  };
  const runAsync = async (cmd: string, args: string[]) => {
    const [file, argv] = command(cmd, args);
    await promisify(execFile)(file, argv);
  };
  if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
  const port = await freePort();
  const data = path.join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  // Durability is irrelevant for a throwaway test cluster; speed is not (unless `durable`).
  const fast = opts.durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off';
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir}${fast} -c max_connections=300`;
  const startArgs = ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60', '-o', options, 'start'];
  run('pg_ctl', startArgs);
  let running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    async halt(mode = 'fast') {
      if (!running) throw new Error('the PostgreSQL test cluster is already halted');
      await runAsync('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
      running = false;
    },
    async resume() {
      if (running) throw new Error('the PostgreSQL test cluster is already running');
      await runAsync('pg_ctl', startArgs);
      running = true;
    },
    stop() {
      try {
        if (running) run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
        running = false;
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
