import type { PullDeleteAllOut, PullEventAckBatchOut, PullEventDetailOut } from '@hookrelay/shared';
import { HookrelayApiError } from '@hookrelay/shared/client';
import { CliErrorCode, CliFailure } from './errors.js';
import { ExitCode } from './exit-codes.js';

/** The exact bytes of an event's body from an answer asked with `body_encoding=base64`. */
export function eventBodyBytes(event: PullEventDetailOut): Buffer {
  if (event.deleted_at !== undefined) {
    throw new CliFailure(CliErrorCode.PAYLOAD_DELETED, `event ${event.id} was deleted at ${event.deleted_at}: its payload is gone`, ExitCode.NOT_FOUND);
  }
  if (event.body_error !== undefined) {
    throw new CliFailure(
      CliErrorCode.PAYLOAD_UNAVAILABLE,
      `the server could not read the payload of event ${event.id} from its storage`,
      ExitCode.SERVER,
      'Retry later; the event stays stored.',
    );
  }
  if (event.body === undefined) return Buffer.alloc(0);
  if (event.body_encoding === 'base64' && typeof event.body === 'string') return Buffer.from(event.body, 'base64');
  // Not asked for base64 (an older server): the JSON value, as JSON text.
  return Buffer.from(JSON.stringify(event.body), 'utf8');
}

/** The API acknowledges at most this many events per request; longer lists go in several requests. */
export const ACK_BATCH_SIZE = 1000;

/** Several answers of ack-batch as one: results in order, counts summed. */
export function mergeAckResults(parts: readonly PullEventAckBatchOut[]): PullEventAckBatchOut {
  return {
    results: parts.flatMap((part) => part.results),
    delivered_count: parts.reduce((sum, part) => sum + part.delivered_count, 0),
    already_delivered_count: parts.reduce((sum, part) => sum + part.already_delivered_count, 0),
    not_found_count: parts.reduce((sum, part) => sum + part.not_found_count, 0),
  };
}


/** The most events one delete-all request may delete (the API's `limit` maximum). */
export const DELETE_ALL_REQUEST_LIMIT = 1000;
/** A filter that keeps matching new events (a busy endpoint) stops after this many requests. */
export const DELETE_ALL_MAX_REQUESTS = 10_000;

/** The ids an API error says were committed (delete-all's DELETE_FAILED / PARTIAL_DELETE_FAILURE carry them in `data`). */
export function committedByError(error: unknown): PullDeleteAllOut | undefined {
  if (!(error instanceof HookrelayApiError)) return undefined;
  const data = error.data as Partial<PullDeleteAllOut> | null | undefined;
  if (typeof data !== 'object' || data === null) return undefined;
  if (typeof data.deleted !== 'number' || !Array.isArray(data.deleted_event_ids)) return undefined;
  const ids = data.deleted_event_ids.filter((id): id is string => typeof id === 'string');
  return { deleted: data.deleted, deleted_event_ids: ids };
}

export interface DeleteAllOutcome {
  /** Everything committed, over all requests (also when one failed). */
  result: PullDeleteAllOut;
  /** The failure that stopped it, if any. */
  error?: unknown;
}

/**
 * delete-all until nothing matches: the API deletes at most 1000 events per request, oldest first,
 * so requests repeat while a request deletes all it was allowed to. `total` caps the events
 * deleted over all requests. A failure ends the run; what was committed before it, in earlier
 * requests and (from the error's `data`) in the failed one, is in `result`.
 */
export async function deleteAllInRounds(deleteRound: (limit: number) => Promise<PullDeleteAllOut>, total?: number): Promise<DeleteAllOutcome> {
  const ids: string[] = [];
  const done = (): PullDeleteAllOut => ({ deleted: ids.length, deleted_event_ids: [...ids] });
  for (let request = 0; request < DELETE_ALL_MAX_REQUESTS; request += 1) {
    const limit = total === undefined ? DELETE_ALL_REQUEST_LIMIT : Math.min(DELETE_ALL_REQUEST_LIMIT, total - ids.length);
    if (limit <= 0) break;
    let round: PullDeleteAllOut;
    try {
      round = await deleteRound(limit);
    } catch (error) {
      ids.push(...(committedByError(error)?.deleted_event_ids ?? []));
      return { result: done(), error };
    }
    ids.push(...round.deleted_event_ids);
    if (round.deleted < limit) break;
  }
  return { result: done() };
}
