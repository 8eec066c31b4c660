import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A throwaway PostgreSQL cluster for tests (toolchain.md recipe): initdb into a temp dir, run as
 * the `postgres` OS user when we are root (the server refuses root), on a free loopback port.
 */
export interface PgCluster {
  url: string;
  port: number;
  dir: string;
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
  const run = (cmd: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, cmd), ...args]] : [path.join(bin, cmd), args];
    execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  };
  if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
  const port = await freePort();
  const data = path.join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  // Durability is irrelevant for a throwaway test cluster; speed is not (unless `durable`).
  const fast = opts.durable ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off';
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir}${fast} -c max_connections=300`;
  run('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60', '-o', options, 'start']);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    stop() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
