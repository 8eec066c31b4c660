import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

async function createInbound(body: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'event types', mode: 'cli', ...body } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ingest(token: string, body: string, headers: Record<string, string> = {}, path = ''): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}${path}`, headers: { 'content-type': 'application/json', ...headers }, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id as string;
}

async function eventTypeOf(messageId: string): Promise<string | null> {
  const res = await t.request('GET', `/v1/inbound-messages/${messageId}`);
  expect(res.status, res.raw).toBe(200);
  return res.body.data.event_type;
}

describe('event type detection at ingest', () => {
  it('reads each provider where it says the type, and null where there is none', async () => {
    const { id, token } = await createInbound();
    const cases: [string, Record<string, string>, string | null][] = [
      ['{"zen":"x","hook_id":1}', { 'x-github-event': 'ping' }, 'ping'],
      ['{"action":"opened","type":"not-this"}', { 'X-GitHub-Event': 'pull_request' }, 'pull_request'],
      ['{"id":1}', { 'x-shopify-topic': 'orders/create' }, 'orders/create'],
      ['{"id":"evt_1","object":"event","type":"payment_intent.succeeded","data":{"object":{}}}', { 'stripe-signature': 't=1,v1=x' }, 'payment_intent.succeeded'],
      ['{"type":"invoice.paid","timestamp":"2026-01-01T00:00:00Z","data":{}}', { 'webhook-id': 'msg_1' }, 'invoice.paid'],
      ['{"type":"event_callback","event":{"type":"app_mention","text":"hi"}}', {}, 'app_mention'],
      ['{"type":"url_verification","challenge":"abc","token":"t"}', {}, 'url_verification'],
      ['{"type":"block_actions","event":{"type":"ignored"}}', { 'x-slack-signature': 'v0=00' }, 'ignored'],
      ['{"type":"event_callback","event":{"type":42}}', {}, 'event_callback'],
      ['{"event":{"type":"x"}}', {}, null],
      ['{"type":7}', {}, null],
      ['[{"type":"array"}]', {}, null],
      ['type=form&x=1', { 'content-type': 'application/x-www-form-urlencoded' }, null],
      ['{not json', {}, null],
      ['', {}, null],
    ];
    const ids: string[] = [];
    for (const [body, headers] of cases) ids.push(await ingest(token, body, headers));
    for (const [i, [, , expected]] of cases.entries()) expect(await eventTypeOf(ids[i]!), cases[i]![0]).toBe(expected);
    // The listen page carries it too.
    const page = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    expect(page.body.data.map((m: { event_type: string | null }) => m.event_type)).toEqual(cases.map((c) => c[2]));
  });

  it('uses the endpoint’s own rule instead: a body path or a header', async () => {
    const byBody = await createInbound({ event_type_source: 'body', event_type_path: 'meta.kind' });
    expect(await eventTypeOf(await ingest(byBody.token, '{"type":"provider","meta":{"kind":"custom.kind"}}'))).toBe('custom.kind');
    expect(await eventTypeOf(await ingest(byBody.token, '{"type":"provider"}', { 'x-github-event': 'push' }))).toBeNull();

    const byHeader = await createInbound({ event_type_source: 'header', event_type_path: 'X-Event-Name' });
    expect(await eventTypeOf(await ingest(byHeader.token, '{"type":"provider"}', { 'x-event-name': 'order.paid' }))).toBe('order.paid');
    expect(await eventTypeOf(await ingest(byHeader.token, '{"type":"provider"}'))).toBeNull();

    // Cleared with "": back to provider detection, at once for ingestion (the settings cache is dropped).
    const cleared = await t.request('PATCH', `/v1/inbound-endpoints/${byHeader.id}`, { body: { event_type_source: '' } });
    expect(cleared.status, cleared.raw).toBe(200);
    const record = await t.request('GET', `/v1/inbound-endpoints/${byHeader.id}`);
    expect(record.body.data).toMatchObject({ event_type_source: null, event_type_path: null });
    expect(await eventTypeOf(await ingest(byHeader.token, '{"type":"provider"}', { 'x-event-name': 'order.paid' }))).toBe('provider');
  });

  it('stores which checks passed', async () => {
    const plain = await createInbound();
    const plainMessage = await t.request('GET', `/v1/inbound-messages/${await ingest(plain.token, '{}')}`);
    expect(plainMessage.body.data.verified).toEqual([]);

    const secret = 'github-secret';
    const signed = await createInbound({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: secret, verify_ip_allowlist: true, allowed_cidrs: ['127.0.0.0/8'] });
    const body = '{"zen":"ok"}';
    const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const id = await ingest(signed.token, body, { 'x-hub-signature-256': signature, 'x-github-event': 'ping' });
    const message = await t.request('GET', `/v1/inbound-messages/${id}`);
    expect(message.body.data).toMatchObject({ event_type: 'ping', verified: ['hmac', 'ip_allowlist'] });
  });
});

describe('event type settings of inbound endpoints', () => {
  it('are validated as on pull endpoints, on create and PATCH', async () => {
    expectError(await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'x', mode: 'cli', event_type_source: 'body' } }), 400, 'INVALID_REQUEST', 'event_type_path');
    expectError(await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'x', mode: 'cli', event_type_path: 'type' } }), 400, 'INVALID_REQUEST', 'event_type_source');
    expectError(
      await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'x', mode: 'cli', event_type_source: 'header', event_type_path: 'bad header' } }),
      400,
      'INVALID_REQUEST',
      'event_type_path',
    );
    expectError(
      await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'x', mode: 'cli', event_type_source: 'query', event_type_path: 'a' } }),
      400,
      'INVALID_REQUEST',
      'event_type_source',
    );

    // A JSON key may hold a space; a header name may not.
    const { id } = await createInbound({ event_type_source: 'body', event_type_path: 'data.event kind' });
    const created = await t.request('GET', `/v1/inbound-endpoints/${id}`);
    expect(created.body.data).toMatchObject({ event_type_source: 'body', event_type_path: 'data.event kind' });
    // A new source keeps the stored path, which must then suit it.
    expectError(await t.request('PATCH', `/v1/inbound-endpoints/${id}`, { body: { event_type_source: 'header' } }), 400, 'INVALID_REQUEST', 'body.event_type_path');
    expectError(await t.request('PATCH', `/v1/inbound-endpoints/${id}`, { body: { event_type_path: '' } }), 400, 'INVALID_REQUEST', 'event_type_path');
    const patched = await t.request('PATCH', `/v1/inbound-endpoints/${id}`, { body: { event_type_path: 'kind' } });
    expect(patched.status, patched.raw).toBe(200);
    expect((await t.request('GET', `/v1/inbound-endpoints/${id}`)).body.data).toMatchObject({ event_type_source: 'body', event_type_path: 'kind' });

    const detected = await createInbound();
    expectError(await t.request('PATCH', `/v1/inbound-endpoints/${detected.id}`, { body: { event_type_path: 'kind' } }), 400, 'INVALID_REQUEST', 'body.event_type_source');
    expect((await t.request('GET', `/v1/inbound-endpoints/${detected.id}`)).body.data).toMatchObject({ event_type_source: null, event_type_path: null });
  });
});
