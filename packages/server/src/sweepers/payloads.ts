import type { Sql } from '../db/database.js';
import type { Sweeper } from './sweeper.js';

/**
 * Payloads of soft-deleted rows (already unreachable) removed from the store, then the rows' keys
 * cleared, `batch` rows per run; a backlog drains over the following runs.
 */
export function deletedPayloadsSweeper(
  name: string,
  lockKey: number,
  claim: (tx: Sql, limit: number) => Promise<{ id: string; payload_key: string }[]>,
  clear: (tx: Sql, ids: readonly string[]) => Promise<void>,
  batch = 500,
): Sweeper {
  return {
    name,
    lockKey,
    async run(tx, _now, deps) {
      const claimed = await claim(tx, batch);
      await deps.payloadStore.deleteMany(tx, claimed.map((c) => c.payload_key));
      await clear(tx, claimed.map((c) => c.id));
      return claimed.length;
    },
  };
}
