import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

/**
 * Names that input chooses and the server writes or reads back: a sample's edit paths, the header
 * names of a webhook, option bags that a security decision reads. One request writing through
 * `__proto__` would change every object of the process, and with it every project's API; the
 * prototype guard of this suite (test/setup/prototype-guard.ts) fails any test that leaves
 * Object.prototype, Array.prototype or Function.prototype changed.
 */
let t: TestApp;
let github: string;
beforeAll(async () => {
  t = await createTestApp();
  const res = await t.request('POST', '/v1/inbound-endpoints', {
    body: { name: 'pollution', mode: 'cli', verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'pollution-secret' },
  });
  expect(res.status, res.raw).toBe(201);
  github = res.body.data.id;
});
afterAll(async () => {
  await t?.close();
});

const storedMessages = async () => (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_messages`)[0]!.n;

describe('sample edit paths through the prototype', () => {
  it('__proto__.polluted: 400 naming body.set.0.path, nothing stored, another project unaffected', async () => {
    const other = await t.createProject('bystander');
    const before = await storedMessages();
    const res = await t.request('POST', `/v1/inbound-endpoints/${github}/samples`, {
      body: { provider: 'github', event: 'ping', set: [{ path: '__proto__.polluted', value: 'yes' }] },
    });
    expectError(res, 400, 'INVALID_REQUEST', 'body.set.0.path: "__proto__.polluted" names "__proto__", which is refused');
    expect(res.body.error.details).toEqual([{ path: 'body.set.0.path', message: expect.stringContaining('__proto__') }]);
    expect(await storedMessages()).toBe(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const list = await t.request('GET', '/v1/endpoints', { apiKey: other.apiKey });
    expect(list.status, list.raw).toBe(200);
  });

  it.each([
    ['constructor.prototype.polluted', 'constructor'],
    ['__proto__.acceptsStreamTicket', '__proto__'],
    ['a.b.__proto__', '__proto__'],
    ['repository.constructor', 'constructor'],
    ['prototype', 'prototype'],
  ])('%s → 400 naming the edit and the segment %s', async (path, segment) => {
    const res = await t.request('POST', `/v1/inbound-endpoints/${github}/samples`, {
      body: { provider: 'github', event: 'ping', set: [{ path: 'zen', value: 'fine' }, { path, value: true }] },
    });
    expectError(res, 400, 'INVALID_REQUEST', `body.set.1.path: "${path}" names "${segment}"`);
    expect((Object.prototype as Record<string, unknown>).acceptsStreamTicket).toBeUndefined();
  });

  it('names of inherited members are ordinary fields of the sample', async () => {
    const res = await t.request('POST', `/v1/inbound-endpoints/${github}/samples`, {
      body: { provider: 'github', event: 'ping', set: [{ path: 'toString', value: 'a' }, { path: 'hook.hasOwnProperty.x', value: 1 }, { path: 'valueOf', value: null }] },
    });
    expect(res.status, res.raw).toBe(201);
    const message = await t.request('GET', `/v1/inbound-messages/${res.body.data.message_id}?body_encoding=base64`);
    const sent = JSON.parse(Buffer.from(message.body.data.body, 'base64').toString('utf8')) as Record<string, unknown>;
    expect(Object.hasOwn(sent, 'toString') && sent.toString).toBe('a');
    expect(Object.hasOwn(sent, 'valueOf') && sent.valueOf).toBeNull();
    expect((sent.hook as Record<string, unknown>).hasOwnProperty).toEqual({ x: 1 });
  });
});

describe('option bags a security decision reads', () => {
  it('a stream ticket authenticates only the routes that take one, even with acceptsStreamTicket inherited', async () => {
    const ticket = (await t.request('POST', '/v1/stream-tickets')).body.data.ticket as string;
    const proto = Object.prototype as Record<string, unknown>;
    proto.acceptsStreamTicket = true;
    try {
      const res = await t.app.inject({ method: 'GET', url: `/v1/whoami?ticket=${encodeURIComponent(ticket)}` });
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json().error.code).toBe('UNAUTHORIZED');
    } finally {
      delete proto.acceptsStreamTicket;
    }
  });
});

describe('header names a sender chooses', () => {
  it('constructor and toString headers are kept and shown as received', async () => {
    const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'header names', mode: 'cli' } });
    const token = created.body.data.secret_token as string;
    const ingest = await t.app.inject({
      method: 'POST',
      url: `/in/${token}`,
      headers: { 'content-type': 'application/json', constructor: 'c', tostring: 't' },
      payload: '{}',
    });
    expect(ingest.statusCode, ingest.body).toBe(200);
    const res = await t.request('GET', `/v1/inbound-messages/${ingest.json().data.message_id}`);
    expect(res.status, res.raw).toBe(200);
    const headers = res.body.data.headers as Record<string, string>;
    expect(Object.hasOwn(headers, 'constructor') && headers.constructor).toBe('c');
    expect(Object.hasOwn(headers, 'tostring') && headers.tostring).toBe('t');
    expect(res.body.data.raw_headers).toEqual(expect.arrayContaining([['constructor', 'c'], ['tostring', 't']]));
  });
});
