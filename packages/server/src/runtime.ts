import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { setV8Flag } from './code-cache.js';
import type { Config } from './config.js';
import { ConfigError } from './config.js';
import { openPGlite, openPostgres, PGliteStartError, type Database } from './db/database.js';
import { prepareDataDir, type PrepareDataDirResult } from './db/pglite-template.js';
import { generateEncryptionKey, parseEncryptionKey } from './security/crypto.js';

export const PGLITE_DIR = 'pgdata';
export const LOCK_FILE = 'hookrelay.pid';
export const ENCRYPTION_KEY_FILE = 'encryption-key';

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
}

/**
 * How long a start waits for the process named in the lock file to go away before refusing: one
 * killed a moment ago (`kill -9` and an immediate restart) still exists while the kernel tears it
 * down, and a refusal then would be wrong.
 */
const LOCK_HOLDER_EXIT_WAIT_MS = 5_000;
const LOCK_HOLDER_POLL_MS = 50;

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A zombie has exited and released everything it held: only its parent has not collected its exit
 * status yet, which may never happen (a parent that does not wait), so it must not count as the
 * lock's live holder. Linux says so in /proc; elsewhere a pid that exists counts as running.
 */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // `pid (comm) state …`: comm may hold spaces and parentheses, the state follows the last `)`.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

function isRunning(pid: number): boolean {
  return exists(pid) && !isZombie(pid);
}

/** Whether `pid` is still running after up to `waitMs`, polled. */
async function stillRunningAfter(pid: number, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  while (isRunning(pid)) {
    if (Date.now() >= deadline) return true;
    await delay(LOCK_HOLDER_POLL_MS);
  }
  return false;
}

/**
 * PGlite is one process's database: a pid file keeps a second process (a second server, or an
 * admin command while the server runs) from opening the same data dir. A lock whose process is gone
 * (or a zombie) is stale and taken over; one whose process still runs is waited for, briefly, since
 * a process killed a moment ago is still being torn down.
 */
async function lockDataDir(dataDir: string, holder: string): Promise<() => void> {
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n${holder}\n`);
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(file, 'utf8').startsWith(`${process.pid}\n`)) unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const [pidText, owner] = readFileSync(file, 'utf8').split('\n');
      const pid = Number(pidText);
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && (await stillRunningAfter(pid, LOCK_HOLDER_EXIT_WAIT_MS))) {
        throw new DataDirLockedError(
          `the data dir ${dataDir} is in use by ${owner || 'hookrelay-server'} (pid ${pid}); stop it first, ` +
            'or point DATABASE_URL at PostgreSQL to run several processes',
        );
      }
      unlinkSync(file); // stale lock of a process that is gone
    }
  }
  throw new DataDirLockedError(`could not lock the data dir ${dataDir}`);
}

/**
 * Opens the configured database: PostgreSQL when DATABASE_URL is set, else PGlite in the data dir,
 * a new one unpacked from the template data dir (see db/pglite-template.ts). `onPrepared` learns
 * how the PGlite data dir came to be.
 */
export async function openDatabase(
  config: Config,
  holder = 'hookrelay-server',
  onPrepared?: (result: PrepareDataDirResult) => void,
): Promise<Database> {
  if (config.databaseUrl) {
    return openPostgres({ url: config.databaseUrl, poolSize: config.dbPoolSize, applicationName: holder });
  }
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const unlock = await lockDataDir(config.dataDir, holder);
  try {
    // Before PGlite compiles its WebAssembly, which is the only WebAssembly this process runs. Only
    // V8's choice of compiler changes: the database's behaviour and durability do not. Both are set:
    // the bundled program's launcher has set the baseline one already (see code-cache.ts).
    setV8Flag(config.pgliteWasmTier === 'baseline' ? '--liftoff-only' : '--no-liftoff-only');
    const pgdata = path.join(config.dataDir, PGLITE_DIR);
    // Under the lock: only this process may decide that the data dir is new.
    onPrepared?.(await prepareDataDir(pgdata));
    const db = await openPGlite({ dataDir: pgdata, settings: config.pgliteSettings });
    return {
      ...db,
      async close() {
        try {
          await db.close();
        } finally {
          unlock();
        }
      },
    };
  } catch (error) {
    unlock();
    // A setting PostgreSQL refuses ("unrecognized configuration parameter", "invalid value for parameter").
    if (error instanceof PGliteStartError && /parameter/.test(error.message)) throw new ConfigError(`${error.message} (settings: HOOKRELAY_PGLITE_OPTIONS)`);
    throw error;
  }
}

/**
 * The AES-256-GCM key for secrets at rest: HOOKRELAY_ENCRYPTION_KEY, or in embedded mode a key
 * generated once into the data dir. With PostgreSQL every process must share one key, so it is required.
 */
export async function loadEncryptionKey(config: Config): Promise<Buffer> {
  if (config.encryptionKey) {
    try {
      return parseEncryptionKey(config.encryptionKey);
    } catch (error) {
      throw new ConfigError(`HOOKRELAY_ENCRYPTION_KEY: ${(error as Error).message}`);
    }
  }
  if (config.databaseUrl) {
    throw new ConfigError(
      'HOOKRELAY_ENCRYPTION_KEY is required with DATABASE_URL (every process must share it); generate one with `openssl rand -hex 32`',
    );
  }
  const file = path.join(config.dataDir, ENCRYPTION_KEY_FILE);
  try {
    return parseEncryptionKey((await readFile(file, 'utf8')).trim());
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const key = generateEncryptionKey();
  await writeFile(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  return parseEncryptionKey(key);
}
