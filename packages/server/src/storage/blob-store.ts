import { mkdir, open, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { INLINE_BODY_MAX_BYTES, newUuidv7 } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { countBlobChunks, deleteBlobChunks, insertBlobChunk, readBlobChunks } from '../db/blob-chunks.js';
import { beginBlobUpload, endBlobUploads } from '../db/blob-uploads.js';
import { PayloadUnavailableError } from './errors.js';

/**
 * Large bodies, written as they arrive (docs/architecture.md, Storage): a webhook body above
 * STREAMED_BODY_MIN_BYTES never passes through memory whole, nor through the embedded database's
 * WebAssembly heap. On the embedded database the bytes are files in the data dir (`payloads/`); on
 * PostgreSQL, where every process must read every body, rows of at most BLOB_CHUNK_BYTES each.
 *
 * An upload is recorded as pending (`payload_uploads`) before its first byte is written, and the
 * commit that stores its message removes that record: a pending upload older than an upload may
 * take is a body no message holds (a crash, a cut or refused request), which a sweeper removes.
 */

/**
 * Bodies above this size stream to the blob store; smaller ones are stored in the commit of their
 * message. The size above which listen sends a body by reference: a streamed body is never in hand
 * to send inline, so a just-committed one goes to this process's streams as a reference.
 */
export const STREAMED_BODY_MIN_BYTES = INLINE_BODY_MAX_BYTES;
/** Rows of the chunk store, and the reads of every store: what one body costs in memory at a time. */
export const BLOB_CHUNK_BYTES = 1024 * 1024;
/** A blob key: `blob/<uuidv7>`. Other keys belong to the payload store. */
export const BLOB_KEY_PREFIX = 'blob/';
/** Pieces of one upload being inserted at once on PostgreSQL. */
const CHUNKS_IN_FLIGHT = 2;

export const isBlobKey = (key: string): boolean => key.startsWith(BLOB_KEY_PREFIX);

export interface BlobUpload {
  readonly key: string;
  /** Resolves once the store took the chunk (the caller waits before reading on: backpressure). */
  write(chunk: Buffer): Promise<void>;
  /** Resolves once a crash can no longer lose what was written. */
  finish(): Promise<void>;
  /** Removes what was written and its pending record; never throws (the sweeper retries what is left). */
  abort(): Promise<void>;
}

/** A byte range of a blob, `end` inclusive as in HTTP. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface BlobStore {
  readonly kind: 'file' | 'chunks' | 's3';
  begin(): Promise<BlobUpload>;
  /**
   * The bytes of a blob (or of `range`), read BLOB_CHUNK_BYTES at a time. A blob that is missing,
   * or not `size` bytes long when its size is given, fails the stream with a PayloadUnavailableError.
   */
  read(key: string, size?: number, range?: ByteRange): Readable;
  deleteMany(sql: Sql, keys: readonly string[]): Promise<void>;
}

/** A blob's bytes whole: for readers that need them in one buffer (a replay, the API's JSON record). */
export async function readBlob(store: BlobStore, key: string, size?: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of store.read(key, size)) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

type ErrorLog = (fields: object, message: string) => void;

/** Blobs as files `<dir>/<uuid>`, each fsynced (and its directory entry) before the upload finishes. */
export class FileBlobStore implements BlobStore {
  readonly kind = 'file';

  constructor(
    private readonly sql: Sql,
    readonly dir: string,
    private readonly logError: ErrorLog,
  ) {}

  /** Made with the first large body: a data dir that never had one has no `payloads/`. */
  private made = false;

  private fileOf(key: string): string {
    const name = key.slice(BLOB_KEY_PREFIX.length);
    // Keys are made here (uuidv7): anything else would name a file outside the store.
    if (!/^[0-9a-f-]{36}$/.test(name)) throw new PayloadUnavailableError(`not a blob key: ${JSON.stringify(key)}`);
    return path.join(this.dir, name);
  }

  async begin(): Promise<BlobUpload> {
    const key = `${BLOB_KEY_PREFIX}${newUuidv7()}`;
    if (!this.made) {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      this.made = true;
    }
    await beginBlobUpload(this.sql, key);
    const file = this.fileOf(key);
    let handle: FileHandle;
    try {
      handle = await open(file, 'wx', 0o600);
    } catch (error) {
      await endBlobUploads(this.sql, [key]).catch(() => undefined);
      throw error;
    }
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await handle.close();
    };
    return {
      key,
      write: async (chunk) => {
        await handle.write(chunk);
      },
      finish: async () => {
        await handle.sync();
        await close();
        await syncDirectory(this.dir);
      },
      abort: async () => {
        await close().catch(() => undefined);
        await rm(file, { force: true }).catch(() => undefined);
        await endBlobUploads(this.sql, [key]).catch(() => undefined);
      },
    };
  }

  read(key: string, size?: number, range?: ByteRange): Readable {
    const store = this;
    const start = range?.start ?? 0;
    return Readable.from(
      (async function* () {
        let file: string;
        let handle: FileHandle;
        try {
          file = store.fileOf(key);
          handle = await open(file, 'r');
        } catch (error) {
          throw store.unavailable(key, 'is missing', error);
        }
        try {
          const actual = (await handle.stat()).size;
          if (size !== undefined && actual !== size) throw store.unavailable(key, `holds ${actual} bytes, not the ${size} its message has`);
          const end = range?.end ?? actual - 1;
          for (let at = start; at <= end; ) {
            const length = Math.min(BLOB_CHUNK_BYTES, end - at + 1);
            const buffer = Buffer.allocUnsafe(length);
            const { bytesRead } = await handle.read(buffer, 0, length, at);
            if (bytesRead === 0) throw store.unavailable(key, `ends at byte ${at}`);
            at += bytesRead;
            yield bytesRead === length ? buffer : buffer.subarray(0, bytesRead);
          }
        } finally {
          await handle.close();
        }
      })(),
      { objectMode: false },
    );
  }

  private unavailable(key: string, what: string, cause?: unknown): PayloadUnavailableError {
    const file = path.join(this.dir, key.slice(BLOB_KEY_PREFIX.length));
    this.logError({ file, key, ...(cause instanceof Error ? { err: cause } : {}) }, `payload file ${file} ${what}: its message is answered with body_error payload_unavailable`);
    return new PayloadUnavailableError(`payload ${key} could not be read`, cause === undefined ? undefined : { cause });
  }

  async deleteMany(_sql: Sql, keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      if (!isBlobKey(key)) continue;
      await rm(this.fileOf(key), { force: true });
    }
  }

  /** Whether a blob's file exists (tests, and the crash checks of docs/operating.md). */
  async has(key: string): Promise<boolean> {
    return stat(this.fileOf(key)).then(
      () => true,
      () => false,
    );
  }
}

/** A directory's fsync, so that a new file's entry survives a crash as its bytes do. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Blobs as rows of `payload_chunks`, each its own autocommit insert of at most BLOB_CHUNK_BYTES. */
export class ChunkBlobStore implements BlobStore {
  readonly kind = 'chunks';

  constructor(
    private readonly sql: Sql,
    private readonly logError: ErrorLog,
  ) {}

  async begin(): Promise<BlobUpload> {
    const key = `${BLOB_KEY_PREFIX}${newUuidv7()}`;
    await beginBlobUpload(this.sql, key);
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let seq = 0;
    // Two pieces in flight at once, on two connections: the next is sent while the last one's
    // commit waits for its WAL flush.
    const inFlight: Promise<void>[] = [];
    const send = async (row: Buffer) => {
      if (inFlight.length >= CHUNKS_IN_FLIGHT) await inFlight.shift();
      const insert = insertBlobChunk(this.sql, key, seq++, row);
      // A failure is raised by the await that takes it, never left unhandled meanwhile.
      insert.catch(() => undefined);
      inFlight.push(insert);
    };
    const flush = async (all: boolean) => {
      while (pendingBytes >= BLOB_CHUNK_BYTES || (all && pendingBytes > 0)) {
        const joined = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
        const row = joined.subarray(0, BLOB_CHUNK_BYTES);
        const rest = joined.subarray(row.length);
        pending = rest.length > 0 ? [rest] : [];
        pendingBytes = rest.length;
        await send(row);
      }
    };
    return {
      key,
      write: async (chunk) => {
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= BLOB_CHUNK_BYTES) await flush(false);
      },
      finish: async () => {
        await flush(true);
        while (inFlight.length > 0) await inFlight.shift();
      },
      abort: async () => {
        pending = [];
        pendingBytes = 0;
        await Promise.allSettled(inFlight.splice(0));
        await deleteBlobChunks(this.sql, [key]).catch(() => undefined);
        await endBlobUploads(this.sql, [key]).catch(() => undefined);
      },
    };
  }

  read(key: string, size?: number, range?: ByteRange): Readable {
    const { sql } = this;
    const start = range?.start ?? 0;
    const end = range?.end ?? (size === undefined ? Number.POSITIVE_INFINITY : size - 1);
    const unavailable = (what: string, cause?: unknown) => {
      this.logError({ key, ...(cause instanceof Error ? { err: cause } : {}) }, `payload ${key} ${what}: its message is answered with body_error payload_unavailable`);
      return new PayloadUnavailableError(`payload ${key} could not be read`, cause === undefined ? undefined : { cause });
    };
    return Readable.from(
      (async function* () {
        // A blob that lost pieces is refused before its first byte goes out, not cut short midway.
        if (size !== undefined) {
          let pieces: number;
          try {
            pieces = await countBlobChunks(sql, key);
          } catch (error) {
            throw unavailable('could not be read', error);
          }
          const expected = Math.ceil(size / BLOB_CHUNK_BYTES);
          if (pieces !== expected) throw unavailable(pieces === 0 ? 'is missing' : `has ${pieces} of its ${expected} pieces`);
        }
        let seq = Math.floor(start / BLOB_CHUNK_BYTES);
        let at = seq * BLOB_CHUNK_BYTES;
        while (at <= end) {
          let rows: { seq: number; data: Buffer }[];
          try {
            rows = await readBlobChunks(sql, key, seq, 4);
          } catch (error) {
            throw unavailable('could not be read', error);
          }
          if (rows.length === 0) {
            if (size === undefined && range === undefined && at > 0) return;
            throw unavailable(at === 0 ? 'is missing' : `ends at byte ${at}, not at the ${size} its message has`);
          }
          for (const row of rows) {
            if (row.seq !== seq) throw unavailable(`misses its piece ${seq}`);
            const from = Math.max(0, start - at);
            const to = Math.min(row.data.length, end - at + 1);
            if (to > from) yield row.data.subarray(from, to);
            at += row.data.length;
            seq++;
            if (at > end) break;
          }
        }
      })(),
      { objectMode: false },
    );
  }

  async deleteMany(sql: Sql, keys: readonly string[]): Promise<void> {
    const blobs = keys.filter(isBlobKey);
    if (blobs.length > 0) await deleteBlobChunks(sql, blobs);
  }
}
