import { MESSAGE_SEARCH, type InboundEndpointMessagesQuery, type MessageSearchMeta } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import type { EndpointMessageFilters, EndpointMessageRow } from '../db/inbound-messages.js';
import { searchEndpointMessages } from '../db/message-search.js';
import { invalidRequest } from '../errors.js';
import { decodeCursor, encodeCursor, IdCursor } from '../lib/cursor.js';
import type { PayloadStore } from '../storage/payload-store.js';

/**
 * The window a search reads (docs/api.md, Searching what arrived): the one given, the last day
 * by default (`received_before` now, `received_after` a day before it); longer than a week is
 * refused, naming `received_after`.
 */
export function searchWindow(query: Pick<InboundEndpointMessagesQuery, 'received_after' | 'received_before'>, nowMs: number): { from: string; to: string } {
  const to = query.received_before ?? new Date(nowMs).toISOString();
  const from = query.received_after ?? new Date(Date.parse(to) - MESSAGE_SEARCH.defaultWindowMs).toISOString();
  if (Date.parse(to) - Date.parse(from) > MESSAGE_SEARCH.maxWindowMs) {
    const message = `must be at most 7 days before received_before (${to}) with q: a search reads at most a week of messages`;
    throw invalidRequest(`query.received_after: ${message}`, [{ path: 'query.received_after', message }]);
  }
  return { from, to };
}

/** A page of a search, and what its `meta` says of it. */
export interface SearchResult {
  rows: EndpointMessageRow[];
  meta: { has_more: boolean; next_cursor: string | null; search: MessageSearchMeta };
}

/**
 * One page of the endpoint's messages that hold `query.q`, within the search window and the other
 * filters, newest first; its cursor goes on below the page's last match, or below the last message
 * read when the scan stopped at its limit.
 */
export async function searchMessages(
  db: Pick<Database, 'sql' | 'backend'>,
  payloadStore: PayloadStore,
  endpointId: string,
  query: InboundEndpointMessagesQuery & { q: string },
  filters: EndpointMessageFilters,
  nowMs: number,
): Promise<SearchResult> {
  const { from, to } = searchWindow(query, nowMs);
  const bodies = payloadStore.kind === 'database';
  const beforeId = query.cursor === undefined ? undefined : decodeCursor(query.cursor, IdCursor).i;
  const page = await searchEndpointMessages(
    db.sql,
    endpointId,
    { ...filters, receivedAfter: from, receivedBefore: to },
    { text: query.q, bodies, scanLimit: MESSAGE_SEARCH.scanLimit, planEachChunk: db.backend === 'postgres' },
    { limit: query.limit, beforeId },
  );
  return {
    rows: page.rows,
    meta: {
      has_more: page.hasMore,
      next_cursor: page.hasMore && page.continueBelow !== null ? encodeCursor({ i: page.continueBelow }) : null,
      search: {
        q: query.q,
        received_after: new Date(Date.parse(from)).toISOString(),
        received_before: new Date(Date.parse(to)).toISOString(),
        scan_limit: MESSAGE_SEARCH.scanLimit,
        scan_limit_reached: page.scanLimitReached,
        bodies: bodies ? 'inline' : 'none',
      },
    },
  };
}
