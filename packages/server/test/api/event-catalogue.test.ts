import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPE_LIMITS, OPERATIONAL_EVENT_TYPES } from '@hookrelay/shared';
import { createTestApp, expectError, type TestApp, type TestProjectKey } from '../helpers/app.js';

/** The event-type catalogue: /v1/event-types (docs/api.md, Event types). */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const BUILT_IN_NAMES = OPERATIONAL_EVENT_TYPES.map((type) => type.name);

const ORDER_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  required: ['order_id', 'amount'],
  properties: { order_id: { type: 'string' }, amount: { type: 'integer', minimum: 0 } },
};

const path = (name: string) => `/v1/event-types/${encodeURIComponent(name)}`;

async function create(body: Record<string, unknown>, project?: TestProjectKey) {
  const res = await t.request('POST', '/v1/event-types', { body, ...(project ? { apiKey: project.apiKey } : {}) });
  expect(res.status, res.raw).toBe(201);
  return res.body.data;
}

async function rowCount(project = t.main): Promise<number> {
  const [row] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM event_types WHERE project_id = ${project.projectId}`;
  return row!.n;
}

/** Every page of a list, following next_cursor. */
async function allPages(query: string, apiKey = t.main.apiKey): Promise<{ names: string[]; pages: number }> {
  const names: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = query.includes('?') ? '&' : '?';
    const res = await t.request('GET', `/v1/event-types${query}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ''}`, { apiKey });
    expect(res.status, res.raw).toBe(200);
    names.push(...res.body.data.map((type: { name: string }) => type.name));
    cursor = res.body.meta.next_cursor;
    pages++;
  } while (cursor !== null && pages < 100);
  return { names, pages };
}

describe('create, read, update and delete', () => {
  it('creates with defaults and answers the record', async () => {
    const res = await t.request('POST', '/v1/event-types', { body: { name: 'defaults.only' } });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data).toEqual({
      name: 'defaults.only',
      description: '',
      schema: null,
      example: null,
      archived: false,
      created_at: expect.any(String),
      updated_at: res.body.data.created_at,
    });
    expect(res.body.meta.request_id).toBe(res.headers['x-request-id']);
  });

  it('keeps every field as sent, the schema with its keys in their order', async () => {
    const created = await create({ name: 'invoice.paid', description: 'An invoice was paid.', schema: ORDER_SCHEMA, example: { order_id: 'o_1', amount: 12 }, archived: true });
    expect(created).toMatchObject({ name: 'invoice.paid', description: 'An invoice was paid.', schema: ORDER_SCHEMA, example: { order_id: 'o_1', amount: 12 }, archived: true });
    const fetched = await t.request('GET', path('invoice.paid'));
    expect(fetched.status).toBe(200);
    expect(fetched.body.data).toEqual(created);
    expect(Object.keys(fetched.body.data.schema)).toEqual(Object.keys(ORDER_SCHEMA));
  });

  it('takes any JSON value as an example: a string, a number, an array', async () => {
    for (const [name, example] of [['ex.string', 'just text'], ['ex.number', 42], ['ex.array', [1, 'a', { b: null }]]] as const) {
      expect((await create({ name, example })).example).toEqual(example);
      expect((await t.request('GET', path(name))).body.data.example).toEqual(example);
    }
  });

  it('PATCH changes the given fields, keeps the others, and moves updated_at', async () => {
    const created = await create({ name: 'patch.me', description: 'before', schema: ORDER_SCHEMA, example: { order_id: 'a', amount: 1 } });
    const res = await t.request('PATCH', path('patch.me'), { body: { description: 'after', archived: true } });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'patch.me', description: 'after', archived: true, schema: ORDER_SCHEMA, example: { order_id: 'a', amount: 1 } });
    expect(res.body.data.created_at).toBe(created.created_at);
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect((await t.request('GET', path('patch.me'))).body.data).toEqual(res.body.data);

    const cleared = await t.request('PATCH', path('patch.me'), { body: { schema: null, example: null } });
    expect(cleared.body.data).toMatchObject({ schema: null, example: null, description: 'after' });
    const unchanged = await t.request('PATCH', path('patch.me'), { body: {} });
    expect(unchanged.status).toBe(200);
    expect(unchanged.body.data).toMatchObject({ description: 'after', archived: true, schema: null });
  });

  it('DELETE removes the type; the name can be taken again', async () => {
    await create({ name: 'short.lived', description: 'first' });
    const res = await t.request('DELETE', path('short.lived'));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ name: 'short.lived', deleted: true });
    expectError(await t.request('GET', path('short.lived')), 404, 'NOT_FOUND', 'short.lived');
    expectError(await t.request('DELETE', path('short.lived')), 404, 'NOT_FOUND');
    expectError(await t.request('PATCH', path('short.lived'), { body: { description: 'x' } }), 404, 'NOT_FOUND');
    expect((await create({ name: 'short.lived', description: 'second' })).description).toBe('second');
  });

  it('a name that is taken is 409 DUPLICATE_NAME, and the first type stays', async () => {
    await create({ name: 'taken', description: 'first' });
    expectError(await t.request('POST', '/v1/event-types', { body: { name: 'taken', description: 'second' } }), 409, 'DUPLICATE_NAME', 'taken');
    expect((await t.request('GET', path('taken'))).body.data.description).toBe('first');
  });

  it('names are case-sensitive', async () => {
    await create({ name: 'Case.Sensitive' });
    await create({ name: 'case.sensitive' });
    expectError(await t.request('GET', path('CASE.SENSITIVE')), 404, 'NOT_FOUND');
  });
});

describe('names', () => {
  it('take letters, digits and . _ - : / up to 256 characters; a slash travels percent-encoded in the path', async () => {
    const long = `a${'b'.repeat(EVENT_TYPE_LIMITS.nameChars - 1)}`;
    for (const name of ['orders/create', 'billing:v2.charge_failed-1', long, 'Z', '9/9/9']) {
      await create({ name });
      const res = await t.request('GET', path(name));
      expect(res.status, name).toBe(200);
      expect(res.body.data.name).toBe(name);
      expect((await t.request('PATCH', path(name), { body: { description: 'ok' } })).status, name).toBe(200);
    }
    // Unencoded, the slash is another path segment: no such route.
    expectError(await t.request('GET', '/v1/event-types/orders/create'), 404, 'ROUTE_NOT_FOUND', 'no route');
  });

  it.each([
    ['empty', '', 'must not be empty'],
    ['257 characters', 'a'.repeat(257), 'must be at most 256 characters'],
    ['a space', 'invoice paid', 'must hold only letters, digits and . _ - : /'],
    ['a letter outside ASCII', 'caf\u00e9', 'must hold only letters'],
    ['an asterisk', 'invoice.*', 'must hold only letters'],
    ['NUL', 'a\u0000b', 'body.name'],
  ])('refuses a name that is %s, naming body.name', async (_label, name, message) => {
    const before = await rowCount();
    expectError(await t.request('POST', '/v1/event-types', { body: { name } }), 400, 'INVALID_REQUEST', message);
    expect(await rowCount()).toBe(before);
  });

  it('refuses a bad name in the path, naming path.name', async () => {
    expectError(await t.request('GET', path('bad name')), 400, 'INVALID_REQUEST', 'path.name');
    expectError(await t.request('GET', `/v1/event-types/${'a'.repeat(257)}`), 400, 'INVALID_REQUEST');
  });
});

describe("hookrelay's own event types", () => {
  it('every project lists them, with their schemas and examples, as active', async () => {
    const other = await t.createProject();
    const res = await t.request('GET', '/v1/event-types', { apiKey: other.apiKey });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(OPERATIONAL_EVENT_TYPES);
    expect(res.body.data.map((type: { name: string }) => type.name)).toEqual(['hookrelay.endpoint.paused', 'hookrelay.message.failed']);
    for (const type of res.body.data) {
      expect(type.archived).toBe(false);
      expect(type.schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    }
    expect((await t.request('GET', '/v1/event-types?archived=false', { apiKey: other.apiKey })).body.data).toEqual(OPERATIONAL_EVENT_TYPES);
    expect((await t.request('GET', '/v1/event-types?archived=true', { apiKey: other.apiKey })).body.data).toEqual([]);
    expect(await rowCount(other)).toBe(0);
  });

  it('GET answers one by name; another name under the prefix is not found', async () => {
    for (const type of OPERATIONAL_EVENT_TYPES) expect((await t.request('GET', path(type.name))).body.data).toEqual(type);
    expectError(await t.request('GET', path('hookrelay.unknown')), 404, 'NOT_FOUND');
  });

  it.each(['hookrelay.endpoint.paused', 'hookrelay.custom', 'HookRelay.Endpoint.Paused', 'HOOKRELAY.x'])('cannot be created: %s', async (name) => {
    const message = expectError(await t.request('POST', '/v1/event-types', { body: { name } }), 400, 'INVALID_REQUEST', 'body.name');
    expect(message).toContain('must not start with "hookrelay.": that prefix is reserved');
  });

  it('cannot be changed or deleted: 400 naming path.name, and the prefix is refused as a whole', async () => {
    for (const name of BUILT_IN_NAMES) {
      const patch = expectError(await t.request('PATCH', path(name), { body: { description: 'mine' } }), 400, 'INVALID_REQUEST', 'path.name');
      expect(patch).toContain("one of hookrelay's own event types, which cannot be changed or deleted");
      expectError(await t.request('DELETE', path(name)), 400, 'INVALID_REQUEST', "one of hookrelay's own");
    }
    expectError(await t.request('PATCH', path('hookrelay.other'), { body: {} }), 400, 'INVALID_REQUEST', 'reserved');
    expectError(await t.request('DELETE', path('hookrelay.other')), 400, 'INVALID_REQUEST', 'reserved');
    expect((await t.request('GET', path('hookrelay.endpoint.paused'))).body.data).toEqual(OPERATIONAL_EVENT_TYPES[0]);
  });
});

describe('listing', () => {
  it('is by name in byte order, built-in types among the rest, and pages without gap or repeat', async () => {
    const project = await t.createProject();
    const names = ['zeta', 'alpha', 'Beta', 'hookrelay-ish', 'hook', 'a/b', 'a:b', 'a.b', 'ab', 'i', '0'];
    for (const name of names) await create({ name }, project);
    const expected = [...names, ...BUILT_IN_NAMES].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(expected.indexOf('hookrelay.endpoint.paused')).toBeGreaterThan(0);

    const whole = await t.request('GET', '/v1/event-types', { apiKey: project.apiKey });
    expect(whole.body.data.map((type: { name: string }) => type.name)).toEqual(expected);
    expect(whole.body.meta.next_cursor).toBeNull();

    for (const limit of [1, 2, 3, 5]) {
      const paged = await allPages(`?limit=${limit}`, project.apiKey);
      expect(paged.names, `limit ${limit}`).toEqual(expected);
      expect(paged.pages, `limit ${limit}`).toBe(Math.ceil(expected.length / limit));
    }
  });

  it('?archived= keeps only archived or only active types; the built-in ones are active', async () => {
    const project = await t.createProject();
    await create({ name: 'old.one', archived: true }, project);
    await create({ name: 'old.two', archived: true }, project);
    await create({ name: 'new.one' }, project);
    await create({ name: 'was.new' }, project);
    await t.request('PATCH', path('was.new'), { body: { archived: true }, apiKey: project.apiKey });
    expect((await allPages('?archived=true&limit=1', project.apiKey)).names).toEqual(['old.one', 'old.two', 'was.new']);
    expect((await allPages('?archived=false&limit=1', project.apiKey)).names).toEqual([...BUILT_IN_NAMES, 'new.one']);
    expect((await allPages('?archived=1', project.apiKey)).names).toEqual(['old.one', 'old.two', 'was.new']);
    expect((await allPages('', project.apiKey)).names).toHaveLength(6);
  });

  it('shows a project only its own types', async () => {
    const one = await t.createProject();
    const two = await t.createProject();
    await create({ name: 'mine' }, one);
    expect((await allPages('', two.apiKey)).names).toEqual(BUILT_IN_NAMES);
    expectError(await t.request('GET', path('mine'), { apiKey: two.apiKey }), 404, 'NOT_FOUND');
    expectError(await t.request('PATCH', path('mine'), { body: { description: 'x' }, apiKey: two.apiKey }), 404, 'NOT_FOUND');
    expectError(await t.request('DELETE', path('mine'), { apiKey: two.apiKey }), 404, 'NOT_FOUND');
    await create({ name: 'mine' }, two);
    expect((await t.request('GET', path('mine'), { apiKey: one.apiKey })).status).toBe(200);
  });

  it('ends a page before its schemas and examples pass the page budget', async () => {
    const project = await t.createProject();
    // About 120 KB each: nine are more than a page's 1 MiB.
    const big = (n: number) => ({ name: `big.${String(n).padStart(2, '0')}`, schema: { description: 'd'.repeat(60_000) }, example: 'e'.repeat(60_000) });
    for (let n = 0; n < 12; n++) await create(big(n), project);
    const first = await t.request('GET', '/v1/event-types?limit=200', { apiKey: project.apiKey });
    const bytes = first.body.data.reduce((sum: number, type: { schema: unknown; example: unknown }) => sum + JSON.stringify(type.schema).length + JSON.stringify(type.example).length, 0);
    expect(first.body.data.length).toBeGreaterThan(1);
    expect(first.body.data.length).toBeLessThan(12);
    expect(bytes).toBeLessThanOrEqual(EVENT_TYPE_LIMITS.pageJsonBytes);
    expect(first.body.meta.next_cursor).not.toBeNull();
    const all = await allPages('?limit=200', project.apiKey);
    expect(all.names).toEqual([...Array.from({ length: 12 }, (_, n) => big(n).name), ...BUILT_IN_NAMES]);
    expect(all.pages).toBeGreaterThan(1);
  });

  it.each([
    ['?cursor=not-a-cursor', 'query.cursor'],
    [`?cursor=${Buffer.from('{"s":"1"}').toString('base64url')}`, 'query.cursor'],
    ['?limit=0', 'query.limit'],
    ['?limit=201', 'query.limit'],
    ['?archived=maybe', 'query.archived'],
    ['?name=x', 'query.name'],
  ])('refuses %s, naming %s', async (query, field) => {
    expectError(await t.request('GET', `/v1/event-types${query}`), 400, 'INVALID_REQUEST', field);
  });
});

describe('schemas', () => {
  it.each([
    ['a type that does not exist', { type: 'strin' }, 'at /type: must be equal to one of the allowed values'],
    ['an unknown keyword', { type: 'object', requird: ['x'] }, 'unknown keyword: "requird"'],
    ['a draft other than 2020-12', { $schema: 'http://json-schema.org/draft-07/schema#' }, '$schema must be https://json-schema.org/draft/2020-12/schema'],
    ['a reference that does not resolve', { $ref: '#/$defs/none' }, "can't resolve reference #/$defs/none"],
    ['a pattern RE2 cannot run', { type: 'string', pattern: '(?<!x)y' }, 'cannot be used'],
  ])('an invalid schema (%s) is 400 naming body.schema and the problem; nothing is stored', async (_label, schema, problem) => {
    const before = await rowCount();
    const message = expectError(await t.request('POST', '/v1/event-types', { body: { name: 'bad.schema', schema } }), 400, 'INVALID_REQUEST', 'body.schema: is not a valid JSON Schema (draft 2020-12)');
    expect(message).toContain(problem);
    expect(await rowCount()).toBe(before);
  });

  it.each([
    ['an array', [{ type: 'object' }]],
    ['a boolean', true],
    ['a string', 'object'],
  ])('a schema that is %s is refused as no JSON Schema object', async (_label, schema) => {
    expectError(await t.request('POST', '/v1/event-types', { body: { name: 'bad.schema', schema } }), 400, 'INVALID_REQUEST', 'body.schema: must be a JSON Schema object');
  });

  it('PATCH compiles a new schema too, and leaves the stored one when it is refused', async () => {
    await create({ name: 'patch.schema', schema: ORDER_SCHEMA });
    expectError(await t.request('PATCH', path('patch.schema'), { body: { schema: { type: 'nope' } } }), 400, 'INVALID_REQUEST', 'body.schema: is not a valid JSON Schema');
    expect((await t.request('GET', path('patch.schema'))).body.data.schema).toEqual(ORDER_SCHEMA);
  });
});

describe('examples', () => {
  it('must match the schema: 400 naming body.example, the JSON pointer and the rule', async () => {
    const before = await rowCount();
    const message = expectError(
      await t.request('POST', '/v1/event-types', { body: { name: 'example.checked', schema: ORDER_SCHEMA, example: { order_id: 'o', amount: -5 } } }),
      400,
      'INVALID_REQUEST',
      'body.example: does not match the schema at /amount: must be >= 0 (minimum)',
    );
    expect(message).not.toContain('body.schema');
    expectError(
      await t.request('POST', '/v1/event-types', { body: { name: 'example.checked', schema: ORDER_SCHEMA, example: { amount: 1 } } }),
      400,
      'INVALID_REQUEST',
      "body.example: does not match the schema at the top level: must have required property 'order_id' (required)",
    );
    expect(await rowCount()).toBe(before);
    const res = await t.request('POST', '/v1/event-types', { body: { name: 'example.checked', schema: ORDER_SCHEMA, example: { order_id: 'o', amount: 5 } } });
    expect(res.status).toBe(201);
  });

  it('a PATCH of either is checked against the other as stored', async () => {
    await create({ name: 'pair', schema: ORDER_SCHEMA, example: { order_id: 'o', amount: 5 } });
    expectError(await t.request('PATCH', path('pair'), { body: { example: { order_id: 7, amount: 5 } } }), 400, 'INVALID_REQUEST', 'body.example: does not match the schema at /order_id: must be string (type)');
    expectError(
      await t.request('PATCH', path('pair'), { body: { schema: { ...ORDER_SCHEMA, properties: { ...ORDER_SCHEMA.properties, amount: { type: 'integer', minimum: 10 } } } } }),
      400,
      'INVALID_REQUEST',
      'body.schema: refuses the stored example at /amount: must be >= 10 (minimum)',
    );
    expect((await t.request('GET', path('pair'))).body.data).toMatchObject({ schema: ORDER_SCHEMA, example: { order_id: 'o', amount: 5 } });
    // Both at once are checked against each other.
    const both = await t.request('PATCH', path('pair'), { body: { schema: { type: 'string' }, example: 'now a string' } });
    expect(both.status, both.raw).toBe(200);
    // Without a schema any example goes; a schema set later is checked against it.
    expect((await t.request('PATCH', path('pair'), { body: { schema: null, example: { anything: true } } })).status).toBe(200);
    expectError(await t.request('PATCH', path('pair'), { body: { schema: { type: 'array' } } }), 400, 'INVALID_REQUEST', 'body.schema: refuses the stored example at the top level: must be array (type)');
  });

  it('is stored unchecked when there is no schema', async () => {
    expect((await create({ name: 'no.schema', example: { free: ['form'] } })).example).toEqual({ free: ['form'] });
  });
});

describe('bounds on what a client stores', () => {
  const deep = (levels: number): unknown => {
    let value: unknown = 1;
    for (let i = 0; i < levels; i++) value = [value];
    return value;
  };

  it.each([
    ['a description over 1,000 characters', { description: 'd'.repeat(1001) }, 'body.description: must be at most 1000 characters'],
    ['a schema over 64 KiB as JSON', { schema: { description: 'd'.repeat(65_536) } }, 'body.schema: must be at most 65536 bytes as JSON'],
    ['an example over 64 KiB as JSON', { example: 'é'.repeat(32_768) }, 'body.example: must be at most 65536 bytes as JSON'],
    ['a schema nested more than 64 levels', { schema: { examples: deep(64) } }, 'body.schema: must not nest arrays and objects more than 64 levels deep'],
    ['NUL in the description', { description: 'a\u0000b' }, 'body.description: must not contain NUL'],
    ['NUL in the example', { example: { text: 'a\u0000b' } }, 'body.example.text: must not contain NUL'],
    ['a field that does not exist', { colour: 'red' }, 'body.colour: unknown field'],
  ])('%s is 400 naming the field; nothing is stored', async (_label, fields, message) => {
    const before = await rowCount();
    expectError(await t.request('POST', '/v1/event-types', { body: { name: 'bounded', ...fields } }), 400, 'INVALID_REQUEST', message);
    expect(await rowCount()).toBe(before);
  });

  it('an example nested 100,000 levels is 400 naming body.example, not a stack overflow', async () => {
    const rawBody = `{"name":"deep","example":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expectError(await t.request('POST', '/v1/event-types', { rawBody, headers: { 'content-type': 'application/json' } }), 400, 'INVALID_REQUEST', 'body.example: must not nest arrays and objects more than 64 levels deep');
  });

  it('takes what is exactly at the bounds', async () => {
    const schema = { description: 'd'.repeat(EVENT_TYPE_LIMITS.jsonBytes - JSON.stringify({ description: '' }).length) };
    expect(JSON.stringify(schema).length).toBe(EVENT_TYPE_LIMITS.jsonBytes);
    const created = await create({ name: 'at.bounds', description: 'd'.repeat(1000), schema, example: deep(63) });
    expect(created.schema).toEqual(schema);
    expect(created.example).toEqual(deep(63));
  });

  it('a PATCH is bounded alike', async () => {
    await create({ name: 'bounded.patch' });
    expectError(await t.request('PATCH', path('bounded.patch'), { body: { description: 'd'.repeat(1001) } }), 400, 'INVALID_REQUEST', 'body.description');
    expectError(await t.request('PATCH', path('bounded.patch'), { body: { example: 'x'.repeat(70_000) } }), 400, 'INVALID_REQUEST', 'body.example: must be at most 65536 bytes');
    expectError(await t.request('PATCH', path('bounded.patch'), { body: { name: 'renamed' } }), 400, 'INVALID_REQUEST', 'body.name: unknown field');
  });
});
