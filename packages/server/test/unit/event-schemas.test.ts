import { describe, expect, it } from 'vitest';
import { OPERATIONAL_EVENT_TYPES, type JsonSchemaObject } from '@hookrelay/shared';
import { EventSchemas } from '../../src/events/event-schemas.js';
import { describeFailure, SchemaEngine, type CompiledSchema } from '../../src/events/schema-engine.js';

/** Compiling clients' JSON Schemas (draft 2020-12) and checking values against them. */

const engine = new SchemaEngine();

function compiled(schema: JsonSchemaObject): CompiledSchema {
  const result = engine.compile(schema);
  if (!result.ok) throw new Error(`expected ${JSON.stringify(schema)} to compile: ${result.problem}`);
  return result.check;
}

function problemOf(schema: JsonSchemaObject): string {
  const result = engine.compile(schema);
  if (result.ok) throw new Error(`expected ${JSON.stringify(schema)} to be refused`);
  return result.problem;
}

describe('compiling a schema', () => {
  it.each([
    ['a type that does not exist', { type: 'strin' }, /at \/type: .*\(/],
    ['a keyword of the wrong type', { type: 'object', properties: { n: { minimum: 'x' } } }, 'at /properties/n/minimum: must be number (type)'],
    ['an unknown keyword (a typo)', { type: 'object', requird: ['a'] }, 'unknown keyword: "requird"'],
    ['an unknown format', { type: 'string', format: 'colour' }, 'unknown format "colour" at #'],
    ['another draft', { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }, '$schema must be https://json-schema.org/draft/2020-12/schema or left out'],
    ['a reference outside the schema', { $ref: 'https://example.com/schema.json' }, "can't resolve reference https://example.com/schema.json"],
    ['a reference to a definition that is missing', { $ref: '#/$defs/missing' }, "can't resolve reference #/$defs/missing"],
    ['a lookahead, which RE2 does not run', { type: 'string', pattern: '^(?=a)a+$' }, 'pattern "^(?=a)a+$" cannot be used'],
    ['a backreference', { type: 'string', pattern: '(a)\\1' }, 'no lookaround, no backreferences'],
    ['a pattern that is no regular expression', { type: 'string', pattern: '(' }, 'pattern "(" cannot be used: error parsing regexp: missing closing )'],
    ['an asynchronous schema', { $async: true, type: 'object' }, '$async schemas cannot be used'],
  ] as [string, JsonSchemaObject, string | RegExp][])('refuses %s, saying what', (_label, schema, expected) => {
    const problem = problemOf(schema);
    if (typeof expected === 'string') expect(problem).toContain(expected);
    else expect(problem).toMatch(expected);
  });

  it('takes the 2020-12 $schema, $defs and references inside the schema, and vocabulary of 2020-12', () => {
    const check = compiled({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'https://example.com/order',
      type: 'object',
      $defs: { amount: { type: 'integer', minimum: 0 } },
      properties: { total: { $ref: '#/$defs/amount' }, items: { type: 'array', prefixItems: [{ type: 'string' }] } },
      unevaluatedProperties: false,
    });
    expect(check({ total: 3, items: ['a'] })).toBeNull();
    expect(check({ total: -1 })).toEqual({ pointer: '/total', keyword: 'minimum', message: 'must be >= 0' });
    expect(check({ total: 1, extra: true })).toEqual({ pointer: '', keyword: 'unevaluatedProperties', message: 'must not have the property "extra"' });
  });

  it('takes the annotation keywords', () => {
    const check = compiled({ title: 't', description: 'd', $comment: 'c', examples: [1], default: 1, deprecated: true, readOnly: false, writeOnly: false, type: 'integer' });
    expect(check(1)).toBeNull();
  });

  it('compiles two schemas with one $id side by side (each on its own)', () => {
    const one = compiled({ $id: 'https://example.com/same', type: 'string' });
    const two = compiled({ $id: 'https://example.com/same', type: 'integer' });
    expect(one('x')).toBeNull();
    expect(two('x')?.keyword).toBe('type');
    expect(two(1)).toBeNull();
  });
});

describe('checking a value', () => {
  it('names the first failing JSON pointer, keyword and rule', () => {
    const check = compiled({
      type: 'object',
      required: ['id', 'lines'],
      properties: { id: { type: 'string' }, lines: { type: 'array', items: { type: 'object', properties: { qty: { type: 'integer', minimum: 1 } } } } },
      additionalProperties: false,
    });
    expect(check({ id: 'a', lines: [{ qty: 1 }] })).toBeNull();
    const nested = check({ id: 'a', lines: [{ qty: 1 }, { qty: 0 }] })!;
    expect(nested).toEqual({ pointer: '/lines/1/qty', keyword: 'minimum', message: 'must be >= 1' });
    expect(describeFailure(nested)).toBe('at /lines/1/qty: must be >= 1 (minimum)');
    expect(describeFailure(check({ lines: [] })!)).toBe("at the top level: must have required property 'id' (required)");
    expect(describeFailure(check({ id: 'a', lines: [], note: 1 })!)).toBe('at the top level: must not have the property "note" (additionalProperties)');
  });

  it('checks formats', () => {
    const check = compiled({ type: 'object', properties: { at: { type: 'string', format: 'date-time' }, id: { type: 'string', format: 'uuid' } } });
    expect(check({ at: '2026-12-01T08:15:00Z', id: '0193d6a4-6f1e-7c2a-9b3d-4e5f60718293' })).toBeNull();
    expect(check({ at: 'yesterday' })).toMatchObject({ pointer: '/at', keyword: 'format' });
    expect(check({ id: 'nope' })).toMatchObject({ pointer: '/id', keyword: 'format' });
  });

  it('runs patterns in linear time: a pattern that backtracks exponentially in V8 answers at once', () => {
    const check = compiled({ type: 'string', pattern: '^(a+)+$' });
    // V8 would take about 2^40 steps on this one before failing.
    expect(check(`${'a'.repeat(40)}!`)).toMatchObject({ keyword: 'pattern' });
    expect(check('aaaa')).toBeNull();
    expect(compiled({ type: 'object', patternProperties: { '^(x+x+)+y$': { type: 'integer' } } })({ [`${'x'.repeat(40)}y`]: 'no' })).toMatchObject({ keyword: 'type' });
  });

  it('sees only a value’s own properties', () => {
    const check = compiled({ type: 'object', required: ['toString'] });
    expect(check({})).toMatchObject({ keyword: 'required' });
    expect(check({ toString: 1 })).toBeNull();
  });

  it('never changes the value it checks', () => {
    const check = compiled({ type: 'object', properties: { n: { type: 'integer', default: 5 } }, additionalProperties: false });
    const value = { n: '5' };
    expect(check(value)).toMatchObject({ keyword: 'type' });
    expect(value).toEqual({ n: '5' });
  });

  it('answers a failure, not a stack overflow, for a payload nested deeper than a recursive schema can follow', () => {
    const check = compiled({ $defs: { node: { type: 'array', items: { $ref: '#/$defs/node' } } }, $ref: '#/$defs/node' });
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(check(deep)).toEqual({ pointer: '', keyword: '$ref', message: 'nests too deeply to be checked against the schema' });
    expect(check([[[]]])).toBeNull();
  });
});

describe("hookrelay's own event types", () => {
  it('have schemas that compile and examples that match them, with every field required', () => {
    for (const type of OPERATIONAL_EVENT_TYPES) {
      const check = compiled(type.schema!);
      expect(check(type.example), type.name).toBeNull();
      const schema = type.schema as { properties: Record<string, unknown>; required: string[] };
      expect(Object.keys(type.example as object).sort(), type.name).toEqual(Object.keys(schema.properties).sort());
      expect([...schema.required].sort(), type.name).toEqual(Object.keys(schema.properties).sort());
      expect(check({ ...(type.example as object), surplus: 1 }), type.name).toMatchObject({ keyword: 'additionalProperties' });
    }
  });
});

describe('EventSchemas', () => {
  it('keeps at most maxEntries compiled schemas, dropping the least recently used', async () => {
    const schemas = new EventSchemas(2);
    const result = await schemas.compile({ type: 'string' });
    if (!result.ok) throw new Error(result.problem);
    schemas.remember('p', 'a', 1, result.check);
    schemas.remember('p', 'b', 1, result.check);
    expect(schemas.cached('p', 'a')?.revision).toBe(1); // a is now the most recent
    schemas.remember('p', 'c', 4, result.check);
    expect(schemas.size).toBe(2);
    expect(schemas.cached('p', 'b')).toBeUndefined();
    expect(schemas.cached('p', 'a')?.revision).toBe(1);
    expect(schemas.cached('p', 'c')?.revision).toBe(4);
    expect(schemas.cached('q', 'c')).toBeUndefined();
    schemas.forget('p', 'c');
    expect(schemas.size).toBe(1);
  });

  it('compiles a built-in type once and knows no other name', async () => {
    const schemas = new EventSchemas();
    const first = await schemas.builtIn('hookrelay.message.failed');
    expect(first).toBeTypeOf('function');
    expect(await schemas.builtIn('hookrelay.message.failed')).toBe(first);
    expect(await schemas.builtIn('hookrelay.unknown')).toBeUndefined();
    expect(await schemas.builtIn('invoice.paid')).toBeUndefined();
  });
});
