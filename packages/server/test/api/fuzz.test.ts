import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, HTTP_STATUS_BY_ERROR_CODE, SAMPLE_EVENTS, type ErrorCode } from '@hookrelay/shared';
import { createTestApp } from '../helpers/app.js';
import { createFixtures, kindOfParam, type FixtureKind, type ProjectFixtures } from '../helpers/fixtures.js';
import {
  openApiOperations,
  openApiPath,
  pathParams,
  routeKey,
  servedRoutes,
  type JsonSchema,
  type OpenApiOperation,
  type ServedRoute,
} from '../helpers/routes.js';

/**
 * Hostile input on every route the app serves: path parameters, query strings and bodies
 * from fast-check, sent with a valid API key. Whatever arrives, the answer is never a 5xx, and every
 * error is the envelope with a code of the shared table at that code's status. The route list comes
 * from the app itself, so a new route is fuzzed without editing this file. A failure prints the
 * seed and the shrunk request (replay with `seed` and `path` in fc.assert's options).
 */

/** Requests per run in all; split evenly over the routes. */
const TOTAL_RUNS = 3200;
const t = await createTestApp();
afterAll(async () => {
  await t.close();
});
const other = await t.createProject();

/**
 * Real ids of every kind in both projects: the caller's own let handlers run past their lookups
 * into updates and SQL; the other project's must stay "not found".
 */
const mine = await createFixtures(t, t.main.apiKey);
const theirs = await createFixtures(t, other.apiKey);
const REAL_IDS = (Object.keys(mine) as FixtureKind[]).filter((k) => !k.endsWith('Tokens')).flatMap((k) => [...mine[k], ...theirs[k]]);

const routes = servedRoutes(t.app);
const operations = await openApiOperations(t.app, t.main.apiKey);

/** A real `next_cursor` of every list that pages: cursors are fuzzed with their own kind and each other's. */
const cursors: string[] = [];
for (const route of routes) {
  const operation = operations.get(`${route.method} ${openApiPath(route.path)}`);
  if (route.method !== 'GET' || !operation?.parameters?.some((p) => p.in === 'query' && p.name === 'cursor')) continue;
  const path = route.path.replace(/:(\w+)/g, (_, name: string) => mine[kindOfParam(route, name) ?? 'outbound'][0]!);
  const res = await t.request('GET', `${path}?limit=1${path.endsWith('/events') ? '&status=stored,fetched,delivered' : ''}`);
  const cursor = res.body?.meta?.next_cursor;
  if (typeof cursor === 'string' && cursor !== '') cursors.push(cursor);
}
expect(cursors.length).toBeGreaterThanOrEqual(5);

// ---------------------------------------------------------------------------------------------
// Arbitraries

/** Path segments that have broken routers before; sent as they are, not encoded. */
const RAW_SEGMENTS = ['%00', '..', '.', '%2e%2e', '%2E%2E%2F', '%2F', '%5C', '%ZZ', '%', '%E0%A4%A', '%C0%AE', '%20', '+', '~', '-1', '0', 'null', 'undefined', 'ep_', 'ep_%00', '*', '%2A', '?', '#'];

/**
 * Percent-encoding that also takes lone surrogates (which encodeURIComponent refuses): they go out
 * as the invalid UTF-8 a careless client would send.
 */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...text]
      .map((ch) => {
        const unit = ch.charCodeAt(0);
        if (ch.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
          return `%${(0xe0 | (unit >> 12)).toString(16)}%${(0x80 | ((unit >> 6) & 0x3f)).toString(16)}%${(0x80 | (unit & 0x3f)).toString(16)}`.toUpperCase();
        }
        return encodeURIComponent(ch);
      })
      .join('');
  }
}

const encoded = (arb: fc.Arbitrary<string>) => arb.map(encode);

const idShaped = fc.oneof(
  fc.uuid(),
  fc.uuid({ version: 7 }).map((id) => id.toUpperCase()),
  fc.stringMatching(/^ep_[a-f0-9]{32}$/),
  fc.stringMatching(/^(sk|whsec|hr|ep|msg)_[A-Za-z0-9]{0,48}$/),
);

const subPath = fc.array(encoded(fc.string({ maxLength: 20 })), { maxLength: 4 }).map((s) => s.join('/'));

/** A well-formed path parameter: mostly the caller's own id of the right kind, else another project's. */
function validParamArb(route: ServedRoute, name: string): fc.Arbitrary<string> {
  if (name === '*') return subPath;
  const kind = kindOfParam(route, name);
  // A route added with a new kind of id still gets real ids, of every kind.
  if (kind === undefined) return fc.constantFrom(...REAL_IDS);
  // Only the signed fixture endpoint (the last inbound one) gets a sample past the route's own checks.
  if (route.path.endsWith('/samples')) return fc.oneof({ weight: 3, arbitrary: fc.constant(mine.inbound.at(-1)!) }, { weight: 1, arbitrary: fc.constantFrom(...mine[kind], ...theirs[kind]) });
  return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...mine[kind]) }, { weight: 1, arbitrary: fc.constantFrom(...theirs[kind]) });
}

/** A path parameter as an attacker sends it: real ids of the wrong kind, look-alikes, and router breakers. */
function hostileParamArb(name: string): fc.Arbitrary<string> {
  if (name === '*') return fc.oneof(subPath, fc.constantFrom(...RAW_SEGMENTS), encoded(fc.string({ unit: 'binary', maxLength: 60 })));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...REAL_IDS) },
    { weight: 2, arbitrary: idShaped },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_SEGMENTS) },
    { weight: 2, arbitrary: encoded(fc.string({ unit: 'binary', maxLength: 60 })) },
    { weight: 1, arbitrary: encoded(fc.string({ unit: 'grapheme', maxLength: 30 })) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 9000 }).map((n) => 'a'.repeat(n)) },
    { weight: 1, arbitrary: fc.constantFrom(...REAL_IDS).map((id) => `${id}%00`) },
  );
}

const HUGE_NUMBERS = ['9007199254740993', '99999999999999999999999999', '1e309', '-1e309', '2147483648', '-2147483649', '1e-400', 'NaN', 'Infinity', '-0', '0x10', '1_000'];

const TIMESTAMPS = fc.oneof(
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(
    '0000-01-01T00:00:00Z',
    '0001-01-01T00:00:00+01:00',
    '0001-01-01T00:00:00-01:00',
    '9999-12-31T23:59:59.999999999Z',
    '9999-12-31T23:59:59-01:00',
    '2024-02-29T00:00:00+23:59',
    '1970-01-01T00:00:00-16:00',
    '2024-06-01T12:00:00+15:59',
    '2024-13-01T00:00:00Z',
    '2024-01-01',
    'now',
  ),
);

/** A value that the schema accepts (mostly): enough to get past validation into handlers and SQL. */
function validArb(schema: JsonSchema, field = '', depth = 0): fc.Arbitrary<unknown> {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => validArb(s, field, depth)));
  const base = validArbOf(schema, field, depth);
  return schema.nullable ? fc.oneof(fc.constant(null), base) : base;
}

function validArbOf(schema: JsonSchema, field: string, depth: number): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.oneof(
        fc.integer({ min: Math.max(schema.minimum ?? -(2 ** 31), Number.MIN_SAFE_INTEGER), max: Math.min(schema.maximum ?? 2 ** 31, Number.MAX_SAFE_INTEGER) }),
        fc.constantFrom(...[schema.minimum, schema.maximum].filter((n): n is number => n !== undefined)),
      );
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'array': {
      const items = schema.items ? validArb(schema.items, field, depth + 1) : fc.jsonValue();
      const min = schema.minItems ?? 0;
      return fc.array(items, { minLength: min, maxLength: Math.min(schema.maxItems ?? 8, Math.max(min, 8)) });
    }
    case 'object': {
      const model = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, s]) => [k, validArb(s, k, depth + 1)]));
      const record = fc.record(model, { requiredKeys: schema.required ?? [] });
      if (schema.properties?.provider !== undefined && schema.properties.event !== undefined) {
        // A sample's event must be one of its provider's: mostly a matching pair, and mostly GitHub's,
        // which the signed fixture endpoint verifies, so that the edits in `set` are applied.
        const pairs = Object.entries(SAMPLE_EVENTS).flatMap(([provider, events]) => events.map((event) => ({ provider, event })));
        const pair = fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...pairs.filter((p) => p.provider === 'github')) }, { weight: 1, arbitrary: fc.constantFrom(...pairs) });
        return fc.tuple(record, fc.option(pair, { freq: 4 })).map(([value, chosen]) => (chosen === null ? value : { ...value, ...chosen }));
      }
      if (typeof schema.additionalProperties === 'object') {
        const values = validArb(schema.additionalProperties, field, depth + 1);
        const keys = fc.oneof({ weight: 4, arbitrary: fc.stringMatching(/^X-[A-Za-z0-9-]{1,20}$/) }, { weight: 1, arbitrary: fc.string({ maxLength: 10 }) });
        return fc.dictionary(keys, values, { maxKeys: 6 });
      }
      return record;
    }
    case 'string':
      return stringArb(schema, field);
    default:
      // `{}` in the schema: any JSON value (a message payload).
      return fc.jsonValue({ maxDepth: 4 });
  }
}

function stringArb(schema: JsonSchema, field: string): fc.Arbitrary<string> {
  // Ids in bodies and queries: mostly the caller's own, so that the request gets past its lookups.
  const ids = (own: string[], foreign: string[], random: fc.Arbitrary<string>) =>
    fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...own) }, { weight: 1, arbitrary: fc.constantFrom(...foreign) }, { weight: 1, arbitrary: random });
  const uuids = (f: ProjectFixtures) => (Object.keys(f) as FixtureKind[]).filter((k) => !k.endsWith('Tokens') && k !== 'outbound' && k !== 'eventTypes').flatMap((k) => f[k]);
  if (schema.pattern?.includes('[0-9a-f]{8}-')) return ids(uuids(mine), uuids(theirs), fc.uuid());
  if (schema.pattern?.startsWith('^ep_')) return ids(mine.outbound, theirs.outbound, fc.stringMatching(/^ep_[a-f0-9]{32}$/));
  if (schema.format === 'date-time') return TIMESTAMPS;
  if (field === 'url') {
    return fc.oneof(
      fc.webUrl({ validSchemes: ['https'], withQueryParameters: true, withFragments: true }).filter((u) => u.length >= 12),
      fc.constantFrom('https://127.0.0.1/x', 'https://[::ffff:7f00:1]/x', 'https://localhost./x', 'https://169.254.169.254/latest', 'https://0x7f.1/', 'https://example.com:0/x', 'https://example.com:99999/x', 'https://user:pass@example.com/x', 'https://exa mple.com/x'),
    );
  }
  if (field === 'allowed_cidrs') {
    return fc.oneof(
      { weight: 3, arbitrary: fc.tuple(fc.ipV4(), fc.integer({ min: 0, max: 32 })).map(([ip, bits]) => `${ip}/${bits}`) },
      { weight: 2, arbitrary: fc.tuple(fc.ipV6(), fc.integer({ min: 0, max: 128 })).map(([ip, bits]) => `${ip}/${bits}`) },
      { weight: 1, arbitrary: fc.tuple(fc.ipV4(), fc.integer({ min: -1, max: 40 })).map(([ip, bits]) => `${ip}/${bits}`) },
      { weight: 1, arbitrary: fc.oneof(fc.ipV4(), fc.ipV4Extended(), fc.string({ maxLength: 30 }), fc.constantFrom('::ffff:10.0.0.0/104', '0.0.0.0/0', '::/0', '10.0.0.0/8 ', '1.2.3.4/32/1')) },
    );
  }
  if (field === 'cursor') return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...cursors) }, { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 60 }) });
  const sized = (arb: fc.Arbitrary<string>) =>
    arb.filter((s) => s.length >= (schema.minLength ?? 0) && s.length <= (schema.maxLength ?? Infinity));
  if (schema.pattern) return sized(fc.stringMatching(new RegExp(schema.pattern)));
  const length = { minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 80, 80) };
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ ...length, unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) }) },
    { weight: 3, arbitrary: sized(fc.constantFrom(...API_WORDS)) },
    { weight: 1, arbitrary: fc.string({ ...length, unit: 'grapheme' }) },
    { weight: 1, arbitrary: fc.string({ ...length, unit: 'binary' }) },
    { weight: 1, arbitrary: sized(fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '💥'.repeat(10), "'; DROP TABLE endpoints; --", '$1', '%s%n', '${x}', ...PROTOTYPE_WORDS)) },
  );
}

/** Names and dotted paths that reach a prototype when code writes or reads through them. */
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'] as const;
const PROTOTYPE_WORDS = [...PROTOTYPE_KEYS, '__proto__.polluted', 'constructor.prototype.polluted', 'a.__proto__.b', 'toString', 'hasOwnProperty'];

/** Words the API gives meaning to, for string fields whose schema does not list them (comma lists, paths). */
const API_WORDS = ['stored', 'fetched', 'delivered', 'stored,fetched,delivered', 'delivered,stored', 'queued', 'succeeded', 'pending_retry', 'failed_permanent', 'body', 'header', 'type', 'data.object.type', 'X-Event-Type', 'base64', 'hex', 'github', 'cli', 'forward', 'fuzz.x', 'x'];

/** Anything but what the field wants. */
const wrongValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(null, true, false, 0, -1, 1.5, -0, 1e308, -1e308, 2 ** 31, 2 ** 53 + 2, '', ' ', [], {}, [null], { $gt: '' }, '1', 'true', 'null'),
  fc.integer({ min: 10_000, max: 2_000_000 }).map((n) => 'x'.repeat(n)),
);

/** Depths around the limits that matter: the 512 levels embedded bodies allow, and JSON.stringify's stack. */
const deepJson = fc.tuple(fc.constantFrom(64, 513, 5_000, 20_000), fc.boolean()).map(([depth, arrays]) =>
  arrays ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
);

interface BodyPart {
  payload?: string;
  contentType?: string;
}

const asJson = (value: unknown): BodyPart => ({ payload: JSON.stringify(value), contentType: 'application/json' });

/** A body the route's schema accepts; none where the route has no body schema. */
function validBodyArb(operation: OpenApiOperation | undefined): fc.Arbitrary<BodyPart> {
  const schema = operation?.requestBody?.content?.['application/json']?.schema;
  return schema ? validArb(schema).map(asJson) : fc.constantFrom<BodyPart>({}, { payload: '', contentType: 'application/json' });
}

function hostileBodyArb(operation: OpenApiOperation | undefined, method: string): fc.Arbitrary<BodyPart> {
  if (method === 'GET') return fc.constant({});
  const schema = operation?.requestBody?.content?.['application/json']?.schema;
  const fields = Object.keys(schema?.properties ?? {});
  const nestable = Object.entries(schema?.properties ?? {})
    .filter(([, field]) => field.type === undefined || field.type === 'object' || field.type === 'array')
    .map(([name]) => name);
  const hostile: { weight: number; arbitrary: fc.Arbitrary<BodyPart> }[] = [
    { weight: 2, arbitrary: fc.constant({}) },
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map(asJson) },
    { weight: 1, arbitrary: deepJson.map((payload) => ({ payload, contentType: 'application/json' })) },
    { weight: 1, arbitrary: fc.integer({ min: 1_000_000, max: 1_200_000 }).map((n) => asJson({ [fields[0] ?? 'x']: 'y'.repeat(n) })) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.constantFrom('{', '{"a":', '[1,]', '{"a":1}}', "{'a':1}", 'NaN', 'undefined', '\u0000', '\ufeff{}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '{"a":1,"a":2}', '1e999', '"\\ud800"'),
      ).map((payload) => ({ payload, contentType: 'application/json' })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(
        fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream', 'application/xml', 'application/json; charset=utf-16', 'application/jsonx', 'application/json;;', '', 'application/*', '*/*'),
        fc.oneof(fc.constant('{"a":1}'), fc.constant('--x\r\nContent-Disposition: form-data; name="url"\r\n\r\nhttps://example.com\r\n--x--'), fc.string({ maxLength: 50 })),
      ).map(([contentType, payload]) => ({ payload, contentType })),
    },
  ];
  if (schema) {
    const valid = validArb(schema);
    hostile.push(
      { weight: 6, arbitrary: valid.map(asJson) },
      {
        weight: 4,
        // A valid body with one field set to a value of the wrong type.
        arbitrary: fc.tuple(valid, fc.constantFrom(...(fields.length > 0 ? fields : ['x'])), wrongValue).map(([body, field, value]) =>
          asJson(typeof body === 'object' && body !== null ? { ...body, [field]: value } : body),
        ),
      },
      {
        weight: 2,
        arbitrary: fc.tuple(valid, fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 3 })).map(([body, extra]) =>
          asJson(typeof body === 'object' && body !== null ? { ...extra, ...body } : body),
        ),
      },
      // The required fields and one that takes nested values, nested thousands deep (a message payload).
      {
        weight: 3,
        arbitrary: fc.tuple(valid, fc.constantFrom(...(nestable.length > 0 ? nestable : fields.length > 0 ? fields : ['x'])), deepJson).map(([body, field, deep]) => {
          const required = Object.fromEntries(Object.entries((body ?? {}) as object).filter(([k]) => schema.required?.includes(k)));
          return { payload: JSON.stringify({ ...required, [field]: '§' }).replace('"§"', deep), contentType: 'application/json' };
        }),
      },
    );
  }
  return fc.oneof(...hostile);
}

/** A query string of the route's own parameters with values their schemas accept (or none). */
function validQueryArb(operation: OpenApiOperation | undefined): fc.Arbitrary<string> {
  const params = (operation?.parameters ?? []).filter((p) => p.in === 'query');
  if (params.length === 0) return fc.constant('');
  const model = Object.fromEntries(params.map((p) => [p.name, validArb(p.schema, p.name).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))]));
  return fc.record(model, { requiredKeys: [] }).map((query) =>
    Object.entries(query)
      .map(([k, v]) => `${encode(k)}=${encode(String(v))}`)
      .join('&'),
  );
}

/** A query string: the route's own parameters with good and bad values, repeats, unknown keys, junk. */
function hostileQueryArb(operation: OpenApiOperation | undefined): fc.Arbitrary<string> {
  const params = (operation?.parameters ?? []).filter((p) => p.in === 'query');
  const value = (schema: JsonSchema | undefined, name: string) =>
    fc.oneof(
      { weight: 3, arbitrary: schema ? validArb(schema, name).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))) : fc.string() },
      { weight: 2, arbitrary: fc.constantFrom(...HUGE_NUMBERS, '-1', '0', '1.5', 'abc', 'true', '', '[]', '{}', 'stored,fetched,,bogus', 'STORED', 'a'.repeat(5000)) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    );
  const pair = fc.oneof(
    ...params.map((p) => fc.tuple(fc.constant(p.name), fc.array(value(p.schema, p.name), { minLength: 1, maxLength: 3 }))),
    fc.tuple(fc.oneof(fc.constantFrom('unknown', 'limit[]', 'limit[a]', '__proto__', 'constructor', '', 'a.b', 'status[0]'), fc.string({ maxLength: 10 })), fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 2 })),
  );
  const rawPairs = fc.boolean();
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.array(pair, { maxLength: 4 }), rawPairs).map(([pairs, raw]) =>
      pairs.flatMap(([k, vs]) => vs.map((v) => (raw ? `${k}=${v}` : `${encode(k)}=${encode(v)}`).replace(/#/g, '%23'))).join('&'),
    ) },
    { weight: 1, arbitrary: fc.constantFrom('&&&', '=', '==', 'a==b', '%ZZ=1', 'limit=%00', 'cursor=%E0%A4%A', '?', 'a=1&a', 'limit=1&limit=2') },
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function linkIds(payload: string, id: string): string {
  try {
    const value: unknown = JSON.parse(payload);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return payload;
    return JSON.stringify(Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typeof v === 'string' && UUID.test(v) ? id : v])));
  } catch {
    return payload;
  }
}

/** fc.oneof without the alternatives that do not apply to a route (weight 0). */
function oneofWeighted<T>(...alternatives: { weight: number; arbitrary: fc.Arbitrary<T> }[]): fc.Arbitrary<T> {
  return fc.oneof(...alternatives.filter((a) => a.weight > 0));
}

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

/**
 * One request: well-formed everywhere except (mostly) one place — the path, the query, the body or
 * the headers — so that each hostile part reaches the code behind the parts that pass; a quarter
 * of the requests are well-formed throughout and run the handlers themselves.
 */
function requestArb(route: ServedRoute, operation: OpenApiOperation | undefined): fc.Arbitrary<FuzzRequest> {
  const names = pathParams(route.path);
  const headerParams = (operation?.parameters ?? []).filter((p) => p.in === 'header');
  const noHeaders = fc.constant({} as Record<string, string>);
  const hostileHeaders = fc.oneof(
    noHeaders,
    ...headerParams.map((p) =>
      fc.oneof(validArb(p.schema, p.name), fc.string({ maxLength: 300 }).map((s) => s.replace(/[^\x20-\x7e]/g, 'x')), fc.constant('a'.repeat(9000))).map((v) => ({ [p.name]: String(v) })),
    ),
  );
  const validParams = fc.tuple(...names.map((name) => validParamArb(route, name)));
  const validQuery = validQueryArb(operation);
  const validBody = validBodyArb(operation);
  const parts = oneofWeighted(
    { weight: 3, arbitrary: fc.record({ params: validParams, query: validQuery, body: validBody, headers: noHeaders }) },
    { weight: 2, arbitrary: fc.record({ params: fc.tuple(...names.map(hostileParamArb)), query: validQuery, body: validBody, headers: noHeaders }) },
    { weight: 2, arbitrary: fc.record({ params: validParams, query: hostileQueryArb(operation), body: validBody, headers: noHeaders }) },
    { weight: route.method === 'GET' ? 0 : 4, arbitrary: fc.record({ params: validParams, query: validQuery, body: hostileBodyArb(operation, route.method), headers: noHeaders }) },
    { weight: headerParams.length > 0 ? 1 : 0, arbitrary: fc.record({ params: validParams, query: validQuery, body: validBody, headers: hostileHeaders }) },
  );
  return fc.tuple(parts, fc.boolean()).map(([{ params, query, body, headers }, linked]) => {
    let i = 0;
    const path = route.path.replace(/:(\w+)|\*/g, () => params[i++]!);
    // Half the time a body's id fields repeat the path's id (`/inbound-messages/{id}/result` wants
    // its `message_id`), so that the checks behind that agreement run too.
    if (linked && body.payload !== undefined && UUID.test(params[0] ?? '')) body = { ...body, payload: linkIds(body.payload, params[0]!) };
    return {
      method: route.method,
      url: query === '' ? path : `${path}?${query}`,
      headers: {
        authorization: `Bearer ${t.main.apiKey}`,
        ...headers,
        ...(body.contentType !== undefined && body.contentType !== '' ? { 'content-type': body.contentType } : {}),
      },
      ...(body.payload !== undefined ? { payload: body.payload } : {}),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Prototype keys: every part of a request names __proto__, constructor or prototype

/** What a polluting key would carry: the fields that would change the server's decisions. */
const PROTOTYPE_VALUES = fc.constantFrom<unknown>({ polluted: 'yes' }, { prototype: { polluted: 'yes' } }, { acceptsStreamTicket: true }, { allowPrivateNetworks: true }, 'yes', null, [], ['x']);

/** `value` with prototype keys as own properties of objects inside it (JSON.stringify writes them out). */
function withPrototypeKeys(value: unknown, inserts: readonly [string, unknown, number][]): unknown {
  const objects: object[] = [];
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    if (!Array.isArray(node)) objects.push(node);
    for (const child of Object.values(node)) visit(child);
  };
  const root = typeof value === 'object' && value !== null && !Array.isArray(value) ? value : { value };
  visit(root);
  for (const [key, inserted, at] of inserts) {
    Object.defineProperty(objects[at % objects.length]!, key, { value: structuredClone(inserted), enumerable: true, writable: true, configurable: true });
  }
  return root;
}

/** `value` with some of its strings replaced by prototype names and paths (a sample edit's `path`, say). */
function withPrototypeStrings(value: unknown, picks: readonly [string, number][]): unknown {
  const slots: [Record<string, unknown> | unknown[], string | number][] = [];
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    for (const [key, child] of Object.entries(node)) {
      if (typeof child === 'string') slots.push([node as Record<string, unknown>, Array.isArray(node) ? Number(key) : key]);
      else visit(child);
    }
  };
  visit(value);
  for (const [word, at] of picks) {
    const slot = slots[at % Math.max(slots.length, 1)];
    if (slot !== undefined) (slot[0] as Record<string | number, unknown>)[slot[1]] = word;
  }
  return value;
}

const prototypeStrings = fc.array(fc.tuple(fc.constantFrom(...PROTOTYPE_WORDS), fc.nat()), { minLength: 1, maxLength: 3 });

const prototypeInserts = fc.array(fc.tuple(fc.constantFrom(...PROTOTYPE_KEYS), PROTOTYPE_VALUES, fc.nat()), { minLength: 1, maxLength: 3 });

/** Query pairs through prototype names, in the shapes query parsers have expanded into objects. */
const prototypeQuery = fc
  .array(
    fc.tuple(
      fc.constantFrom('__proto__', 'constructor', 'prototype', '__proto__[polluted]', 'constructor[prototype][polluted]', '__proto__.polluted', 'a[__proto__]', 'toString', 'hasOwnProperty'),
      fc.constantFrom('yes', 'true', '1', ''),
    ),
    { minLength: 1, maxLength: 3 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));

/**
 * A request whose every part but one is valid, and that one names a prototype: a body with prototype
 * keys inside, a query through them, a path segment, or headers named after inherited members.
 */
function prototypeRequestArb(route: ServedRoute, operation: OpenApiOperation | undefined): fc.Arbitrary<FuzzRequest> {
  const schema = operation?.requestBody?.content?.['application/json']?.schema;
  const body: fc.Arbitrary<BodyPart> =
    route.method === 'GET'
      ? fc.constant({})
      : fc.oneof(
          fc.tuple(schema ? validArb(schema) : fc.jsonValue({ maxDepth: 2 }), prototypeInserts).map(([value, inserts]) => asJson(withPrototypeKeys(value, inserts))),
          fc.tuple(schema ? validArb(schema) : fc.jsonValue({ maxDepth: 2 }), prototypeStrings).map(([value, picks]) => asJson(withPrototypeStrings(value, picks))),
        );
  const headers = fc.subarray(['constructor', 'tostring', 'hasownproperty', 'prototype', 'valueof'], { minLength: 1 }).map((names) => Object.fromEntries(names.map((name) => [name, 'yes'])));
  return fc.tuple(requestArb(route, operation), body, prototypeQuery, headers, fc.constantFrom(...PROTOTYPE_KEYS), fc.integer({ min: 0, max: 5 })).map(([base, hostileBody, query, extraHeaders, segment, part]) => {
    const path = base.url.split('?')[0]!;
    switch (part) {
      case 0:
      case 4:
      case 5:
        return route.method === 'GET' ? { ...base, url: `${path}?${query}` } : { ...base, payload: hostileBody.payload!, headers: { ...base.headers, 'content-type': 'application/json' } };
      case 1:
        return { ...base, url: `${path}?${query}` };
      case 2:
        return { ...base, url: path.replace(/\/[^/]*$/u, `/${segment}`) };
      default:
        return { ...base, headers: { ...extraHeaders, ...base.headers } };
    }
  });
}

/** The own property names of the prototypes every object of the process shares, as the file began. */
const prototypeNames = () => [Object.prototype, Array.prototype, Function.prototype].map((proto) => Reflect.ownKeys(proto).map(String).sort());
const PROTOTYPE_BASELINE = prototypeNames();

// ---------------------------------------------------------------------------------------------
// The property

const runsByRoute = new Map<string, number>();

/** What every answer must be: no 5xx, and an error is the envelope with a code at its status. */
async function send(request: FuzzRequest, key: string): Promise<void> {
  runsByRoute.set(key, (runsByRoute.get(key) ?? 0) + 1);
  const res = await t.app.inject({ method: request.method as 'GET', url: request.url, headers: request.headers, ...(request.payload !== undefined ? { payload: request.payload } : {}) });
  const show = `${request.method} ${request.url.slice(0, 300)} → ${res.statusCode} ${res.body.slice(0, 500)}`;
  // Checked here as well as by the file's guard, so that fast-check shrinks to the request that did it.
  expect(prototypeNames(), `a prototype changed after ${show}`).toEqual(PROTOTYPE_BASELINE);
  // The one 5xx by design: ingestion into an endpoint that a fuzzed pause left paused answers 503
  // ENDPOINT_PAUSED so that the sender retries (docs/api.md, Status codes).
  const pausedIngest = res.statusCode === 503 && !request.url.startsWith('/v1/') && res.json().error?.code === 'ENDPOINT_PAUSED';
  if (!pausedIngest) expect(res.statusCode, show).toBeLessThan(500);
  expect(res.statusCode, show).toBeGreaterThanOrEqual(200);
  if (res.statusCode < 400 || request.method === 'OPTIONS') return;
  let body: { error?: { code?: unknown; message?: unknown }; meta?: { request_id?: unknown } };
  try {
    body = JSON.parse(res.body);
  } catch {
    throw new Error(`error answer is not JSON: ${show}`);
  }
  expect(Object.keys(body).sort(), show).toEqual(['error', 'meta']);
  expect(ERROR_CODES, show).toContain(body.error?.code);
  expect(HTTP_STATUS_BY_ERROR_CODE[body.error!.code as ErrorCode], show).toBe(res.statusCode);
  expect(typeof body.error?.message === 'string' && body.error.message.length > 0, show).toBe(true);
  expect(body.meta?.request_id, show).toBe(res.headers['x-request-id']);
}

/**
 * Deletes run last so that the other routes see live rows; within a group, the app's own order.
 * Ingestion routes (not /v1) are fuzzed too: they face the internet.
 */
const destructive = (r: ServedRoute) => r.method === 'DELETE' || /delete|rotate/.test(r.path);
const fuzzed = [...routes.filter((r) => !destructive(r)), ...routes.filter(destructive)];
const RUNS_PER_ROUTE = Math.ceil(TOTAL_RUNS / fuzzed.length);

describe('the route list', () => {
  it('comes from the app: every route Fastify serves, each one answering to its method', () => {
    expect(fuzzed.length).toBeGreaterThan(40);
    for (const route of fuzzed) expect(t.app.hasRoute({ method: route.method as 'GET', url: route.path }), routeKey(route)).toBe(true);
  });

  it('includes every operation of the OpenAPI document', () => {
    const served = new Set(fuzzed.map((r) => `${r.method} ${openApiPath(r.path)}`));
    const documented = [...operations.keys()].filter((k) => !k.startsWith('HEAD '));
    expect(documented.length).toBeGreaterThan(30);
    for (const key of documented) expect(served, key).toContain(key);
  });
});

describe('fuzzing every route with a valid API key', () => {
  for (const route of fuzzed) {
    const key = routeKey(route);
    it(`${key}: never 5xx, errors in the envelope at their table status`, async () => {
      const operation = operations.get(`${route.method} ${openApiPath(route.path)}`);
      await fc.assert(
        fc.asyncProperty(requestArb(route, operation), (request) => send(request, key)),
        { numRuns: RUNS_PER_ROUTE },
      );
    });
  }

  it(`covered every /v1 route, ${TOTAL_RUNS}+ requests in all`, () => {
    const v1 = fuzzed.filter((r) => r.path.startsWith('/v1/'));
    expect(v1.length).toBeGreaterThan(40);
    for (const route of v1) expect(runsByRoute.get(routeKey(route)) ?? 0, routeKey(route)).toBeGreaterThanOrEqual(RUNS_PER_ROUTE);
    const total = [...runsByRoute.values()].reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThanOrEqual(TOTAL_RUNS);
  });
});

/** Requests with prototype names per route. */
const PROTOTYPE_RUNS_PER_ROUTE = 40;
const prototypeRunsByRoute = new Map<string, number>();

describe('prototype names in every part of every route', () => {
  for (const route of fuzzed) {
    const key = routeKey(route);
    it(`${key}: no prototype changes, never 5xx, errors in the envelope`, async () => {
      const operation = operations.get(`${route.method} ${openApiPath(route.path)}`);
      await fc.assert(
        fc.asyncProperty(prototypeRequestArb(route, operation), async (request) => {
          prototypeRunsByRoute.set(key, (prototypeRunsByRoute.get(key) ?? 0) + 1);
          await send(request, `prototype ${key}`);
        }),
        { numRuns: PROTOTYPE_RUNS_PER_ROUTE },
      );
    });
  }

  it('sent prototype names to every route', () => {
    for (const route of fuzzed) expect(prototypeRunsByRoute.get(routeKey(route)) ?? 0, routeKey(route)).toBeGreaterThanOrEqual(PROTOTYPE_RUNS_PER_ROUTE);
  });
});
