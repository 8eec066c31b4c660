import { chmod, rm } from 'node:fs/promises';
import { createServer, request, type IncomingMessage } from 'node:http';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Database } from '../db/database.js';
import { digestingStream, writeBackup, type BackupResult } from './backup-archive.js';

/**
 * How `hookrelay-server backup` reaches a server running on the embedded database: PGlite is one
 * process's database, so the running server itself writes the backup and streams it over a Unix
 * socket in its data dir. Who may connect is who may open that socket file (mode 0600, in the data
 * dir, which is 0700): the accounts that could read the data dir's files anyway. The socket serves
 * nothing else; no TCP listener offers it.
 */
export const BACKUP_SOCKET = 'hookrelay.sock';
/** Sent after the archive: its SHA-256, so that the command keeps only an archive that came whole. */
const SHA256_TRAILER = 'x-backup-sha256';
const START_LSN_TRAILER = 'x-backup-start-lsn';
const STOP_LSN_TRAILER = 'x-backup-stop-lsn';
/** The longest path a Unix socket takes (sun_path, less its terminating NUL). */
const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

/** The data dir's backup socket, or why it has none (a path too long for a Unix socket, Windows). */
export function backupSocketPath(dataDir: string): { path: string } | { reason: string } {
  const file = path.resolve(dataDir, BACKUP_SOCKET);
  if (process.platform === 'win32') return { reason: 'Unix sockets are not available on Windows' };
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH_BYTES) {
    return { reason: `its path ${file} is longer than the ${MAX_SOCKET_PATH_BYTES} bytes a Unix socket allows` };
  }
  return { path: file };
}

export interface BackupLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface BackupSocket {
  close(): Promise<void>;
}

/**
 * Serves `POST /backup` on the data dir's backup socket: the answer's body is the archive, its
 * trailers its SHA-256 and WAL positions. One backup at a time; a second is answered 409. A failure
 * before the first byte is answered 500 with the reason; one after it cuts the answer short.
 */
export async function listenBackupSocket(dataDir: string, db: Database, log: BackupLog): Promise<BackupSocket | undefined> {
  const where = backupSocketPath(dataDir);
  if ('reason' in where) {
    log.warn({ reason: where.reason }, 'online backup is unavailable: the data dir has no backup socket');
    return undefined;
  }
  // Under the data dir's lock: a socket file there is one a crashed server left.
  await rm(where.path, { force: true });
  let running = false;
  const server = createServer((req, res) => {
    req.resume();
    const answer = (status: number, error: string) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(`${JSON.stringify({ error })}\n`);
    };
    if (req.method !== 'POST' || req.url !== '/backup') return answer(404, 'the backup socket serves POST /backup only');
    if (running) return answer(409, 'a backup is running already');
    running = true;
    const started = Date.now();
    res.statusCode = 200;
    res.setHeader('content-type', 'application/gzip');
    res.setHeader('trailer', [SHA256_TRAILER, START_LSN_TRAILER, STOP_LSN_TRAILER].join(', '));
    const digest = digestingStream();
    digest.stream.pipe(res, { end: false });
    // A command that goes away mid-backup: the backup ends (and ends the database's backup) instead of
    // waiting for a reader that never comes.
    res.once('close', () => {
      if (!res.writableFinished) digest.stream.destroy(new Error('the command that asked for the backup went away'));
    });
    const sent = new Promise<void>((resolve) => digest.stream.once('end', resolve));
    writeBackup(db, dataDir, digest.stream).then(
      async (result) => {
        await sent;
        res.addTrailers({ [SHA256_TRAILER]: digest.sha256(), [START_LSN_TRAILER]: result.startLsn, [STOP_LSN_TRAILER]: result.stopLsn });
        res.end();
        running = false;
        log.info({ bytes: digest.bytes(), ms: Date.now() - started, startLsn: result.startLsn, stopLsn: result.stopLsn }, 'backup written');
      },
      (error: unknown) => {
        running = false;
        log.warn({ err: error }, 'backup failed');
        if (res.headersSent) res.destroy();
        else answer(500, `the backup failed: ${(error as Error).message}`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(where.path, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: NodeJS.ErrnoException) => {
    log.warn({ err: error, socket: where.path }, 'online backup is unavailable: the backup socket could not be opened');
  });
  if (!server.listening) return undefined;
  await chmod(where.path, 0o600);
  return {
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(where.path, { force: true });
    },
  };
}

/** No server answers on the socket: the command takes the backup itself. */
export class BackupSocketUnreachable extends Error {}

/**
 * Asks the server on `socket` for a backup and writes it to `out`, which it ends. Resolves once the
 * archive came whole (its SHA-256 matches the server's); rejects with BackupSocketUnreachable when
 * no server listens there.
 */
export async function requestBackup(socket: string, out: Writable): Promise<BackupResult> {
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request({ socketPath: socket, method: 'POST', path: '/backup' }, resolve);
    req.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'ENOENT' || error.code === 'ECONNREFUSED' ? new BackupSocketUnreachable(error.message) : error),
    );
    req.end();
  });
  if (response.statusCode !== 200) {
    let text = '';
    for await (const chunk of response) text += String(chunk);
    let reason = text.trim();
    try {
      reason = String((JSON.parse(text) as { error?: unknown }).error ?? reason);
    } catch {
      // not JSON: the text as it is
    }
    throw new Error(`the server answered ${response.statusCode}: ${reason}`);
  }
  const digest = digestingStream();
  const written = pipeline(digest.stream, out);
  written.catch(() => {});
  await pipeline(response, digest.stream).catch(() => {
    throw new Error('the server ended the backup before it was whole');
  });
  await written;
  const sha256 = response.trailers[SHA256_TRAILER];
  if (!response.complete || sha256 === undefined) throw new Error('the server ended the backup before it was whole');
  if (sha256 !== digest.sha256()) throw new Error('the backup that came differs from the one the server sent (SHA-256)');
  return { startLsn: response.trailers[START_LSN_TRAILER] ?? '', stopLsn: response.trailers[STOP_LSN_TRAILER] ?? '' };
}
