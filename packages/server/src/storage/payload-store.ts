import type { Sql } from '../db/database.js';
import { deletePayloads, getPayload, getPayloads, insertPayloads } from '../db/payloads.js';
import { Readable } from 'node:stream';
import { isBlobKey, readBlob, type BlobStore, type ByteRange } from './blob-store.js';
import { PayloadUnavailableError } from './errors.js';

export { PayloadStoreUnavailableError, PayloadUnavailableError } from './errors.js';

/**
 * Payload bytes by key (docs/architecture.md, Storage). `sql` is the caller's transaction, so the
 * database store writes a payload in the same commit as its message; an object store ignores it.
 */
export interface PayloadStore {
  readonly kind: string;
  putMany(sql: Sql, items: readonly { key: string; data: Uint8Array }[]): Promise<void>;
  /**
   * The bytes, or undefined when no payload is stored under the key; throws PayloadUnavailableError.
   * `size`, the size its message has, lets a blob that was cut short be told from a whole one.
   */
  get(sql: Sql, key: string, size?: number): Promise<Buffer | undefined>;
  /** Several payloads at once (a listen page); missing keys are absent from the map. */
  getMany(sql: Sql, keys: readonly string[]): Promise<Map<string, Buffer>>;
  deleteMany(sql: Sql, keys: readonly string[]): Promise<void>;
  /** Releases connections; called once the app that opened the store has closed. */
  close?(): Promise<void>;
  /** Where large bodies stream to as they arrive (`blob/…` keys), when the store has such a place. */
  readonly blobs?: BlobStore;
}

/**
 * The payload store with a blob store beside it: `blob/…` keys are the blob store's (read whole
 * by get/getMany for the readers that need one buffer; `openPayload` streams them), every other key
 * the payload store's.
 */
export function withBlobStore(inner: PayloadStore, blobs: BlobStore): PayloadStore {
  const split = (keys: readonly string[]) => ({ blob: keys.filter(isBlobKey), other: keys.filter((k) => !isBlobKey(k)) });
  return {
    kind: inner.kind,
    blobs,
    putMany: (sql, items) => inner.putMany(sql, items),
    async get(sql, key, size) {
      return isBlobKey(key) ? readBlob(blobs, key, size) : inner.get(sql, key);
    },
    async getMany(sql, keys) {
      const { blob, other } = split(keys);
      const found = other.length > 0 ? await inner.getMany(sql, other) : new Map<string, Buffer>();
      for (const key of blob) found.set(key, await readBlob(blobs, key));
      return found;
    },
    async deleteMany(sql, keys) {
      const { blob, other } = split(keys);
      if (other.length > 0) await inner.deleteMany(sql, other);
      if (blob.length > 0) await blobs.deleteMany(sql, blob);
    },
    ...(inner.close ? { close: () => inner.close!() } : {}),
  };
}

/**
 * A payload as a stream of at most BLOB_CHUNK_BYTES pieces: a blob read from its store, anything
 * else from the buffer the payload store answers. Undefined when no payload is stored under the key;
 * a store that cannot be read fails (the promise, or the stream) with PayloadUnavailableError.
 */
export async function openPayload(store: PayloadStore, sql: Sql, key: string, size?: number, range?: ByteRange): Promise<Readable | undefined> {
  if (isBlobKey(key) && store.blobs) return store.blobs.read(key, size, range);
  const bytes = await store.get(sql, key);
  if (bytes === undefined) return undefined;
  return Readable.from([range ? bytes.subarray(range.start, range.end + 1) : bytes], { objectMode: false });
}

export class DatabasePayloadStore implements PayloadStore {
  readonly kind = 'database';

  async putMany(sql: Sql, items: readonly { key: string; data: Uint8Array }[]): Promise<void> {
    if (items.length > 0) await insertPayloads(sql, items);
  }

  async get(sql: Sql, key: string): Promise<Buffer | undefined> {
    try {
      return await getPayload(sql, key);
    } catch (error) {
      throw new PayloadUnavailableError(`payload ${key} could not be read`, { cause: error });
    }
  }

  async getMany(sql: Sql, keys: readonly string[]): Promise<Map<string, Buffer>> {
    if (keys.length === 0) return new Map();
    try {
      return await getPayloads(sql, keys);
    } catch (error) {
      throw new PayloadUnavailableError(`${keys.length} payloads could not be read`, { cause: error });
    }
  }

  async deleteMany(sql: Sql, keys: readonly string[]): Promise<void> {
    if (keys.length > 0) await deletePayloads(sql, keys);
  }
}
