import { isUuid } from '@hookrelay/shared/ids';
import { usageFailure } from './errors.js';

/** The API takes at most this many ids per delete-batch request; longer lists go in several requests. */
export const DELETE_BATCH_SIZE = 100;

/** The ids once each (in the order given, lower case), checked before any request. */
export function batchIds(values: readonly string[], what: string): string[] {
  const ids: string[] = [];
  const seen = new Set<string>();
  for (const value of values) {
    const id = value.trim().toLowerCase();
    if (!isUuid(id)) throw usageFailure(`"${value}" is not ${what} id`, 'Ids are UUIDs, such as 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71.');
    if (seen.has(id)) continue;
    seen.add(id);
    ids.push(id);
  }
  return ids;
}

export interface BatchDeleteCounts<R> {
  results: R[];
  deleted_count: number;
  already_deleted_count: number;
  not_found_count: number;
}

/** Several answers of a delete-batch as one: results in order, counts summed. */
export function mergeBatchResults<R>(parts: readonly BatchDeleteCounts<R>[]): BatchDeleteCounts<R> {
  return {
    results: parts.flatMap((part) => part.results),
    deleted_count: parts.reduce((sum, part) => sum + part.deleted_count, 0),
    already_deleted_count: parts.reduce((sum, part) => sum + part.already_deleted_count, 0),
    not_found_count: parts.reduce((sum, part) => sum + part.not_found_count, 0),
  };
}
