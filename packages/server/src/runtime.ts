import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { setV8Flag } from './code-cache.js';
import type { Config } from './config.js';
import { ConfigError } from './errors.js';
import { openPGlite, openPostgres, PGliteStartError, type Database } from './db/database.js';
import { prepareDataDir, type PrepareDataDirResult } from './db/pglite-template.js';
import { generateEncryptionKey, parseEncryptionKey, type EncryptionKeys } from './security/crypto.js';

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

/** The clock tick at which `pid` started (Linux, from /proc), or undefined where it cannot be read. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 of `pid (comm) state …`; the fields after the last `)` start with the state (field 3).
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** The data dir as the file system knows it: a copy is another directory, a rename or a symlink the same. */
function identityOf(dataDir: string): string {
  const stat = statSync(dataDir);
  return `${stat.dev}:${stat.ino}`;
}

/**
 * PGlite is one process's database: a pid file keeps a second process (a second server, or an
 * admin command while the server runs) from opening the same data dir. Besides the pid and the
 * command it names the data dir (device and inode) and when the process started. A lock is stale,
 * and taken over, when it names another directory (a data dir copied with its lock, as a hot
 * `cp -a` does), when its process is gone or a zombie, or when its pid now belongs to a process that
 * started at another time (the pid was reused). One whose process still runs is waited for,
 * briefly, since a process killed a moment ago is still being torn down.
 */
export async function lockDataDir(dataDir: string, holder: string): Promise<() => void> {
  const file = path.join(dataDir, LOCK_FILE);
  const identity = identityOf(dataDir);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n${holder}\n${identity}\n${startTimeOf(process.pid) ?? ''}\n`);
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
      // A lock written before it named the directory and the start time has two lines: it counts as this directory's.
      const [pidText, owner, lockedIdentity, startTime] = readFileSync(file, 'utf8').split('\n');
      const pid = Number(pidText);
      const held =
        Number.isInteger(pid) &&
        pid > 0 &&
        pid !== process.pid &&
        (!lockedIdentity || lockedIdentity === identity) &&
        (!startTime || startTimeOf(pid) === undefined || startTimeOf(pid) === startTime);
      if (held && (await stillRunningAfter(pid, LOCK_HOLDER_EXIT_WAIT_MS))) {
        throw new DataDirLockedError(
          `the data dir ${dataDir} is in use by ${owner || 'hookrelay-server'} (pid ${pid}); stop it first, ` +
            'or point DATABASE_URL at PostgreSQL to run several processes',
        );
      }
      unlinkSync(file); // stale: a process that is gone, or a lock copied from another directory
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
    // Under the lock: only this process may decide that the data dir is new. Prepared whether or not
    // the caller listens (an admin command on a new data dir starts from the template too).
    const prepared = await prepareDataDir(pgdata);
    onPrepared?.(prepared);
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

/** In the data dir during a rotation of the key file's key: the key it replaced (see rotateKeyFile). */
export const PREVIOUS_ENCRYPTION_KEY_FILE = 'encryption-key.previous';

function parseKeyFrom(name: string, text: string): Buffer {
  try {
    return parseEncryptionKey(text);
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
}

async function readKeyFile(file: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return parseKeyFrom(file, text.trim());
}

/**
 * The AES-256-GCM keys for secrets at rest: HOOKRELAY_ENCRYPTION_KEY, or in embedded mode the key in
 * the data dir (made on the first start). With PostgreSQL every process must share one key, so it is
 * required. HOOKRELAY_PREVIOUS_ENCRYPTION_KEY, or in embedded mode a key file left by a rotation,
 * opens the secrets not yet sealed again under the current key. Writes nothing.
 */
export async function loadEncryptionKeys(config: Config): Promise<EncryptionKeys> {
  const keyFile = path.join(config.dataDir, ENCRYPTION_KEY_FILE);
  let previous =
    config.previousEncryptionKey === undefined ? undefined : parseKeyFrom('HOOKRELAY_PREVIOUS_ENCRYPTION_KEY', config.previousEncryptionKey);
  let previousName = previous === undefined ? undefined : 'HOOKRELAY_PREVIOUS_ENCRYPTION_KEY';
  if (config.encryptionKey) {
    const current = parseKeyFrom('HOOKRELAY_ENCRYPTION_KEY', config.encryptionKey);
    return { current, previous, currentName: 'HOOKRELAY_ENCRYPTION_KEY', previousName, keyFile, fromKeyFile: false, generated: false };
  }
  if (config.databaseUrl) {
    throw new ConfigError(
      'HOOKRELAY_ENCRYPTION_KEY is required with DATABASE_URL (every process must share it); generate one with `openssl rand -hex 32`',
    );
  }
  if (previous === undefined) {
    const previousFile = path.join(config.dataDir, PREVIOUS_ENCRYPTION_KEY_FILE);
    previous = await readKeyFile(previousFile);
    if (previous !== undefined) previousName = previousFile;
  }
  const stored = await readKeyFile(keyFile);
  const current = stored ?? parseEncryptionKey(generateEncryptionKey());
  return { current, previous, currentName: keyFile, previousName, keyFile, fromKeyFile: true, generated: stored === undefined };
}

/** Writes a key that `loadEncryptionKeys` generated to the data dir's key file (never over one). */
export async function persistGeneratedKey(config: Config, keys: EncryptionKeys): Promise<void> {
  if (!keys.generated) return;
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  // On disk before the database's check value names this key.
  const handle = await open(keys.keyFile, 'wx', 0o600);
  try {
    await handle.writeFile(`${keys.current.toString('hex')}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  keys.generated = false;
}

/** Replaces `file` with `text` so that a crash leaves the old content or the new, never a mix. */
async function writeFileAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, file);
  const dir = await open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/**
 * The first half of a rotation of the key file's key: the current key moves to the previous-key
 * file, then a new key takes its place in the key file; each file is whole at every moment. From
 * then on, a start opens secrets with both, until `finishKeyFileRotation` (once every secret is
 * sealed under the new key) removes the previous-key file.
 */
export async function rotateKeyFile(config: Config, keys: EncryptionKeys): Promise<EncryptionKeys> {
  const previousFile = path.join(config.dataDir, PREVIOUS_ENCRYPTION_KEY_FILE);
  await writeFileAtomically(previousFile, `${keys.current.toString('hex')}\n`);
  const next = parseEncryptionKey(generateEncryptionKey());
  await writeFileAtomically(keys.keyFile, `${next.toString('hex')}\n`);
  return { ...keys, current: next, previous: keys.current, previousName: previousFile };
}

/** Ends a rotation of the key file's key: the previous key is no longer needed. */
export async function finishKeyFileRotation(config: Config): Promise<void> {
  await rm(path.join(config.dataDir, PREVIOUS_ENCRYPTION_KEY_FILE), { force: true });
}
