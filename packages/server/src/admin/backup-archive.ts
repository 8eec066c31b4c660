import { createHash } from 'node:crypto';
import { open, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { BOOTSTRAP_KEY_FILE } from '../bootstrap.js';
import type { Database } from '../db/database.js';
import { TarWriter } from '../lib/tar.js';
import { ENCRYPTION_KEY_FILE, PGLITE_DIR, PREVIOUS_ENCRYPTION_KEY_FILE } from '../runtime.js';
import { SERVER_VERSION } from '../version.js';

/**
 * A backup of the embedded data dir: one gzip-compressed tar archive with the PGlite database taken
 * by PostgreSQL's own online base backup (pg_backup_start … pg_backup_stop), the key files and the
 * payload files. The database keeps answering while its files are read: pages that change meanwhile
 * are made whole again from the WAL the archive carries (PostgreSQL writes full pages to it during a
 * backup), so a restored copy holds every transaction committed before the backup began, and each
 * one after it either whole or not at all.
 */

/** What a backup archive holds first: which format it is, and what made it. */
export const BACKUP_MANIFEST = 'hookrelay-backup.json';
export const BACKUP_FORMAT = 1;
/** Large webhook bodies as files beside the database: in the backup when the folder exists. */
export const PAYLOADS_DIR = 'payloads';
/** The data dir's files besides the database that a backup carries (each when it exists). */
export const KEY_FILES = [ENCRYPTION_KEY_FILE, PREVIOUS_ENCRYPTION_KEY_FILE, BOOTSTRAP_KEY_FILE];
/** Holds the WAL the backup needs from its start until it ends, whatever checkpoints run meanwhile. */
const BACKUP_SLOT = 'hookrelay_backup';

/** Files of pgdata a base backup leaves out (PostgreSQL's own list, as pg_basebackup follows it). */
const SKIPPED_FILES = new Set(['postmaster.pid', 'postmaster.opts', 'backup_label', 'tablespace_map', 'backup_manifest', 'pg_internal.init']);
/** Directories of pgdata kept empty: their content is made anew at start, or (pg_wal) added by the backup. */
const EMPTIED_DIRS = new Set(['pg_wal', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_stat_tmp', 'pg_subtrans', 'pg_replslot']);
const WAL_SEGMENT = /^[0-9A-F]{24}$/;

export interface BackupManifest {
  format: number;
  server_version: string;
  created_at: string;
}

export interface BackupResult {
  /** The WAL positions the backup started and stopped at. */
  startLsn: string;
  stopLsn: string;
}

function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Adds a file as it is now; one removed meanwhile (a dropped table, a swept payload) is left out. */
async function addFile(tar: TarWriter, name: string, file: string): Promise<void> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if (isGone(error)) return;
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return;
    await tar.file(name, handle, info.size, info.mtime);
  } finally {
    await handle.close();
  }
}

/** Adds `dir` and everything below it as `name/…`, but for what `skip` says (by path below `root`). */
async function addTree(tar: TarWriter, name: string, dir: string, skip: (relative: string, isDir: boolean) => 'skip' | 'empty' | 'keep' = () => 'keep', relative = ''): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (isGone(error)) return;
    throw error;
  }
  await tar.directory(name);
  // Sorted: the archive lists a directory's files in one order whatever the file system's is.
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const rel = relative === '' ? entry.name : `${relative}/${entry.name}`;
    const decision = skip(rel, entry.isDirectory());
    if (decision === 'skip') continue;
    if (entry.isDirectory()) {
      if (decision === 'empty') await tar.directory(`${name}/${entry.name}`);
      else await addTree(tar, `${name}/${entry.name}`, path.join(dir, entry.name), skip, rel);
    } else if (entry.isFile()) {
      await addFile(tar, `${name}/${entry.name}`, path.join(dir, entry.name));
    }
  }
}

function pgdataSkip(relative: string, isDir: boolean): 'skip' | 'empty' | 'keep' {
  const base = relative.slice(relative.lastIndexOf('/') + 1);
  if (base.startsWith('pgsql_tmp')) return 'skip';
  if (isDir) return EMPTIED_DIRS.has(relative) ? 'empty' : 'keep';
  return SKIPPED_FILES.has(base) && (relative === base || base === 'pg_internal.init') ? 'skip' : 'keep';
}

/**
 * Writes a backup of the embedded database `db` (open on `dataDir`) and of the data dir's other
 * files to `out` as a gzip-compressed tar archive, and ends `out`. Queries of other callers go on
 * meanwhile; only the backup's own statements (a checkpoint at its start) take the connection.
 */
export async function writeBackup(db: Database, dataDir: string, out: Writable): Promise<BackupResult> {
  const gzip = createGzip();
  const done = pipeline(gzip, out);
  done.catch(() => {}); // awaited below; a failure meanwhile also ends the writes
  const tar = new TarWriter(gzip);
  const pgdata = path.join(dataDir, PGLITE_DIR);
  // A slot left by a backup that failed in this session would refuse the new one.
  await db.sql`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ${BACKUP_SLOT}`;
  await db.sql`SELECT pg_create_physical_replication_slot(${BACKUP_SLOT}, true, true)`;
  let started = false;
  try {
    const [start] = await db.sql<{ lsn: string; file: string }>`
      SELECT lsn::text AS lsn, pg_walfile_name(lsn) AS file FROM pg_backup_start('hookrelay-server backup', true) AS lsn`;
    started = true;
    const manifest: BackupManifest = { format: BACKUP_FORMAT, server_version: SERVER_VERSION, created_at: new Date().toISOString() };
    await tar.buffer(BACKUP_MANIFEST, Buffer.from(`${JSON.stringify(manifest)}\n`));
    await addTree(tar, PGLITE_DIR, pgdata, pgdataSkip);
    const [stop] = await db.sql<{ lsn: string; file: string; labelfile: string }>`
      SELECT lsn::text AS lsn, pg_walfile_name(lsn) AS file, labelfile FROM pg_backup_stop(false)`;
    started = false;
    // The WAL from the backup's start to its end, which the restored database replays first.
    const segments = (await readdir(path.join(pgdata, 'pg_wal'))).filter((name) => WAL_SEGMENT.test(name) && name >= start!.file && name <= stop!.file).sort();
    if (segments[0] !== start!.file) throw new Error(`the WAL segment ${start!.file} the backup starts in is gone`);
    for (const segment of segments) await addFile(tar, `${PGLITE_DIR}/pg_wal/${segment}`, path.join(pgdata, 'pg_wal', segment));
    await tar.directory(`${PGLITE_DIR}/pg_wal/archive_status`);
    await tar.directory(`${PGLITE_DIR}/pg_wal/summaries`);
    await tar.buffer(`${PGLITE_DIR}/backup_label`, Buffer.from(stop!.labelfile));
    await db.sql`SELECT pg_drop_replication_slot(${BACKUP_SLOT})`;
    // After the database: a payload file is written before the row that names it commits.
    for (const name of KEY_FILES) await addFile(tar, name, path.join(dataDir, name));
    await addTree(tar, PAYLOADS_DIR, path.join(dataDir, PAYLOADS_DIR));
    await tar.finish();
    gzip.end();
    await done;
    return { startLsn: start!.lsn, stopLsn: stop!.lsn };
  } catch (error) {
    gzip.destroy(error as Error);
    throw error;
  } finally {
    if (started) await db.sql`SELECT pg_backup_stop(false)`.catch(() => {});
    await db.sql`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = ${BACKUP_SLOT}`.catch(() => {});
  }
}

/** The archive's bytes as they pass: how many and their SHA-256, to compare with what was sent. */
export function digestingStream(): { stream: PassThrough; bytes(): number; sha256(): string } {
  const hash = createHash('sha256');
  let bytes = 0;
  const stream = new PassThrough({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      callback(null, chunk);
    },
  });
  return { stream, bytes: () => bytes, sha256: () => hash.digest('hex') };
}

