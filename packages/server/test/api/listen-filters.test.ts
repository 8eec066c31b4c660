import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { StreamServerFrame } from '@hookrelay/shared';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

/** `events` and `path` filters of listen pages and streams: skipped messages still move the cursor. */
let t: TestApp;
let baseUrl: string;
beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

async function createCli(): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'filters', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function send(token: string, eventType: string | null, path = '/'): Promise<string> {
  const res = await fetch(`${baseUrl}/in/${token}${path === '/' ? '' : path}`, {
    method: 'POST',
    body: '{"n":1}',
    headers: { 'content-type': 'application/json', ...(eventType ? { 'x-github-event': eventType } : {}) },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { message_id: string } }).data.message_id;
}

interface Frame {
  type: string;
  cursor?: string | null;
  replay?: boolean;
  message?: { message_id: string; event_type: string | null; path: string };
}

async function openStream(endpointId: string, query: string) {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream${query}`, {
    headers: { authorization: `Bearer ${t.main.apiKey}` },
  });
  const frames: Frame[] = [];
  socket.on('message', (data) => {
    const frame: unknown = JSON.parse(data.toString());
    StreamServerFrame.parse(frame); // every frame the server sends is one of the shared protocol's
    frames.push(frame as Frame);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    socket.once('error', reject);
  });
  const until = async (predicate: () => boolean, what: string) => {
    for (let i = 0; i < 200 && !predicate(); i++) await new Promise((r) => setTimeout(r, 25));
    if (!predicate()) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames)}`);
  };
  await until(() => frames.some((f) => f.type === 'ready'), 'ready');
  return {
    frames,
    until,
    messageIds: () => frames.filter((f) => f.type === 'message' && !f.replay).map((f) => f.message!.message_id),
    lastCursor: () => frames.filter((f) => f.type === 'cursor').at(-1)?.cursor,
    close: () => socket.close(),
  };
}

const START = '00000000-0000-7000-8000-000000000000';

describe('listen page filters', () => {
  it('returns only matching messages; meta.cursor passes the skipped ones', async () => {
    const { id, token } = await createCli();
    const push = await send(token, 'push', '/github/hooks');
    const ping = await send(token, 'ping', '/github/hooks');
    const pr = await send(token, 'pull_request', '/github');
    const stripe = await send(token, 'checkout.session.completed', '/stripe');
    const none = await send(token, null, '/github/x');

    const events = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?events=push,pull_request`);
    expect(events.status, events.raw).toBe(200);
    expect(events.body.data.map((m: { message_id: string }) => m.message_id)).toEqual([push, pr]);
    expect(events.body.meta).toEqual({ request_id: expect.any(String), next_cursor: pr, cursor: none, has_more: false });

    const glob = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?events=${encodeURIComponent('checkout.*')}`);
    expect(glob.body.data.map((m: { message_id: string }) => m.message_id)).toEqual([stripe]);

    // `*` in a path glob crosses `/`; `/github/*` does not match `/github` itself.
    const path = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?path=${encodeURIComponent('/github/*')}`);
    expect(path.body.data.map((m: { message_id: string }) => m.message_id)).toEqual([push, ping, none]);

    const both = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?path=${encodeURIComponent('/github/*')}&events=p*`);
    expect(both.body.data.map((m: { message_id: string }) => m.message_id)).toEqual([push, ping]);
    expect(both.body.meta).toMatchObject({ next_cursor: ping, cursor: none });

    // From the cursor on, nothing is read again; an empty page with nothing new has cursor null.
    const after = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?events=push&after=${none}`);
    expect(after.body).toMatchObject({ data: [], meta: { next_cursor: null, cursor: null } });
    const skippedOnly = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?events=nothing&after=${push}`);
    expect(skippedOnly.body).toMatchObject({ data: [], meta: { next_cursor: null, cursor: none } });

    // Without a filter, cursor is the page's last message.
    const plain = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    expect(plain.body.meta).toMatchObject({ next_cursor: none, cursor: none });
    expect(plain.body.data.map((m: { event_type: string | null }) => m.event_type)).toEqual(['push', 'ping', 'pull_request', 'checkout.session.completed', null]);
  });

  it('pages through many skipped messages: a client following meta.cursor gets each match once', async () => {
    const { id, token } = await createCli();
    const matching: string[] = [];
    for (let i = 0; i < 130; i++) {
      const messageId = await send(token, i % 2 === 0 ? 'push' : 'ping');
      if (i % 2 === 0) matching.push(messageId);
    }
    const got: string[] = [];
    let after: string | null = null;
    for (let calls = 0; calls < 10; calls++) {
      const res = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?events=push${after ? `&after=${after}` : ''}`);
      expect(res.body.data.length).toBeLessThanOrEqual(50);
      got.push(...res.body.data.map((m: { message_id: string }) => m.message_id));
      if (res.body.meta.cursor === null) break;
      after = res.body.meta.cursor;
    }
    expect(got).toEqual(matching);
  });

  it('refuses an empty filter, naming it', async () => {
    const { id } = await createCli();
    expectError(await t.request('GET', `/v1/inbound-endpoints/${id}/listen?events=,`), 400, 'INVALID_REQUEST', 'events');
    expectError(await t.request('GET', `/v1/inbound-endpoints/${id}/listen?path=`), 400, 'INVALID_REQUEST', 'path');
  });
});

describe('stream filters', () => {
  it('catches up with only the matches and ends the catch-up on a cursor frame past the skipped ones', async () => {
    const { id, token } = await createCli();
    const push = await send(token, 'push');
    const ping = await send(token, 'ping');
    const stream = await openStream(id, `?after=${START}&events=push`);
    await stream.until(() => stream.lastCursor() === ping, 'the cursor frame');
    expect(stream.messageIds()).toEqual([push]);
    expect(stream.frames.map((f) => f.type)).toEqual(['ready', 'message', 'cursor']);
    stream.close();
  });

  it('sends live matches, skips the rest, and tells the cursor of a skipped run', async () => {
    const { id, token } = await createCli();
    const stream = await openStream(id, '?events=push&path=/gh*');
    const sent: { id: string; match: boolean }[] = [];
    for (let i = 0; i < 20; i++) {
      const match = i % 2 === 0;
      sent.push({ id: await send(token, match ? 'push' : 'ping', i % 4 === 0 ? '/gh/a' : '/gh'), match });
    }
    const expected = sent.filter((s) => s.match).map((s) => s.id);
    const last = sent.at(-1)!.id;
    await stream.until(() => stream.messageIds().length === expected.length && stream.lastCursor() === last, 'the matches and the cursor');
    expect(stream.messageIds()).toEqual(expected);
    expect(stream.frames.filter((f) => f.type === 'message').every((f) => f.message!.event_type === 'push')).toBe(true);
    // Cursor frames only ever move forward, each past a message frame.
    const cursors = stream.frames.filter((f) => f.type === 'cursor').map((f) => f.cursor!);
    expect([...cursors].sort()).toEqual(cursors);
    stream.close();
  });

  it('a restarted filtered listener resumes from its cursor: each match once, nothing replayed', async () => {
    const { id, token } = await createCli();
    const matching: string[] = [];
    const first = await openStream(id, `?after=${START}&events=push`);
    for (let i = 0; i < 10; i++) {
      const messageId = await send(token, i % 2 === 0 ? 'push' : 'ping');
      if (i % 2 === 0) matching.push(messageId);
    }
    await first.until(() => first.messageIds().length === 5, 'five matches');
    await first.until(() => first.frames.at(-1)?.type === 'cursor', 'the cursor of the skipped tail');
    const saved = first.lastCursor()!;
    first.close();
    for (let i = 10; i < 20; i++) {
      const messageId = await send(token, i % 2 === 0 ? 'push' : 'ping');
      if (i % 2 === 0) matching.push(messageId);
    }
    const second = await openStream(id, `?after=${saved}&events=push`);
    await second.until(() => second.messageIds().length === 5 && second.lastCursor() !== undefined, 'the rest');
    expect([...first.messageIds(), ...second.messageIds()]).toEqual(matching);
    second.close();
  });

  it('pushes a replay only to the streams whose filter it matches', async () => {
    const { id, token } = await createCli();
    const ping = await send(token, 'ping');
    const pushes = await openStream(id, '?events=push');
    const pings = await openStream(id, '?events=ping');
    expect((await t.request('POST', `/v1/inbound-messages/${ping}/replay`)).status).toBe(200);
    await pings.until(() => pings.frames.some((f) => f.replay), 'the replay');
    // The replay to the other stream would have been sent by now.
    await new Promise((r) => setTimeout(r, 200));
    expect(pushes.frames.some((f) => f.replay)).toBe(false);
    pushes.close();
    pings.close();
  });
});
