import { z } from 'zod';
import { AppError } from '../errors.js';

/**
 * Opaque keyset cursors (docs/api.md, Lists and cursors): base64url of a small JSON object. Callers must not
 * parse them; the server validates every decoded cursor against the shape it expects.
 */
export function encodeCursor(position: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');
}

/** The position of `cursor`; undefined when the query has none (the first page). */
export function decodeCursor<T extends z.ZodType>(cursor: string, shape: T): z.infer<T>;
export function decodeCursor<T extends z.ZodType>(cursor: string | undefined, shape: T): z.infer<T> | undefined;
export function decodeCursor<T extends z.ZodType>(cursor: string | undefined, shape: T): z.infer<T> | undefined {
  if (cursor === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = shape.safeParse(value);
  if (!parsed.success) {
    throw new AppError('INVALID_REQUEST', 'query.cursor: is not a cursor this list returned', {
      details: [{ path: 'query.cursor', message: 'is not a cursor this list returned' }],
    });
  }
  return parsed.data;
}

/** Keyset position on a bigint sequence column. */
export const SeqCursor = z.strictObject({ s: z.string().regex(/^\d{1,19}$/) });

/** Keyset position on a UUID id column. */
export const IdCursor = z.strictObject({ i: z.string().uuid() });

/** Keyset position on a unique name, as the names a list can hold are (at most 256 characters). */
export const NameCursor = z.strictObject({ n: z.string().min(1).max(256) });

/** The list parameters every keyset list takes. */
export interface PageQuery {
  limit: number;
  cursor?: string | undefined;
}

export interface KeysetPage<Row> {
  rows: Row[];
  hasMore: boolean;
  /** The cursor of the page after this one; null on the last page. */
  nextCursor: string | null;
}

/**
 * Cuts a page out of `fetched`, which was read with a limit of `limit + 1`: the extra row only tells
 * that another page follows, whose cursor is made from this page's last row.
 */
export function keysetPage<Row>(fetched: readonly Row[], limit: number, cursorAfter: (last: Row) => string): KeysetPage<Row> {
  const rows = fetched.slice(0, limit);
  const hasMore = fetched.length > limit;
  const last = rows[rows.length - 1];
  return { rows, hasMore, nextCursor: hasMore && last ? cursorAfter(last) : null };
}

/** How a list is keyed: the keyset position a cursor stands for, and the cursor after a row. */
export interface Keyset<Row, Position> {
  positionAt(cursor: string): Position;
  cursorAfter(last: Row): string;
}

/** Newest-first lists keyed by a bigint seq (the endpoint lists). */
export const SEQ_KEYSET: Keyset<{ seq: string }, { afterSeq: string }> = {
  positionAt: (cursor) => ({ afterSeq: decodeCursor(cursor, SeqCursor).s }),
  cursorAfter: (last) => encodeCursor({ s: last.seq }),
};

/** Newest-first lists keyed by a UUIDv7 id (the logs). */
export const ID_KEYSET: Keyset<{ id: string }, { beforeId: string }> = {
  positionAt: (cursor) => ({ beforeId: decodeCursor(cursor, IdCursor).i }),
  cursorAfter: (last) => encodeCursor({ i: last.id }),
};

/** Lists by a unique name in byte order (the event-type catalogue). */
export const NAME_KEYSET: Keyset<{ name: string }, { afterName: string }> = {
  positionAt: (cursor) => ({ afterName: decodeCursor(cursor, NameCursor).n }),
  cursorAfter: (last) => encodeCursor({ n: last.name }),
};

/**
 * One page of a keyset list: `list` reads up to `limit` rows from the position of the query's
 * cursor (from the start without one) and is asked for one row more than the page holds.
 */
export async function readPage<Row, Position>(
  query: PageQuery,
  keyset: Keyset<NoInfer<Row>, Position>,
  list: (page: { limit: number } & Partial<Position>) => Promise<Row[]>,
): Promise<KeysetPage<Row>> {
  const position: Partial<Position> = query.cursor === undefined ? {} : keyset.positionAt(query.cursor);
  const fetched = await list({ limit: query.limit + 1, ...position });
  return keysetPage(fetched, query.limit, (last) => keyset.cursorAfter(last));
}
