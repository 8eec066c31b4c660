import type { JsonSchemaObject, JsonValue } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';

/** A project's event type (docs/api.md, Event types); hookrelay's own are not rows. */
export interface EventTypeRow {
  project_id: string;
  name: string;
  description: string;
  payload_schema: JsonSchemaObject | null;
  example: JsonValue | null;
  archived: boolean;
  revision: number;
  /** The bytes of schema and example as stored JSON text. */
  json_bytes: number;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  project_id, name, description, payload_schema, example, archived, revision, json_bytes, created_at, updated_at`;

/**
 * A JSON value as a json parameter. Sent as text and cast: the drivers serialise a json parameter
 * differently when the value is a JS string (PGlite passes it through as JSON text, postgres quotes
 * it), and an example may well be a string.
 */
function json(sql: Sql, value: JsonValue | null): SqlFragment {
  return sql.fragment`${value === null ? null : JSON.stringify(value)}::text::json`;
}

export interface EventTypeInsert {
  projectId: string;
  name: string;
  description: string;
  schema: JsonSchemaObject | null;
  example: JsonValue | null;
  archived: boolean;
}

/** The new row; undefined when the project already has a type of that name. */
export async function insertEventType(sql: Sql, input: EventTypeInsert): Promise<EventTypeRow | undefined> {
  const [row] = await sql<EventTypeRow>`
    INSERT INTO event_types (project_id, name, description, payload_schema, example, archived)
    VALUES (${input.projectId}, ${input.name}, ${input.description}, ${json(sql, input.schema)}, ${json(sql, input.example)}, ${input.archived})
    ON CONFLICT (project_id, name) DO NOTHING
    RETURNING ${COLUMNS(sql)}`;
  return row;
}

export async function findEventType(sql: Sql, projectId: string, name: string): Promise<EventTypeRow | undefined> {
  const [row] = await sql<EventTypeRow>`SELECT ${COLUMNS(sql)} FROM event_types WHERE project_id = ${projectId} AND name = ${name}`;
  return row;
}

/** The row, locked for the rest of the transaction: a PATCH checks the example against the schema it leaves. */
export async function lockEventType(sql: Sql, projectId: string, name: string): Promise<EventTypeRow | undefined> {
  const [row] = await sql<EventTypeRow>`
    SELECT ${COLUMNS(sql)} FROM event_types WHERE project_id = ${projectId} AND name = ${name} FOR UPDATE`;
  return row;
}

/**
 * By name in byte order, after `afterName`. Rows past the first that starts beyond `maxJsonBytes` of
 * schemas and examples are not read: the caller cuts its page at that budget and needs only to see
 * that a row follows.
 */
export async function listEventTypes(
  sql: Sql,
  projectId: string,
  page: { limit: number; afterName?: string | undefined; archived?: boolean | undefined; maxJsonBytes: number },
): Promise<EventTypeRow[]> {
  const conditions = [sql.fragment`project_id = ${projectId}`];
  if (page.afterName !== undefined) conditions.push(sql.fragment`name > ${page.afterName}`);
  if (page.archived !== undefined) conditions.push(sql.fragment`archived = ${page.archived}`);
  return sql<EventTypeRow>`
    SELECT ${COLUMNS(sql)} FROM (
      SELECT ${COLUMNS(sql)}, sum(json_bytes) OVER (ORDER BY name) AS running_bytes
      FROM event_types WHERE ${sql.join(conditions, ' AND ')}
      ORDER BY name LIMIT ${page.limit}
    ) page
    WHERE running_bytes - json_bytes <= ${page.maxJsonBytes}
    ORDER BY name`;
}

export interface EventTypePatch {
  description?: string;
  schema?: JsonSchemaObject | null;
  example?: JsonValue | null;
  archived?: boolean;
}

/** Applies the fields that are set (`null` removes a schema or example); undefined when there is no such type. */
export async function updateEventType(sql: Sql, projectId: string, name: string, patch: EventTypePatch): Promise<EventTypeRow | undefined> {
  // coalesce() cannot tell "omitted" from "set to NULL", so the SET list is built from what is given.
  const sets: SqlFragment[] = [sql.fragment`revision = revision + 1`, sql.fragment`updated_at = now()`];
  if (patch.description !== undefined) sets.push(sql.fragment`description = ${patch.description}::text`);
  if (patch.schema !== undefined) sets.push(sql.fragment`payload_schema = ${json(sql, patch.schema)}`);
  if (patch.example !== undefined) sets.push(sql.fragment`example = ${json(sql, patch.example)}`);
  if (patch.archived !== undefined) sets.push(sql.fragment`archived = ${patch.archived}::boolean`);
  const [row] = await sql<EventTypeRow>`
    UPDATE event_types SET ${sql.join(sets, ', ')}
    WHERE project_id = ${projectId} AND name = ${name}
    RETURNING ${COLUMNS(sql)}`;
  return row;
}

/** Undefined when there is no such type. */
export async function deleteEventType(sql: Sql, projectId: string, name: string): Promise<{ name: string } | undefined> {
  const [row] = await sql<{ name: string }>`DELETE FROM event_types WHERE project_id = ${projectId} AND name = ${name} RETURNING name`;
  return row;
}

/** What checking a payload needs of its type: the schema only when it is not the revision the caller has compiled. */
export interface EventTypeSchemaRow {
  revision: number;
  has_schema: boolean;
  payload_schema: JsonSchemaObject | null;
}

/** A check's lookup: the type, and the revision of it the caller has compiled (null: none). */
export interface EventTypeSchemaLookup {
  projectId: string;
  name: string;
  compiledRevision: number | null;
}

/** One answer per lookup, in their order, in one statement; undefined for a type that is not stored. */
export async function findEventTypeSchemas(sql: Sql, lookups: readonly EventTypeSchemaLookup[]): Promise<(EventTypeSchemaRow | undefined)[]> {
  const rows = await sql<EventTypeSchemaRow & { position: number }>`
    SELECT x.position::int - 1 AS position, t.revision, t.payload_schema IS NOT NULL AS has_schema,
           CASE WHEN t.revision = x.compiled_revision THEN NULL ELSE t.payload_schema END AS payload_schema
    FROM unnest(${lookups.map((l) => l.projectId)}::uuid[], ${lookups.map((l) => l.name)}::text[], ${lookups.map((l) => l.compiledRevision)}::int[])
         WITH ORDINALITY AS x (project_id, name, compiled_revision, position)
    -- OFFSET 0: a primary-key lookup per check, whatever plan the statement is cached with.
    CROSS JOIN LATERAL (SELECT t.revision, t.payload_schema FROM event_types t WHERE t.project_id = x.project_id AND t.name = x.name OFFSET 0) AS t`;
  const answers: (EventTypeSchemaRow | undefined)[] = lookups.map(() => undefined);
  for (const { position, ...row } of rows) answers[position] = row;
  return answers;
}
