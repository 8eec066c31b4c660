import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * PGlite is one process's database: a pid file keeps a second process (a second server, or an
 * admin command while the server runs) from opening the same data dir (decisions.md §2).
 */
function lockDataDir(dataDir: string, holder: string): () => void {
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
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
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
  const unlock = lockDataDir(config.dataDir, holder);
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
