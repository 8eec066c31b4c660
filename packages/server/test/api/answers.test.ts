import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { deletedInboundPayloadsSweeper, runSweeperOnce } from '../../src/sweepers/runner.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

/** The local app's answer as CLI listeners report it (result reports over HTTP and the stream). */
let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

async function message(): Promise<{ endpointId: string; messageId: string }> {
  const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'answers', mode: 'cli' } });
  expect(created.status, created.raw).toBe(201);
  const res = await t.app.inject({ method: 'POST', url: `/in/${created.body.data.secret_token}`, payload: '{"n":1}', headers: { 'content-type': 'application/json' } });
  expect(res.statusCode).toBe(200);
  return { endpointId: created.body.data.id, messageId: res.json().data.message_id };
}

const report = (messageId: string, body: Record<string, unknown>) =>
  t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { message_id: messageId, status: 200, latency_ms: 5, error: null, ...body } });

async function answers(messageId: string): Promise<{ listener: string; status: number | null; response_headers: [string, string][]; response_body: string | null; response_body_truncated: boolean }[]> {
  const res = await t.request('GET', `/v1/inbound-messages/${messageId}`);
  expect(res.status, res.raw).toBe(200);
  return res.body.data.answers;
}

const b64 = (text: string | Buffer) => Buffer.from(text).toString('base64');

describe('answers of result reports', () => {
  it('stores headers in order and the body bytes, and returns them with the message and the report', async () => {
    const { messageId } = await message();
    const body = Buffer.from([0x00, 0xff, 0x7b, 0x0a]);
    const res = await report(messageId, {
      status: 201,
      listener: 'ci',
      response_headers: [['Set-Cookie', 'a=1'], ['content-type', 'application/octet-stream'], ['set-cookie', 'b=2']],
      response_body: b64(body),
      response_body_truncated: true,
    });
    expect(res.status, res.raw).toBe(200);
    const expected = {
      listener: 'ci',
      status: 201,
      latency_ms: 5,
      error: null,
      response_headers: [['Set-Cookie', 'a=1'], ['content-type', 'application/octet-stream'], ['set-cookie', 'b=2']],
      response_body: b64(body),
      response_body_truncated: true,
      resigned: false,
      answered_at: expect.any(String),
    };
    expect(res.body.data.answers).toEqual([expected]);
    expect(await answers(messageId)).toEqual([expected]);
  });

  it('keeps one answer per listener, oldest listener first; a later answer replaces the listener’s own', async () => {
    const { messageId } = await message();
    // An old CLI's report: the `default` listener, without content.
    expect((await t.request('POST', `/v1/inbound-messages/${messageId}/result`, { body: { message_id: messageId, status: 500, latency_ms: 3, error: null } })).status).toBe(200);
    expect((await report(messageId, { listener: '2', response_body: b64('first') })).status).toBe(200);
    expect((await report(messageId, { status: 404, listener: 'default', response_body: b64('later') })).status).toBe(200);
    const list = await answers(messageId);
    expect(list.map((a) => [a.listener, a.status, a.response_body])).toEqual([
      ['default', 404, b64('later')],
      ['2', 200, b64('first')],
    ]);
    expect(list[0]).toMatchObject({ error: 'HTTP 404', response_headers: [], response_body_truncated: false });
    // The message-level result is the latest report's, as before.
    const record = await t.request('GET', `/v1/inbound-messages/${messageId}`);
    expect(record.body.data).toMatchObject({ status: 'failed_permanent', response_status: 404, attempt_count: 3 });
  });

  it('keeps the 20 most recently answering listeners of a message', async () => {
    const { messageId } = await message();
    for (let i = 0; i < 23; i++) expect((await report(messageId, { listener: `l${i}` })).status).toBe(200);
    // l0..l2 were dropped for l20..l22; l0 answering again drops l3, and l23 then drops l4.
    expect((await report(messageId, { listener: 'l0', status: 202 })).status).toBe(200);
    expect((await report(messageId, { listener: 'l23' })).status).toBe(200);
    const listeners = (await answers(messageId)).map((a) => a.listener);
    expect(listeners).toEqual([...Array.from({ length: 18 }, (_, i) => `l${i + 5}`), 'l0', 'l23']);
    // A listener that answers again keeps its place.
    expect((await report(messageId, { listener: 'l5', status: 500 })).status).toBe(200);
    expect((await answers(messageId)).map((a) => [a.listener, a.status]).slice(0, 2)).toEqual([['l5', 500], ['l6', 200]]);
  });

  it('hides what the app sent back once the message is deleted, and the sweeper removes it', async () => {
    const { messageId } = await message();
    const { messageId: kept } = await message();
    for (const id of [messageId, kept]) {
      expect((await report(id, { listener: 'ci', response_headers: [['x-a', '1']], response_body: b64('secret') })).status).toBe(200);
    }
    expect((await t.request('DELETE', `/v1/inbound-messages/${messageId}`)).status).toBe(200);
    expect(await answers(messageId)).toMatchObject([{ listener: 'ci', status: 200, response_headers: [], response_body: null }]);
    await runSweeperOnce(t.db, deletedInboundPayloadsSweeper, { payloadStore: t.app.services.payloadStore });
    const rows = await t.db.sql<{ message_id: string; response_headers: unknown; response_body: Uint8Array | null }>`
      SELECT message_id, response_headers, response_body FROM inbound_message_answers WHERE message_id IN (${messageId}::uuid, ${kept}::uuid)`;
    const byId = new Map(rows.map((r) => [r.message_id, r]));
    expect(byId.get(messageId)).toMatchObject({ response_headers: [], response_body: null });
    expect(Buffer.from(byId.get(kept)!.response_body!).toString()).toBe('secret');
  });

  it('takes the answer from stream result frames too', async () => {
    const { endpointId, messageId } = await message();
    const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream?after=00000000-0000-7000-8000-000000000000`, {
      headers: { authorization: `Bearer ${t.main.apiKey}` },
    });
    await new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        if ((JSON.parse(data.toString()) as { type: string }).type === 'message') resolve();
      });
      socket.once('error', reject);
    });
    const big = Buffer.alloc(64 * 1024, 0x61);
    socket.send(
      JSON.stringify({ type: 'result', message_id: messageId, status: 200, latency_ms: 9, error: null, listener: 'ws', response_headers: [['x-a', '1']], response_body: b64(big) }),
    );
    let list: Awaited<ReturnType<typeof answers>> = [];
    for (let i = 0; i < 100 && list.length === 0; i++) {
      list = await answers(messageId);
      if (list.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    socket.close();
    expect(list).toMatchObject([{ listener: 'ws', status: 200, response_headers: [['x-a', '1']], response_body: b64(big), response_body_truncated: false }]);
  });

  it('refuses answers beyond their bounds, naming the field', async () => {
    const { messageId } = await message();
    expectError(await report(messageId, { response_body: b64(Buffer.alloc(64 * 1024 + 1)) }), 400, 'INVALID_REQUEST', 'response_body');
    expectError(await report(messageId, { response_body: 'not base64!' }), 400, 'INVALID_REQUEST', 'response_body');
    expectError(await report(messageId, { response_headers: Array.from({ length: 101 }, () => ['a', 'b']) }), 400, 'INVALID_REQUEST', 'response_headers');
    expectError(await report(messageId, { response_headers: [['x-big', 'v'.repeat(16 * 1024)]] }), 400, 'INVALID_REQUEST', 'response_headers');
    expectError(await report(messageId, { response_headers: [['only-a-name']] }), 400, 'INVALID_REQUEST', 'response_headers');
    expectError(await report(messageId, { listener: 'x'.repeat(101) }), 400, 'INVALID_REQUEST', 'listener');
    expectError(await report(messageId, { listener: '' }), 400, 'INVALID_REQUEST', 'listener');
    expectError(await report(messageId, { response_body_truncated: 'yes' }), 400, 'INVALID_REQUEST', 'response_body_truncated');
    expect(await answers(messageId)).toEqual([]);
    // A NUL, which PostgreSQL text cannot hold, is replaced rather than failing the report.
    expect((await report(messageId, { response_headers: [['x-nul', 'a\u0000b']] })).status).toBe(200);
    expect((await answers(messageId))[0]!.response_headers).toEqual([['x-nul', 'a\ufffdb']]);
  });
});
