import type { Sql } from '../db/database.js';
import { deletePayloads, getPayload, getPayloads, insertPayloads } from '../db/payloads.js';

/** The store could not be read (not: the payload is gone on purpose). Answered as `body_error`. */
export class PayloadUnavailableError extends Error {
  override readonly name = 'PayloadUnavailableError';
}

/**
 * Payload bytes by key (decisions.md §10). `sql` is the caller's transaction, so the database store
 * writes a payload in the same commit as its message; an object store ignores it.
 */
export interface PayloadStore {
  readonly kind: string;
  putMany(sql: Sql, items: readonly { key: string; data: Uint8Array }[]): Promise<void>;
  /** The bytes, or undefined when no payload is stored under the key; throws PayloadUnavailableError. */
  get(sql: Sql, key: string): Promise<Buffer | undefined>;
  /** Several payloads at once (a listen page); missing keys are absent from the map. */
  getMany(sql: Sql, keys: readonly string[]): Promise<Map<string, Buffer>>;
  deleteMany(sql: Sql, keys: readonly string[]): Promise<void>;
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
