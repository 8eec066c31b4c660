import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  EVENT_TYPE_LIMITS,
  EventTypeCreateIn,
  EventTypeDeleteOut,
  EventTypeListQuery,
  EventTypeNameParams,
  EventTypeOut,
  EventTypeUpdateIn,
  isReservedEventTypeName,
  jsonByteLength,
  OPERATIONAL_EVENT_TYPES,
  operationalEventType,
  PageMeta,
  RESERVED_EVENT_TYPE_PREFIX,
  successEnvelope,
  type JsonSchemaObject,
  type JsonValue,
} from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { deleteEventType, findEventType, insertEventType, listEventTypes, lockEventType, updateEventType } from '../db/event-types.js';
import { AppError, notFound } from '../errors.js';
import type { EventSchemas } from '../events/event-schemas.js';
import { describeFailure, type CompiledSchema } from '../events/schema-engine.js';
import { NAME_KEYSET } from '../lib/cursor.js';
import { principalOf, projectIdOf } from '../plugins/auth.js';
import { refuseNul } from '../security/text.js';
import { toEventTypeOut } from '../views/event-type.js';

const CreateBody = refuseNul(EventTypeCreateIn);
const UpdateBody = refuseNul(EventTypeUpdateIn);

/** 400 INVALID_REQUEST naming one field, as a zod refusal would. */
function fieldError(field: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', `${field}: ${message}`, { details: [{ path: field, message }] });
}

/** hookrelay's own types and the rest of their prefix are not the caller's to change. */
function refuseReserved(name: string): void {
  if (!isReservedEventTypeName(name)) return;
  throw fieldError(
    'path.name',
    operationalEventType(name)
      ? `${name} is one of hookrelay's own event types, which cannot be changed or deleted`
      : `names starting with "${RESERVED_EVENT_TYPE_PREFIX}" are reserved for hookrelay's own event types`,
  );
}

async function compileSchema(schemas: EventSchemas, schema: JsonSchemaObject, field: string): Promise<CompiledSchema> {
  const compiled = await schemas.compile(schema);
  if (!compiled.ok) throw fieldError(field, `is not a valid JSON Schema (draft 2020-12): ${compiled.problem}`);
  return compiled.check;
}

function assertExampleMatches(check: CompiledSchema, example: JsonValue, field: string, what: string): void {
  const failure = check(example);
  if (failure !== null) throw fieldError(field, `${what} ${describeFailure(failure)}`);
}

/** A type as a list shows it, with the bytes of its schema and example that count against a page. */
interface Listed {
  name: string;
  jsonBytes: number;
  record: EventTypeOut;
}

const BUILT_IN_LISTED: readonly Listed[] = OPERATIONAL_EVENT_TYPES.map((record) => ({
  name: record.name,
  jsonBytes: jsonByteLength(record.schema) + jsonByteLength(record.example),
  record,
}));

/**
 * One page of the catalogue: the project's rows and hookrelay's own types, by name in byte order
 * (the names are ASCII, so JS string order is that order), at most `limit` of them and, past the
 * first, no more than a page's bytes of schemas and examples. The query stops after the first row
 * past that budget counting stored rows only; with hookrelay's types among them the page ends no
 * later, so every row the page can hold was read, and a row left over means another page.
 */
async function catalogPage(sql: Sql, projectId: string, query: EventTypeListQuery, portal: boolean): Promise<{ records: EventTypeOut[]; nextCursor: string | null }> {
  const afterName = query.cursor === undefined ? undefined : NAME_KEYSET.positionAt(query.cursor).afterName;
  const budget = EVENT_TYPE_LIMITS.pageJsonBytes;
  // A portal reads the types it may subscribe to: the live ones, none of hookrelay's own.
  const archived = portal ? false : query.archived;
  const rows = await listEventTypes(sql, projectId, { limit: query.limit + 1, afterName, archived, maxJsonBytes: budget });
  const builtIns = portal || archived === true ? [] : BUILT_IN_LISTED.filter((listed) => afterName === undefined || listed.name > afterName);
  const merged = [...rows.map((row): Listed => ({ name: row.name, jsonBytes: row.json_bytes, record: toEventTypeOut(row) })), ...builtIns].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  const page: Listed[] = [];
  let bytes = 0;
  for (const listed of merged) {
    if (page.length === query.limit || (page.length > 0 && bytes + listed.jsonBytes > budget)) break;
    page.push(listed);
    bytes += listed.jsonBytes;
  }
  const last = page[page.length - 1];
  return { records: page.map((listed) => listed.record), nextCursor: page.length < merged.length && last ? NAME_KEYSET.cursorAfter(last) : null };
}

export async function eventTypeRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;
  const schemas = services.eventSchemas;

  app.post(
    '/event-types',
    { schema: { body: CreateBody, response: { 201: successEnvelope(EventTypeOut) } } },
    async (request, reply) => {
      const projectId = principalOf(request).project_id;
      const body = request.body;
      const schema = body.schema ?? null;
      const example = body.example ?? null;
      const check = schema === null ? undefined : await compileSchema(schemas, schema, 'body.schema');
      if (check !== undefined && example !== null) assertExampleMatches(check, example, 'body.example', 'does not match the schema');
      const row = await insertEventType(sql, {
        projectId,
        name: body.name,
        description: body.description ?? '',
        schema,
        example,
        archived: body.archived ?? false,
      });
      if (!row) throw new AppError('DUPLICATE_NAME', `event type ${body.name} already exists in this project`);
      if (check !== undefined) schemas.remember(projectId, row.name, row.revision, check);
      reply.status(201);
      return { data: toEventTypeOut(row), meta: { request_id: request.id } };
    },
  );

  app.get(
    '/event-types',
    { schema: { querystring: EventTypeListQuery, response: { 200: successEnvelope(z.array(EventTypeOut), PageMeta) } } },
    async (request) => {
      const page = await catalogPage(sql, projectIdOf(request), request.query, request.portal !== undefined);
      return { data: page.records, meta: { request_id: request.id, next_cursor: page.nextCursor } };
    },
  );

  app.get(
    '/event-types/:name',
    { schema: { params: EventTypeNameParams, response: { 200: successEnvelope(EventTypeOut) } } },
    async (request) => {
      const { name } = request.params;
      const builtIn = operationalEventType(name);
      if (builtIn) return { data: builtIn, meta: { request_id: request.id } };
      const row = await findEventType(sql, projectIdOf(request), name);
      if (!row) throw notFound('event type', name);
      return { data: toEventTypeOut(row), meta: { request_id: request.id } };
    },
  );

  app.patch(
    '/event-types/:name',
    { schema: { params: EventTypeNameParams, body: UpdateBody, response: { 200: successEnvelope(EventTypeOut) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const { name } = request.params;
      refuseReserved(name);
      const body = request.body ?? {};
      const newCheck = body.schema == null ? undefined : await compileSchema(schemas, body.schema, 'body.schema');
      // Under the row's lock: two PATCHes, one of the schema and one of the example, cannot leave a
      // stored example that the stored schema refuses.
      const { row, keptCheck } = await sql.begin(async (tx) => {
        const current = await lockEventType(tx, projectId, name);
        if (!current) throw notFound('event type', name);
        // The stored schema, compiled, when this PATCH keeps it and needs it or has it cached.
        let kept: CompiledSchema | undefined;
        if (body.schema === undefined && current.payload_schema !== null) {
          const cached = schemas.cached(projectId, name);
          kept = cached?.revision === current.revision ? cached.check : undefined;
          if (kept === undefined && body.example != null) kept = await schemas.compileStored(projectId, name, current.payload_schema);
        }
        const check = body.schema !== undefined ? newCheck : kept;
        const example = body.example !== undefined ? body.example : current.example;
        if (check !== undefined && example !== null) {
          if (body.example !== undefined) assertExampleMatches(check, example, 'body.example', 'does not match the schema');
          else if (body.schema !== undefined) assertExampleMatches(check, example, 'body.schema', 'refuses the stored example');
        }
        return { row: await updateEventType(tx, projectId, name, body), keptCheck: kept };
      });
      if (!row) throw notFound('event type', name);
      // The revision went up; a schema the PATCH left as it was is still the one compiled.
      const check = body.schema !== undefined ? newCheck : keptCheck;
      if (check !== undefined) schemas.remember(projectId, name, row.revision, check);
      else schemas.forget(projectId, name);
      return { data: toEventTypeOut(row), meta: { request_id: request.id } };
    },
  );

  app.delete(
    '/event-types/:name',
    { schema: { params: EventTypeNameParams, response: { 200: successEnvelope(EventTypeDeleteOut) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const { name } = request.params;
      refuseReserved(name);
      const row = await deleteEventType(sql, projectId, name);
      if (!row) throw notFound('event type', name);
      schemas.forget(projectId, name);
      return { data: { name: row.name, deleted: true as const }, meta: { request_id: request.id } };
    },
  );
}
