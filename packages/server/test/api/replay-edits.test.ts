import { createHash, createHmac, randomBytes } from 'node:crypto';
import { verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { Receiver, settled, waitForMessage } from '../helpers/receiver.js';

/**
 * POST /v1/inbound-messages/{id}/replay with edits: a new message of the same endpoint, the
 * original with its body and headers edited, signed by the server (`resign`) or without the
 * original's signatures, stored and sent as any webhook.
 */
let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({ worker: true, env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile } });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const STANDARD_SECRET = `whsec_${Buffer.from('standard-webhooks-secret-32bytes').toString('base64')}`;

async function endpoint(settings: Record<string, unknown> = {}, apiKey?: string): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'edited replays', mode: 'cli', ...settings }, ...(apiKey ? { apiKey } : {}) });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id as string, token: res.body.data.secret_token as string };
}

/** A webhook at the endpoint's ingest URL; its message id. */
async function ingest(token: string, body: string | Buffer, headers: Record<string, string>, path = ''): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}${path}`, headers, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id as string;
}

interface Stored {
  id: string;
  content_type: string;
  size_bytes: number;
  payload_sha256: string;
  event_type: string | null;
  path: string;
  raw_headers: [string, string][];
  body: string;
  replay_of: string | null;
  edited: boolean;
  signed: boolean | null;
  verified: string[];
}

async function stored(id: string): Promise<Stored> {
  const res = await t.request('GET', `/v1/inbound-messages/${id}?body_encoding=base64`);
  expect(res.status, res.raw).toBe(200);
  return res.body.data as Stored;
}

const bytesOf = (message: Stored): Buffer => Buffer.from(message.body, 'base64');
const headerOf = (message: Stored, name: string): string | undefined => message.raw_headers.find(([n]) => n.toLowerCase() === name)?.[1];
const replay = (id: string, body?: unknown, apiKey?: string) => t.request('POST', `/v1/inbound-messages/${id}/replay`, { ...(body === undefined ? {} : { body }), ...(apiKey ? { apiKey } : {}) });

/** The copy sent again to the endpoint's own ingest URL: its verification judges the signature. */
async function reingest(token: string, copy: Stored) {
  const headers = Object.fromEntries(copy.raw_headers.filter(([name]) => !['host', 'content-length'].includes(name.toLowerCase())));
  return t.app.inject({ method: 'POST', url: `/in/${token}${copy.path === '/' ? '' : copy.path}`, headers, payload: bytesOf(copy) });
}

describe('a replay without edits', () => {
  it('answers as before (200, the message itself, replay_count) and stores no message', async () => {
    const { id, token } = await endpoint();
    const original = await ingest(token, '{"a":1}', { 'content-type': 'application/json' });
    const plain = await replay(original);
    expect(plain.status, plain.raw).toBe(200);
    expect(plain.body.data).toEqual({ message_id: original, replay_count: 1, status: 'queued' });
    // Empty edits are no edits.
    const empty = await replay(original, { set: [], headers: {} });
    expect(empty.status, empty.raw).toBe(200);
    expect(empty.body.data).toEqual({ message_id: original, replay_count: 2, status: 'queued' });
    const list = await t.request('GET', `/v1/inbound-endpoints/${id}/messages`);
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([original]);
  });
});

describe('an edited replay', () => {
  it('set: a new message with the JSON body edited, replay_of and edited on its record, its row and its listen message; the original as it was', async () => {
    const { id, token } = await endpoint();
    const body = '{\n  "action": "opened",\n  "pull_request": { "number": 7, "labels": ["bug"] }\n}';
    const original = await ingest(token, body, { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'user-agent': 'GitHub-Hookshot/1' }, '/github');
    const res = await replay(original, {
      set: [
        { path: 'action', value: 'closed' },
        { path: 'pull_request.labels.1', value: 'urgent' },
        { path: 'pull_request.merged', value: true },
        { path: 'toString', value: 'a field like any other' },
      ],
      headers: { 'X-Replay-Test': 'yes', 'User-Agent': null },
    });
    expect(res.status, res.raw).toBe(201);
    const answer = res.body.data;
    expect(answer).toEqual({ message_id: expect.any(String), replay_count: 0, status: 'queued', replay_of: original, edited: true, signed: false });
    expect(answer.message_id).not.toBe(original);

    const copy = await stored(answer.message_id);
    expect(JSON.parse(bytesOf(copy).toString('utf8'))).toEqual({
      action: 'closed',
      pull_request: { number: 7, labels: ['bug', 'urgent'], merged: true },
      toString: 'a field like any other',
    });
    expect(copy).toMatchObject({ replay_of: original, edited: true, signed: false, verified: [], path: '/github', event_type: 'pull_request', content_type: 'application/json' });
    expect(copy.payload_sha256).toBe(createHash('sha256').update(bytesOf(copy)).digest('hex'));
    expect(copy.size_bytes).toBe(bytesOf(copy).length);
    expect(headerOf(copy, 'x-replay-test')).toBe('yes');
    expect(headerOf(copy, 'user-agent')).toBeUndefined();
    expect(headerOf(copy, 'content-length')).toBe(String(copy.size_bytes));

    const before = await stored(original);
    expect(bytesOf(before).toString('utf8')).toBe(body);
    expect(before).toMatchObject({ replay_of: null, edited: false, signed: null });
    expect(headerOf(before, 'user-agent')).toBe('GitHub-Hookshot/1');

    const rows = await t.request('GET', `/v1/inbound-endpoints/${id}/messages`);
    expect(rows.body.data.map((m: { id: string; replay_of: string | null; edited: boolean }) => [m.id, m.replay_of, m.edited])).toEqual([
      [copy.id, original, true],
      [original, null, false],
    ]);
    const page = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?after=${original}`);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0]).toMatchObject({ message_id: copy.id, replay_of: original, edited: true, signed: false });
    const first = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    for (const key of ['replay_of', 'edited', 'signed']) expect(first.body.data[0]).not.toHaveProperty(key);
  });

  it('body: the new body whole, a Content-Type edit its content type, the event type read again from the edited headers', async () => {
    const { token } = await endpoint();
    const original = await ingest(token, '{"zen":"x"}', { 'content-type': 'application/json', 'x-github-event': 'push' });
    const res = await replay(original, { body: 'a=1&b=two', headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'X-GitHub-Event': 'issues' } });
    expect(res.status, res.raw).toBe(201);
    const copy = await stored(res.body.data.message_id);
    expect(bytesOf(copy).toString()).toBe('a=1&b=two');
    expect(copy).toMatchObject({ content_type: 'application/x-www-form-urlencoded', event_type: 'issues', size_bytes: 9 });
    // The edited header keeps the place of the line it replaces, and its spelling.
    expect(copy.raw_headers.filter(([name]) => name.toLowerCase() === 'x-github-event')).toEqual([['x-github-event', 'issues']]);
  });

  it('without resign: every signature header of the original is dropped, the rest kept; with headers, what the edit sets stays', async () => {
    const { token } = await endpoint({ hmac_scheme: 'hex', hmac_header_name: 'X-Custom-Signature' });
    const original = await ingest(token, '{"type":"thing.happened"}', {
      'content-type': 'application/json',
      'x-hub-signature-256': 'sha256=00',
      'x-hub-signature': 'sha1=00',
      'stripe-signature': 't=1,v1=00',
      'x-slack-signature': 'v0=00',
      'x-slack-request-timestamp': '1700000000',
      'x-shopify-hmac-sha256': 'AA==',
      'webhook-id': 'msg_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': 'v1,AA==',
      'x-custom-signature': 'abc',
      'x-kept': 'kept',
    });
    const res = await replay(original, { set: [{ path: 'type', value: 'thing.changed' }] });
    expect(res.status, res.raw).toBe(201);
    const copy = await stored(res.body.data.message_id);
    const names = copy.raw_headers.map(([name]) => name.toLowerCase());
    for (const signature of ['x-hub-signature-256', 'x-hub-signature', 'stripe-signature', 'x-slack-signature', 'x-shopify-hmac-sha256', 'webhook-signature', 'x-custom-signature']) {
      expect(names).not.toContain(signature);
    }
    for (const kept of ['x-slack-request-timestamp', 'webhook-id', 'webhook-timestamp', 'x-kept']) expect(names).toContain(kept);
    expect(copy.signed).toBe(false);

    // A signature the edit itself sets goes as set (a bad signature is a test case too).
    const bad = await replay(original, { body: '{}', headers: { 'Stripe-Signature': 't=1,v1=bad' } });
    expect(headerOf(await stored(bad.body.data.message_id), 'stripe-signature')).toBe('t=1,v1=bad');
  });

  it('a body stored in pieces (above 256 KiB) is copied as it is read; re-signed, the endpoint’s own check takes the copy', async () => {
    const secret = 'gh-large-secret';
    const { token } = await endpoint({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: secret });
    const large = Buffer.from(JSON.stringify({ filler: randomBytes(200 * 1024).toString('hex') }));
    const signature = `sha256=${createHmac('sha256', secret).update(large).digest('hex')}`;
    const original = await ingest(token, large, { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signature });
    const res = await replay(original, { headers: { 'X-GitHub-Event': 'ping' }, resign: true });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data).toMatchObject({ replay_of: original, edited: true, signed: true });
    const copy = await stored(res.body.data.message_id);
    expect(bytesOf(copy).equals(large)).toBe(true);
    expect(copy).toMatchObject({ size_bytes: large.length, payload_sha256: createHash('sha256').update(large).digest('hex'), event_type: 'ping', signed: true });
    // Signed anew over the same bytes: the same signature as the sender's.
    expect(headerOf(copy, 'x-hub-signature-256')).toBe(signature);
    // In a blob of its own, as a large webhook's body is, not in the database's payloads table.
    const [row] = await t.db.sql<{ payload_key: string }>`SELECT payload_key FROM inbound_messages WHERE id = ${copy.id}`;
    expect(row!.payload_key).toMatch(/^blob\//u);
    const again = await reingest(token, copy);
    expect(again.statusCode, again.body).toBe(200);
  });
});

describe('resign: the copy signed with the endpoint’s stored secret, in its scheme', () => {
  const edits = { set: [{ path: 'hookrelay_edited', value: true }], resign: true };

  /** An original from the samples route (signed with the stored secret), and its edited, re-signed copy. */
  async function signedCopy(settings: Record<string, unknown>, provider: string, event: string) {
    const { token, id } = await endpoint({ verify_hmac: true, ...settings });
    const sample = await t.request('POST', `/v1/inbound-endpoints/${id}/samples`, { body: { provider, event } });
    expect(sample.status, sample.raw).toBe(201);
    const res = await replay(sample.body.data.message_id, edits);
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data).toMatchObject({ edited: true, signed: true });
    const copy = await stored(res.body.data.message_id);
    expect(JSON.parse(bytesOf(copy).toString('utf8')).hookrelay_edited).toBe(true);
    expect(copy.signed).toBe(true);
    // The endpoint's own verification takes it; so would the provider's.
    const again = await reingest(token, copy);
    expect(again.statusCode, again.body).toBe(200);
    return copy;
  }

  it('GitHub: verified by @octokit/webhooks-methods', async () => {
    const copy = await signedCopy({ hmac_scheme: 'github', hmac_secret: 'gh-secret' }, 'github', 'push');
    expect(await githubVerify('gh-secret', bytesOf(copy).toString('utf8'), headerOf(copy, 'x-hub-signature-256')!)).toBe(true);
  });

  it('Stripe: verified by its library, with a fresh timestamp', async () => {
    const copy = await signedCopy({ hmac_scheme: 'stripe', hmac_secret: 'whsec_stripe_replay' }, 'stripe', 'invoice.paid');
    const event = new Stripe('sk_test_unused').webhooks.constructEvent(bytesOf(copy), headerOf(copy, 'stripe-signature')!, 'whsec_stripe_replay');
    expect(event.type).toBe('invoice.paid');
  });

  it('Slack: v0 over the new X-Slack-Request-Timestamp', async () => {
    const copy = await signedCopy({ hmac_scheme: 'slack', hmac_secret: 'slack-secret' }, 'slack', 'event_callback');
    const timestamp = headerOf(copy, 'x-slack-request-timestamp')!;
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(60);
    expect(headerOf(copy, 'x-slack-signature')).toBe(`v0=${createHmac('sha256', 'slack-secret').update(`v0:${timestamp}:`).update(bytesOf(copy)).digest('hex')}`);
  });

  it('Shopify (base64 in X-Shopify-Hmac-Sha256)', async () => {
    const copy = await signedCopy({ hmac_scheme: 'base64', hmac_header_name: 'X-Shopify-Hmac-Sha256', hmac_secret: 'shop-secret' }, 'shopify', 'orders/create');
    expect(headerOf(copy, 'x-shopify-hmac-sha256')).toBe(createHmac('sha256', 'shop-secret').update(bytesOf(copy)).digest('base64'));
  });

  it('Standard Webhooks: verified by the standardwebhooks package, the original webhook-id kept', async () => {
    const copy = await signedCopy({ hmac_scheme: 'standard_webhooks', hmac_secret: STANDARD_SECRET }, 'standard_webhooks', 'user.created');
    const headers = Object.fromEntries(copy.raw_headers.map(([name, value]) => [name.toLowerCase(), value]));
    expect(new Webhook(STANDARD_SECRET).verify(bytesOf(copy).toString('utf8'), headers)).toMatchObject({ hookrelay_edited: true });
  });

  it('hex with a timestamp header, a signature line the original lacked added', async () => {
    const secret = 'hex-secret';
    const { token } = await endpoint({ hmac_scheme: 'hex', hmac_header_name: 'X-Signature', timestamp_header_name: 'X-Timestamp', hmac_secret: secret });
    const original = await ingest(token, '{"n":1}', { 'content-type': 'application/json' });
    const res = await replay(original, { body: '{"n":2}', resign: true });
    expect(res.status, res.raw).toBe(201);
    const copy = await stored(res.body.data.message_id);
    const timestamp = headerOf(copy, 'x-timestamp')!;
    expect(headerOf(copy, 'x-signature')).toBe(createHmac('sha256', secret).update(`${timestamp}.{"n":2}`).digest('hex'));
  });
});

describe('refusals', () => {
  it('body with set, resign without an edit, unknown fields: 400 naming the field', async () => {
    const { token } = await endpoint();
    const original = await ingest(token, '{"a":1}', { 'content-type': 'application/json' });
    expectError(await replay(original, { body: '{}', set: [{ path: 'a', value: 2 }] }), 400, 'INVALID_REQUEST', 'body.set: must not be given together with body');
    expectError(await replay(original, { resign: true }), 400, 'INVALID_REQUEST', 'body.resign: needs an edit');
    expectError(await replay(original, { edits: [] }), 400, 'INVALID_REQUEST', 'body.edits');
  });

  it('set paths through __proto__, constructor or prototype are refused naming the edit; nothing is polluted', async () => {
    const { token } = await endpoint();
    const original = await ingest(token, '{"a":{}}', { 'content-type': 'application/json' });
    for (const path of ['__proto__.polluted', 'a.constructor.prototype.polluted', 'a.prototype', 'constructor']) {
      const res = await replay(original, { set: [{ path: 'a.ok', value: 1 }, { path, value: 'yes' }] });
      const segment = path.split('.').find((key) => ['__proto__', 'constructor', 'prototype'].includes(key))!;
      expectError(res, 400, 'INVALID_REQUEST', `body.set.1.path: "${path}" names "${segment}", which is refused`);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const list = await t.request('GET', `/v1/inbound-messages/${original}`);
    expect(list.body.data.replay_count).toBe(0);
  });

  it('set on a body that is not a JSON object, or through a scalar: 400 body.set', async () => {
    const { token } = await endpoint();
    const text = await ingest(token, 'plain text', { 'content-type': 'text/plain' });
    expectError(await replay(text, { set: [{ path: 'a', value: 1 }] }), 400, 'INVALID_REQUEST', "body.set: the message's body is not JSON");
    const array = await ingest(token, '[1,2]', { 'content-type': 'application/json' });
    expectError(await replay(array, { set: [{ path: '0', value: 1 }] }), 400, 'INVALID_REQUEST', "body.set: the message's body is not a JSON object");
    const json = await ingest(token, '{"a":5}', { 'content-type': 'application/json' });
    expectError(await replay(json, { set: [{ path: 'a.b', value: 1 }] }), 400, 'INVALID_REQUEST', 'body.set: "a.b": a is a number, not an object');
  });

  it('header edits: a name that is no header name, framing and hop-by-hop headers, CR or LF in a value, a name twice: 400 naming the header', async () => {
    const { token } = await endpoint();
    const original = await ingest(token, '{}', { 'content-type': 'application/json' });
    expectError(await replay(original, { headers: { 'Bad Name': 'x' } }), 400, 'INVALID_REQUEST', 'body.headers.Bad Name: must be an HTTP header name');
    expectError(await replay(original, { headers: { 'Content-Length': '5' } }), 400, 'INVALID_REQUEST', 'body.headers.Content-Length: cannot be edited');
    expectError(await replay(original, { headers: { Connection: 'close' } }), 400, 'INVALID_REQUEST', 'body.headers.Connection: cannot be edited');
    expectError(await replay(original, { headers: { 'X-A': 'one\r\nX-Injected: two' } }), 400, 'INVALID_REQUEST', 'body.headers.X-A: must not contain CR, LF or NUL');
    expectError(await replay(original, { headers: { 'X-A': '1', 'x-a': '2' } }), 400, 'INVALID_REQUEST', 'body.headers.x-a: is the header X-A again');
    expectError(await replay(original, { headers: { 'X-A': 5 } }), 400, 'INVALID_REQUEST', 'body.headers.X-A: must be a string');
  });

  it('resign at an endpoint without a secret to sign with: 400 body.resign', async () => {
    const { token } = await endpoint({ hmac_scheme: 'github' });
    const original = await ingest(token, '{}', { 'content-type': 'application/json' });
    expectError(await replay(original, { body: '{"x":1}', resign: true }), 400, 'INVALID_REQUEST', 'body.resign: the endpoint holds no HMAC secret');
  });

  it('unknown, another project’s and deleted messages: 404; a paused endpoint: 503 with Retry-After; a copy over the endpoint’s limit: 413', async () => {
    const { id, token } = await endpoint({ max_body_bytes: 64 });
    const original = await ingest(token, '{"a":1}', { 'content-type': 'application/json' });
    const edit = { body: '{"a":2}' };
    expectError(await replay('0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71', edit), 404, 'NOT_FOUND');
    const other = await t.createProject();
    expectError(await replay(original, edit, other.apiKey), 404, 'NOT_FOUND');
    expectError(await replay(original, { body: 'x'.repeat(65) }), 413, 'PAYLOAD_TOO_LARGE', "the edited copy's body of 65 bytes is larger than the endpoint's limit of 64 bytes");
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/pause`)).status).toBe(200);
    const paused = await replay(original, edit);
    expectError(paused, 503, 'ENDPOINT_PAUSED');
    expect(paused.headers['retry-after']).toBe('60');
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/resume`)).status).toBe(200);
    expect((await t.request('DELETE', `/v1/inbound-messages/${original}`)).status).toBe(200);
    expectError(await replay(original, edit), 404, 'NOT_FOUND');
    const list = await t.request('GET', `/v1/inbound-endpoints/${id}/messages`);
    expect(list.body.data).toEqual([]);
  });
});

describe('forward mode', () => {
  it('the copy is delivered to the endpoint’s URL like any message, with its own body', async () => {
    const route = receiver.route();
    const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'forward edited', url: route.url } });
    expect(res.status, res.raw).toBe(201);
    const token = res.body.data.secret_token as string;
    const original = await ingest(token, '{"amount":100}', { 'content-type': 'application/json' });
    await waitForMessage(t, original, settled, { inbound: true });
    const copy = await replay(original, { set: [{ path: 'amount', value: 5 }], headers: { 'X-Edited': '1' } });
    expect(copy.status, copy.raw).toBe(201);
    const received = await receiver.waitFor(route.path, 2);
    expect(received[1]!.body.toString()).toBe('{"amount":5}');
    expect(received[1]!.headers['x-edited']).toBe('1');
    const delivered = await waitForMessage(t, copy.body.data.message_id, settled, { inbound: true });
    expect(delivered).toMatchObject({ status: 'succeeded', replay_of: original, edited: true });
  });
});
