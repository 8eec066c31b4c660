import { describe, expect, it } from 'vitest';
import {
  EVENT_TYPE_LIMITS,
  EventTypeCreateIn,
  EventTypeListQuery,
  EventTypeOut,
  EventTypeUpdateIn,
  isReservedEventTypeName,
  jsonBoundsProblem,
  nestsDeeperThan,
  OPERATIONAL_EVENT_TYPES,
  operationalEventType,
} from '../src/index.js';

/** The event-type catalogue's shapes and bounds, and hookrelay's own types. */

function issues(schema: { safeParse(value: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } } }, value: unknown): string[] {
  const result = schema.safeParse(value);
  return result.success ? [] : result.error!.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

const nested = (levels: number): unknown => {
  let value: unknown = 0;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
};

describe('nestsDeeperThan', () => {
  it('counts arrays and objects, not scalars, without recursing', () => {
    expect(nestsDeeperThan(1, 0)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan([[1]], 2)).toBe(false);
    expect(nestsDeeperThan([[1], [[2]]], 2)).toBe(true);
    expect(nestsDeeperThan(nested(200_000), 64)).toBe(true);
  });
});

describe('jsonBoundsProblem', () => {
  it('measures UTF-8 bytes of the JSON text and the depth, depth first', () => {
    expect(jsonBoundsProblem('ab', { maxDepth: 1, maxBytes: 4 })).toBeNull();
    expect(jsonBoundsProblem('abc', { maxDepth: 1, maxBytes: 4 })).toBe('must be at most 4 bytes as JSON (is 5)');
    expect(jsonBoundsProblem('é', { maxDepth: 1, maxBytes: 3 })).toBe('must be at most 3 bytes as JSON (is 4)');
    expect(jsonBoundsProblem([[]], { maxDepth: 1, maxBytes: 100 })).toBe('must not nest arrays and objects more than 1 levels deep');
  });
});

describe('event type names', () => {
  it('reserve hookrelay. in any case, and nothing else', () => {
    for (const name of ['hookrelay.x', 'HookRelay.endpoint.paused', 'HOOKRELAY.']) expect(isReservedEventTypeName(name), name).toBe(true);
    for (const name of ['hookrelay', 'hookrelay-x', 'hookrelayx.y', 'my.hookrelay.x', 'hook.relay']) expect(isReservedEventTypeName(name), name).toBe(false);
  });

  it('take letters, digits and . _ - : / up to the limit', () => {
    for (const name of ['a', 'invoice.paid', 'orders/create', 'v2:charge_failed-1', 'x'.repeat(EVENT_TYPE_LIMITS.nameChars)]) {
      expect(issues(EventTypeCreateIn, { name }), name).toEqual([]);
    }
    expect(issues(EventTypeCreateIn, { name: 'x'.repeat(257) })).toEqual(['name: must be at most 256 characters']);
    expect(issues(EventTypeCreateIn, { name: 'a b' })).toEqual(['name: must hold only letters, digits and . _ - : /']);
    expect(issues(EventTypeCreateIn, { name: 'hookrelay.mine' })).toEqual([`name: must not start with "hookrelay.": that prefix is reserved for hookrelay's own event types`]);
    expect(issues(EventTypeCreateIn, {})).toHaveLength(1);
  });
});

describe('EventTypeCreateIn and EventTypeUpdateIn', () => {
  it('bound the description, and the schema and example by bytes and depth', () => {
    expect(issues(EventTypeCreateIn, { name: 'a', description: 'd'.repeat(1000), schema: { type: 'object' }, example: nested(63) })).toEqual([]);
    expect(issues(EventTypeCreateIn, { name: 'a', description: 'd'.repeat(1001) })).toEqual(['description: must be at most 1000 characters']);
    expect(issues(EventTypeUpdateIn, { schema: { description: 'x'.repeat(EVENT_TYPE_LIMITS.jsonBytes) } })[0]).toMatch(/^schema: must be at most 65536 bytes as JSON/);
    expect(issues(EventTypeUpdateIn, { example: nested(65) })).toEqual(['example: must not nest arrays and objects more than 64 levels deep']);
  });

  it('take a schema only as an object, and null as "none"', () => {
    for (const schema of [[], true, 'object', 1]) expect(issues(EventTypeCreateIn, { name: 'a', schema }), JSON.stringify(schema)).toEqual(['schema: must be a JSON Schema object']);
    expect(EventTypeCreateIn.parse({ name: 'a', schema: null, example: null })).toEqual({ name: 'a', schema: null, example: null });
    expect(EventTypeUpdateIn.parse({ schema: null })).toEqual({ schema: null });
  });

  it('refuse unknown fields, the name in an update among them', () => {
    expect(issues(EventTypeUpdateIn, { name: 'renamed' })).toHaveLength(1);
    expect(issues(EventTypeCreateIn, { name: 'a', version: 2 })).toHaveLength(1);
  });
});

describe('EventTypeListQuery', () => {
  it('takes limit, cursor and archived', () => {
    expect(EventTypeListQuery.parse({})).toEqual({ limit: 50 });
    expect(EventTypeListQuery.parse({ limit: '200', archived: 'false', cursor: 'abc' })).toEqual({ limit: 200, archived: false, cursor: 'abc' });
    expect(issues(EventTypeListQuery, { limit: '201' })).toEqual(['limit: must be at most 200']);
    expect(issues(EventTypeListQuery, { archived: 'yes' })).toEqual(['archived: must be true or false']);
  });
});

describe("hookrelay's own event types", () => {
  it('are records of the catalogue, under the reserved prefix, active, in name order', () => {
    expect(OPERATIONAL_EVENT_TYPES.map((type) => type.name)).toEqual(['hookrelay.endpoint.paused', 'hookrelay.message.failed']);
    for (const type of OPERATIONAL_EVENT_TYPES) {
      expect(EventTypeOut.parse(type)).toEqual(type);
      expect(isReservedEventTypeName(type.name)).toBe(true);
      expect(type.archived).toBe(false);
      expect(type.schema?.title).toBe(type.name);
      expect(operationalEventType(type.name)).toBe(type);
      expect(jsonBoundsProblem(type.schema, { maxDepth: EVENT_TYPE_LIMITS.jsonDepth, maxBytes: EVENT_TYPE_LIMITS.jsonBytes })).toBeNull();
    }
    expect(operationalEventType('hookrelay.other')).toBeUndefined();
  });

  it('have the payload fields the sender fills', () => {
    expect(Object.keys((operationalEventType('hookrelay.endpoint.paused')!.schema as { properties: object }).properties)).toEqual([
      'endpoint_id',
      'owner_id',
      'reason',
      'last_error',
      'failing_since',
    ]);
    expect(Object.keys((operationalEventType('hookrelay.message.failed')!.schema as { properties: object }).properties)).toEqual([
      'message_id',
      'event_id',
      'endpoint_id',
      'owner_id',
      'event_type',
      'attempts',
      'last_error',
    ]);
  });
});
