import { createReadStream, existsSync } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import { readTar } from '../lib/tar.js';
import { DataDirLockedError, LOCK_FILE, lockDataDir, openDatabase, PGLITE_DIR } from '../runtime.js';
import { BACKUP_FORMAT, BACKUP_MANIFEST, digestingStream, KEY_FILES, PAYLOADS_DIR, writeBackup, type BackupManifest, type BackupResult } from './backup-archive.js';
import { backupSocketPath, BackupSocketUnreachable, requestBackup } from './backup-socket.js';
import { AdminError, type AdminOutput } from './commands.js';

/**
 * `hookrelay-server backup` and `restore` of the embedded data dir (the archive: backup-archive.ts).
 * A running server holds the data dir, so the command asks it for the backup over its backup socket
 * (backup-socket.ts); with no server running it opens the database itself.
 */

function requireEmbedded(config: Config, command: 'backup' | 'restore'): void {
  if (config.databaseUrl) {
    throw new ConfigError(
      `${command} is for the embedded database (HOOKRELAY_DATA_DIR); with DATABASE_URL use PostgreSQL's own ` +
        `${command === 'backup' ? 'pg_dump' : 'pg_restore'} (see docs/operating.md, Backups)`,
    );
  }
}

/**
 * Writes the archive that `produce` streams to `to` only once it is whole: into a temporary file
 * beside it (0600: the archive holds the encryption key), synced, then renamed into place.
 */
async function writeArchiveFile<T>(to: string, produce: (out: Writable) => Promise<T>): Promise<{ result: T; bytes: number }> {
  if (existsSync(to)) throw new AdminError(`${to} already exists: choose a new file for the backup`);
  const temporary = `${to}.${process.pid}.partial`;
  const handle = await open(temporary, 'wx', 0o600).catch((error: NodeJS.ErrnoException) => {
    throw new AdminError(`cannot write the backup next to ${to}: ${error.message}`);
  });
  let bytes = 0;
  try {
    // Not handle.createWriteStream({ autoClose: false }): a pipeline into it never ends (it waits for a close that never comes).
    const file = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        handle.write(chunk).then(() => callback(), callback);
      },
    });
    const counter = digestingStream();
    const written = pipeline(counter.stream, file);
    written.catch(() => {});
    const result = await produce(counter.stream);
    await written;
    bytes = counter.bytes();
    await handle.sync();
    await handle.close();
    if (existsSync(to)) throw new AdminError(`${to} already exists: choose a new file for the backup`);
    await rename(temporary, to);
    return { result, bytes };
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(temporary, { force: true });
    throw error;
  }
}

/**
 * `hookrelay-server backup --to FILE`: from the server running on the data dir, over its backup
 * socket; with none running, this process opens the database (holding the data dir's lock) and
 * takes the backup as the server would.
 */
export async function backupCommand(config: Config, out: AdminOutput, to: string): Promise<void> {
  requireEmbedded(config, 'backup');
  if (!existsSync(path.join(config.dataDir, PGLITE_DIR, 'PG_VERSION'))) {
    throw new AdminError(`there is no embedded database in ${config.dataDir} to back up`);
  }
  if (existsSync(to)) throw new AdminError(`${to} already exists: choose a new file for the backup`);
  const started = Date.now();
  const socket = backupSocketPath(config.dataDir);
  if ('path' in socket && (await isSocket(socket.path))) {
    try {
      const { result, bytes } = await writeArchiveFile(to, (stream) => requestBackup(socket.path, stream));
      reportBackup(out, to, bytes, Date.now() - started, result, true);
      return;
    } catch (error) {
      if (!(error instanceof BackupSocketUnreachable)) throw error instanceof AdminError ? error : new AdminError(`the backup failed: ${(error as Error).message}`);
      // A socket a crashed server left: nobody holds the data dir, unless another command does.
    }
  }
  let db;
  try {
    db = await openDatabase(config, 'hookrelay-server backup');
  } catch (error) {
    if (!(error instanceof DataDirLockedError)) throw error;
    const why = 'reason' in socket ? `: it has no backup socket (${socket.reason})` : ` and does not answer on ${socket.path}`;
    throw new DataDirLockedError(`${error.message}; it cannot take the backup itself${why}`);
  }
  try {
    const opened = db;
    const { result, bytes } = await writeArchiveFile(to, (stream) => writeBackup(opened, config.dataDir, stream));
    reportBackup(out, to, bytes, Date.now() - started, result, false);
  } finally {
    await db.close();
  }
}

function reportBackup(out: AdminOutput, to: string, bytes: number, ms: number, result: BackupResult, online: boolean): void {
  const value = { file: to, bytes, ms, start_lsn: result.startLsn, stop_lsn: result.stopLsn, online };
  const human = `backup written to ${to} (${(bytes / 1e6).toFixed(1)} MB in ${(ms / 1000).toFixed(1)} s, ${online ? 'by the running server' : 'no server running'})\n`;
  out.write(out.json ? `${JSON.stringify(value)}\n` : human);
}

/** The archive's top-level names a restore writes, and whether each is a directory. */
function restoredName(segments: readonly string[], type: 'file' | 'directory'): boolean {
  const [top] = segments;
  if (top === PGLITE_DIR || top === PAYLOADS_DIR) return segments.length > 1 || type === 'directory';
  return segments.length === 1 && type === 'file' && KEY_FILES.includes(top!);
}

/**
 * `hookrelay-server restore --from FILE --data-dir DIR`: unpacks a backup into a new or empty data
 * dir, holding its lock meanwhile. The files are written in a directory inside it and moved into
 * place at the end, the database last: a restore cut short leaves no half-made database that a start
 * would open.
 */
export async function restoreCommand(config: Config, out: AdminOutput, from: string): Promise<void> {
  requireEmbedded(config, 'restore');
  const info = await stat(from).catch((error: NodeJS.ErrnoException) => {
    throw new AdminError(`cannot read the backup ${from}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  });
  if (!info.isFile()) throw new AdminError(`${from} is not a backup file`);
  const dataDir = config.dataDir;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const unlock = await lockDataDir(dataDir, 'hookrelay-server restore');
  const staging = path.join(dataDir, `.restore-${process.pid}`);
  try {
    const present = (await readdir(dataDir)).filter((name) => name !== LOCK_FILE);
    if (present.length > 0) {
      throw new AdminError(`the data dir ${dataDir} is not empty (it holds ${present.slice(0, 5).join(', ')}): restore into a new or empty directory`);
    }
    await mkdir(staging, { mode: 0o700 });
    let manifest: BackupManifest | undefined;
    try {
      const source = createReadStream(from).pipe(createGunzip());
      for await (const entry of readTar(source)) {
        if (manifest === undefined) {
          if (entry.type !== 'file' || entry.segments.join('/') !== BACKUP_MANIFEST || entry.size > 64 * 1024) throw new Error('its first entry is not a backup manifest');
          const parts: Buffer[] = [];
          for await (const part of entry.data()) parts.push(part);
          manifest = JSON.parse(Buffer.concat(parts).toString('utf8')) as BackupManifest;
          if (manifest.format !== BACKUP_FORMAT) throw new Error(`it has the format ${JSON.stringify(manifest.format)}, this version reads ${BACKUP_FORMAT}`);
          continue;
        }
        if (!restoredName(entry.segments, entry.type)) throw new Error(`it holds ${entry.segments.join('/')}, which is no part of a data dir`);
        const target = path.join(staging, ...entry.segments);
        if (entry.type === 'directory') {
          await mkdir(target, { recursive: true, mode: 0o700 });
          continue;
        }
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        const handle = await open(target, 'wx', 0o600);
        try {
          for await (const part of entry.data()) await handle.write(part);
        } finally {
          await handle.close();
        }
      }
      if (manifest === undefined) throw new Error('it is empty');
    } catch (error) {
      if (error instanceof AdminError) throw error;
      throw new AdminError(`${from} is not a whole hookrelay-server backup: ${(error as Error).message}`);
    }
    if (!existsSync(path.join(staging, PGLITE_DIR, 'PG_VERSION'))) throw new AdminError(`${from} holds no database`);
    const names = await readdir(staging);
    for (const name of names.filter((n) => n !== PGLITE_DIR)) await rename(path.join(staging, name), path.join(dataDir, name));
    await rename(path.join(staging, PGLITE_DIR), path.join(dataDir, PGLITE_DIR));
    const value = { data_dir: dataDir, from, created_at: manifest.created_at, server_version: manifest.server_version, files: names.sort() };
    out.write(
      out.json
        ? `${JSON.stringify(value)}\n`
        : `restored the backup of ${manifest.created_at} (hookrelay-server ${manifest.server_version}) into ${dataDir}\n` +
            `start it with: hookrelay-server start --data-dir ${dataDir}\n`,
    );
  } finally {
    await rm(staging, { recursive: true, force: true });
    unlock();
  }
}

/** Whether `file` is a Unix socket (a server's backup socket, or one a crashed server left). */
async function isSocket(file: string): Promise<boolean> {
  try {
    return (await lstat(file)).isSocket();
  } catch {
    return false;
  }
}
