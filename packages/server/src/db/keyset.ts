import type { Sql, SqlFragment } from './database.js';

/**
 * Shared pieces of list queries. Columns come in as fragments the caller writes; values are bind
 * parameters as everywhere else.
 */

/**
 * A half-open window on a timestamp column: `from` inclusive, `to` exclusive, either one optional.
 * Sent as text and cast by the server: the postgres driver would serialise a timestamptz parameter
 * through Date and drop sub-millisecond digits, moving an inclusive/exclusive bound.
 */
export function timeWindow(sql: Sql, column: SqlFragment, window: { from?: string | undefined; to?: string | undefined }): SqlFragment[] {
  const conditions: SqlFragment[] = [];
  if (window.from !== undefined) conditions.push(sql.fragment`${column} >= ${window.from}::text::timestamptz`);
  if (window.to !== undefined) conditions.push(sql.fragment`${column} < ${window.to}::text::timestamptz`);
  return conditions;
}

/**
 * WHERE, ORDER BY and LIMIT of a newest-first page on `key`, a unique column that only grows:
 * the list's own `conditions`, then only keys below `below` (the previous page's last, cast to the
 * key's type), biggest first. Qualify `key` with its table: in ORDER BY a bare name would mean an
 * output column of that name, such as `seq::text AS seq`, and sort as text.
 */
function newestFirst(sql: Sql, key: SqlFragment, conditions: readonly SqlFragment[], below: SqlFragment | undefined, limit: number): SqlFragment {
  const where = below === undefined ? conditions : [...conditions, sql.fragment`${key} < ${below}`];
  return sql.fragment`WHERE ${sql.join(where, ' AND ')} ORDER BY ${key} DESC LIMIT ${limit}`;
}

/** A newest-first page on a bigint seq column (the endpoint lists). */
export function newestFirstBySeq(sql: Sql, seq: SqlFragment, conditions: readonly SqlFragment[], page: { limit: number; afterSeq?: string | undefined }): SqlFragment {
  return newestFirst(sql, seq, conditions, page.afterSeq === undefined ? undefined : sql.fragment`${page.afterSeq}::bigint`, page.limit);
}

/** A newest-first page on a UUIDv7 id column, which orders by creation time (the logs). */
export function newestFirstById(sql: Sql, id: SqlFragment, conditions: readonly SqlFragment[], page: { limit: number; beforeId?: string | undefined }): SqlFragment {
  return newestFirst(sql, id, conditions, page.beforeId === undefined ? undefined : sql.fragment`${page.beforeId}::uuid`, page.limit);
}

/**
 * The smallest UUIDv7 of the millisecond of a timestamptz expression (the SQL side of
 * uuidv7AtTime): `id < uuidv7Floor(t)` holds for exactly the ids made before `t`'s millisecond, so
 * that a time bound becomes a range of an id index.
 */
export function uuidv7Floor(sql: Sql, time: SqlFragment): SqlFragment {
  return sql.fragment`(lpad(to_hex(floor(extract(epoch FROM ${time}) * 1000)::bigint), 12, '0') || '70008000000000000000')::uuid`;
}
