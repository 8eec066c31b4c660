import { uuidv7AtTime } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
import { ENDPOINT_MESSAGE_COLUMNS, endpointMessageConditions, type EndpointMessageFilters, type EndpointMessageRow } from './inbound-messages.js';

/**
 * How long after its receipt a message's id may be taken: the id is made when the message is
 * stored, a moment after the request was read (an edited replay's copy: after its body was copied).
 * The window's end, plus this, bounds the ids a search reads.
 */
const ID_AFTER_RECEIPT_MARGIN_MS = 5 * 60_000;

export interface MessageSearch {
  /** The text a header value or a body holds, case-sensitive (the body's bytes as UTF-8). */
  text: string;
  /** Whether bodies are searched: those of the database's payload store (false: header values only). */
  bodies: boolean;
  /** The most messages the scan reads. */
  scanLimit: number;
  /**
   * Plan each chunk for its own bounds (PostgreSQL, whose prepared statements would come to a
   * generic plan). PGlite plans every statement anew, and a transaction there would hold its one
   * connection, and every request of the process, for the whole search.
   */
  planEachChunk: boolean;
}

export interface SearchPage {
  /** The matches, newest first (at most `limit`). */
  rows: EndpointMessageRow[];
  /** Whether more matches may follow (the page is full, or the scan stopped at its limit). */
  hasMore: boolean;
  /** The id the next page goes on below: the page's last match, or the last message the scan read. */
  continueBelow: string | null;
  /** The scan read `scanLimit` messages before the page was full or the window ended. */
  scanLimitReached: boolean;
}

/** Messages the first read of a search judges; each read after it judges twice as many, up to the largest. */
const FIRST_CHUNK = 250;
const LARGEST_CHUNK = 4000;

/**
 * The endpoint's live messages that pass `filters` and hold `search.text` in a header value or, with
 * `search.bodies`, in a body stored in the `payloads` table (bodies stored in pieces or files, or in
 * an object store, are not read), newest first, below `beforeId` within the window (`filters` bound
 * it on both sides). The (inbound_endpoint_id, id) index is read backwards in chunks, each a short
 * range scan the planner always takes by the index, each twice the one before (a page of common
 * matches ends after the first); reading ends once the page has one match more than `limit`, at the
 * window's start, or after `scanLimit` messages. A chunk answers its matches and its last message,
 * where the next one goes on.
 */
export async function searchEndpointMessages(
  sql: Sql,
  endpointId: string,
  filters: EndpointMessageFilters & { receivedAfter: string; receivedBefore: string },
  search: MessageSearch,
  page: { limit: number; beforeId?: string | undefined },
): Promise<SearchPage> {
  const where = endpointMessageConditions(sql, endpointId, filters);
  const until = Date.parse(filters.receivedBefore) + ID_AFTER_RECEIPT_MARGIN_MS;
  // A window that ends before the first id there can be holds nothing.
  if (until <= 0) return { rows: [], hasMore: false, continueBelow: null, scanLimitReached: false };
  if (until < 0xffff_ffff_ffff) where.push(sql.fragment`m.id < ${uuidv7AtTime(until)}::uuid`);
  const inHeaders = sql.fragment`EXISTS (SELECT 1 FROM jsonb_array_elements(c.raw_headers) h WHERE strpos(h->>1, ${search.text}::text) > 0)`;
  // A scalar subquery: one probe of the payloads' primary key per message, never a scan of them all.
  const inBody = search.bodies
    ? sql.fragment`OR coalesce((SELECT position(${Buffer.from(search.text, 'utf8')}::bytea IN p.data) > 0 FROM payloads p WHERE p.key = c.payload_key), false)`
    : sql.fragment``;
  // Each chunk's statement is the same but for its bounds: planned again for them every time, as a
  // prepared statement's plan made for no bounds in particular could read the endpoint's messages
  // whole, and sort them, at every chunk.
  if (!search.planEachChunk) return readChunks(sql, where, inHeaders, inBody, search.scanLimit, page);
  return sql.begin(async (tx) => {
    await tx`SET LOCAL plan_cache_mode = force_custom_plan`;
    return readChunks(tx, where, inHeaders, inBody, search.scanLimit, page);
  });
}

async function readChunks(
  sql: Sql,
  where: readonly SqlFragment[],
  inHeaders: SqlFragment,
  inBody: SqlFragment,
  scanLimit: number,
  page: { limit: number; beforeId?: string | undefined },
): Promise<SearchPage> {
  const matched: string[] = [];
  let below = page.beforeId;
  let scanned = 0;
  let chunk = FIRST_CHUNK;
  let end: Omit<SearchPage, 'rows'> | undefined;
  while (end === undefined) {
    if (scanned >= scanLimit) {
      end = { hasMore: true, continueBelow: below ?? null, scanLimitReached: true };
      break;
    }
    const want = Math.min(chunk, scanLimit - scanned);
    const bound = below === undefined ? [] : [sql.fragment`m.id < ${below}::uuid`];
    // Only what the match reads is held; the page's rows are read whole at the end. OFFSET 0 keeps
    // `matched` a column of its own, judged once per message.
    const rows = await sql<{ id: string; matched: boolean; scanned: number; last_id: string }>`
      WITH c AS MATERIALIZED (
        SELECT m.id, m.raw_headers, m.payload_key
        FROM inbound_messages m
        WHERE ${sql.join([...where, ...bound], ' AND ')}
        ORDER BY m.id DESC
        LIMIT ${want}
      )
      SELECT x.id, x.matched, n.scanned, n.last_id
      FROM (SELECT c.id, (${inHeaders} ${inBody}) AS matched FROM c OFFSET 0) x,
           (SELECT count(*)::int AS scanned, (SELECT c.id FROM c ORDER BY c.id LIMIT 1) AS last_id FROM c) n
      WHERE x.matched OR x.id = n.last_id
      ORDER BY x.id DESC`;
    for (const row of rows) {
      if (!row.matched) continue;
      matched.push(row.id);
      if (matched.length > page.limit) break;
    }
    const read = rows[0]?.scanned ?? 0;
    scanned += read;
    if (matched.length > page.limit) {
      matched.length = page.limit;
      end = { hasMore: true, continueBelow: matched[page.limit - 1]!, scanLimitReached: false };
    } else if (read < want) {
      end = { hasMore: false, continueBelow: null, scanLimitReached: false };
    } else {
      below = rows[rows.length - 1]!.last_id;
      chunk = Math.min(chunk * 2, LARGEST_CHUNK);
    }
  }
  // A message deleted since it was judged is left out; the cursor still passes it.
  const rows = matched.length === 0 ? [] : await sql<EndpointMessageRow>`
    SELECT ${ENDPOINT_MESSAGE_COLUMNS(sql)} FROM inbound_messages m
    WHERE m.id = ANY (${matched}::uuid[]) AND m.deleted_at IS NULL
    ORDER BY m.id DESC`;
  return { rows, ...end };
}
