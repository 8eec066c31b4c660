import { z } from 'zod';
import { jsonBoundsProblem } from '../json-bounds.js';
import { BooleanParam, Cursor, JsonValue, limitParam, Timestamp } from './common.js';

/**
 * The event-type catalogue (docs/api.md, Event types): the names outbound events are sent under,
 * each with an optional JSON Schema (draft 2020-12) that payloads of that type must match and an
 * example payload. Not the extraction of an inbound webhook's type (`event-type.ts`).
 */

/** What a client can store in one event type. */
export const EVENT_TYPE_LIMITS = {
  nameChars: 256,
  descriptionChars: 1000,
  /** `schema` and `example` each, as JSON text in UTF-8. */
  jsonBytes: 65_536,
  /** `schema` and `example` each: arrays and objects nested at most this deep. */
  jsonDepth: 64,
  /** A list page ends before the schemas and examples it holds pass this (it holds one type at least). */
  pageJsonBytes: 1_048_576,
} as const;

/** Names hookrelay sends its own operational events under (`operational-events.ts`). */
export const RESERVED_EVENT_TYPE_PREFIX = 'hookrelay.';

/** `hookrelay.` in any case: `HookRelay.endpoint.paused` would pass for one of hookrelay's own. */
export function isReservedEventTypeName(name: string): boolean {
  return name.slice(0, RESERVED_EVENT_TYPE_PREFIX.length).toLowerCase() === RESERVED_EVENT_TYPE_PREFIX;
}

const NAME_PATTERN = /^[A-Za-z0-9._:/-]+$/;

/** 1–256 letters, digits and `. _ - : /` (`invoice.paid`, `orders/create`, `billing:v2.charge`). */
export const EventTypeName = z
  .string({ message: 'must be a string' })
  .min(1, 'must not be empty')
  .max(EVENT_TYPE_LIMITS.nameChars, `must be at most ${EVENT_TYPE_LIMITS.nameChars} characters`)
  .regex(NAME_PATTERN, 'must hold only letters, digits and . _ - : /');

const NewEventTypeName = EventTypeName.refine(
  (name) => !isReservedEventTypeName(name),
  `must not start with "${RESERVED_EVENT_TYPE_PREFIX}": that prefix is reserved for hookrelay's own event types`,
);

const Description = z
  .string({ message: 'must be a string' })
  .max(EVENT_TYPE_LIMITS.descriptionChars, `must be at most ${EVENT_TYPE_LIMITS.descriptionChars} characters`);

const BOUNDS = { maxDepth: EVENT_TYPE_LIMITS.jsonDepth, maxBytes: EVENT_TYPE_LIMITS.jsonBytes };

function withinBounds(value: unknown, ctx: z.RefinementCtx): void {
  const problem = jsonBoundsProblem(value, BOUNDS);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
}

export type JsonSchemaObject = { [key: string]: JsonValue };

/**
 * A JSON Schema as an object (the boolean schemas `true` and `false` are not taken). Checked
 * shallowly, like JsonValue: the server compiles it, which is the real check.
 */
export const JsonSchemaObject = z
  .custom<JsonSchemaObject>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    message: 'must be a JSON Schema object',
  })
  .meta({ type: 'object', description: 'a JSON Schema, draft 2020-12' });

const SchemaIn = JsonSchemaObject.superRefine(withinBounds);
const ExampleIn = JsonValue.superRefine(withinBounds);

/** What a create and a PATCH may set besides the name. */
const settableFields = {
  description: Description.optional(),
  schema: SchemaIn.nullable().optional(),
  example: ExampleIn.nullable().optional(),
  archived: z.boolean({ message: 'must be true or false' }).optional(),
};

/**
 * POST /v1/event-types. `schema: null` and `example: null` mean none (a JSON `null` cannot be an
 * example). The server compiles the schema and checks the example against it.
 */
export const EventTypeCreateIn = z.strictObject({ name: NewEventTypeName, ...settableFields });
export type EventTypeCreateIn = z.infer<typeof EventTypeCreateIn>;

/** PATCH /v1/event-types/{name}: omitted fields keep their values; `null` removes schema or example. */
export const EventTypeUpdateIn = z.strictObject(settableFields);
export type EventTypeUpdateIn = z.infer<typeof EventTypeUpdateIn>;

/** An event type as every route answers it; hookrelay's own are the ones named `hookrelay.…`. */
export const EventTypeOut = z.object({
  name: z.string(),
  description: z.string(),
  schema: JsonSchemaObject.nullable(),
  example: JsonValue.nullable(),
  archived: z.boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type EventTypeOut = z.infer<typeof EventTypeOut>;

export const EventTypeNameParams = z.object({ name: EventTypeName });

/**
 * GET /v1/event-types: by name in byte order, `limit` 1–200 (default 50); a page also ends before
 * its schemas and examples pass `pageJsonBytes`. `archived` keeps only archived (true) or active (false) types.
 */
export const EventTypeListQuery = z.strictObject({
  limit: limitParam(200, 50),
  cursor: Cursor.optional(),
  archived: BooleanParam.optional(),
});
export type EventTypeListQuery = z.infer<typeof EventTypeListQuery>;

/** `{ name, deleted: true }`: the answer of DELETE /v1/event-types/{name}. */
export const EventTypeDeleteOut = z.object({ name: z.string(), deleted: z.literal(true) });
export type EventTypeDeleteOut = z.infer<typeof EventTypeDeleteOut>;
