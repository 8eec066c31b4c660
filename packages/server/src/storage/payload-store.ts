import type { PayloadStoreConfig } from '../config.js';
import type { Sql } from '../db/database.js';
import { deletePayloads, getPayload, getPayloads, insertPayloads } from '../db/payloads.js';
import { AppError } from '../errors.js';

/** The store could not be read (not: the payload is gone on purpose). Answered as `body_error`. */
export class PayloadUnavailableError extends Error {
  override readonly name = 'PayloadUnavailableError';
}

/**
 * An object store refused or did not answer a write. Answered 503 SERVICE_UNAVAILABLE with
 * Retry-After; like a database outage, retrying the same batch item by item would not help.
 */
export class PayloadStoreUnavailableError extends AppError {
  constructor(cause: unknown) {
    super('SERVICE_UNAVAILABLE', 'payload storage is unavailable; retry later', { retryAfterSeconds: 5, cause });
  }
}

/**
 * Payload bytes by key (docs/architecture.md, Storage). `sql` is the caller's transaction, so the
 * database store writes a payload in the same commit as its message; an object store ignores it.
 */
export interface PayloadStore {
  readonly kind: string;
  putMany(sql: Sql, items: readonly { key: string; data: Uint8Array }[]): Promise<void>;
  /** The bytes, or undefined when no payload is stored under the key; throws PayloadUnavailableError. */
  get(sql: Sql, key: string): Promise<Buffer | undefined>;
  /** Several payloads at once (a listen page); missing keys are absent from the map. */
  getMany(sql: Sql, keys: readonly string[]): Promise<Map<string, Buffer>>;
  deleteMany(sql: Sql, keys: readonly string[]): Promise<void>;
  /** Releases connections; called once the app that opened the store has closed. */
  close?(): Promise<void>;
}

/** The configured store (HOOKRELAY_PAYLOAD_STORE). The S3 client is loaded only when it is used. */
export async function openPayloadStore(config: PayloadStoreConfig): Promise<PayloadStore> {
  if (config.kind === 'database') return new DatabasePayloadStore();
  const { S3PayloadStore } = await import('./s3-payload-store.js');
  return S3PayloadStore.open(config);
}

/**
 * Throws a ConfigError saying how to install the AWS SDK when an s3:// store is configured and the
 * SDK is not installed: it is an optional peer of the package, which a plain `npm install` leaves out.
 * The server calls it before opening the database, so that nothing changes before the refusal.
 */
export async function checkPayloadStoreAvailable(config: PayloadStoreConfig): Promise<void> {
  if (config.kind === 'database') return;
  const { loadS3Sdk } = await import('./s3-payload-store.js');
  await loadS3Sdk();
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
