import type { BatchDeleteOutcome } from '@hookrelay/shared';
import type { SoftDeleteResult } from '../db/soft-delete.js';

/** The ids of a batch as the database stores them: lowercase, each once, in the caller's order. */
export function uniqueIds(ids: readonly string[]): string[] {
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}

/**
 * The batch delete result: one outcome per requested id (`not_found` for ids the
 * delete did not touch) and the three counts. `idField` is `message_id` or `event_id`.
 */
export function batchDeleteResult<K extends 'message_id' | 'event_id'>(idField: K, ids: readonly string[], touched: readonly SoftDeleteResult[]) {
  const byId = new Map(touched.map((row) => [row.id, row]));
  const results = ids.map((id) => {
    const row = byId.get(id);
    const outcome: BatchDeleteOutcome = !row ? 'not_found' : row.already_deleted ? 'already_deleted' : 'deleted';
    return { [idField]: id, outcome, ...(row ? { deleted_at: row.deleted_at.toISOString() } : {}) } as { [P in K]: string } & {
      outcome: BatchDeleteOutcome;
      deleted_at?: string;
    };
  });
  return {
    results,
    deleted_count: results.filter((r) => r.outcome === 'deleted').length,
    already_deleted_count: results.filter((r) => r.outcome === 'already_deleted').length,
    not_found_count: results.filter((r) => r.outcome === 'not_found').length,
  };
}
