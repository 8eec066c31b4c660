import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { INLINE_BODY_MAX_BYTES, LISTEN_PAGE_SIZE, StreamServerFrame } from '@hookrelay/shared';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { readCliMessagesAfter } from '../../src/stream/cli-message.js';
import { listenFilterOf } from '../../src/stream/listen-filter.js';
import { DatabasePayloadStore, type PayloadStore } from '../../src/storage/payload-store.js';

/**
 * A message above INLINE_BODY_MAX_BYTES goes out of listen pages and stream frames by reference
 * (`body_url`, no body); a smaller one as before, its body inline.
 */

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
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'large bodies', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

const bytesOf = (size: number): Buffer => Buffer.from(Array.from({ length: size }, (_, i) => (i * 7 + 3) & 0xff));
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

async function send(token: string, body: Buffer | string, contentType = 'application/octet-stream', path = ''): Promise<string> {
  const res = await fetch(`${baseUrl}/in/${token}${path}`, { method: 'POST', body, headers: { 'content-type': contentType } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { message_id: string } }).data.message_id;
}

interface Message {
  message_id: string;
  size_bytes: number;
  payload_sha256: string;
  body?: unknown;
  body_encoding?: string;
  body_error?: string;
  body_url?: string;
}

/** The fields that carry a message's body, and only those. */
const bodyFields = (m: Message) => ({
  ...(m.body === undefined ? {} : { body: m.body }),
  ...(m.body_encoding === undefined ? {} : { body_encoding: m.body_encoding }),
  ...(m.body_error === undefined ? {} : { body_error: m.body_error }),
  ...(m.body_url === undefined ? {} : { body_url: m.body_url }),
});

async function download(path: string): Promise<{ status: number; bytes: Buffer; sha: string | null }> {
  const res = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${t.main.apiKey}` } });
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()), sha: res.headers.get('x-payload-sha256') };
}

describe('GET /v1/inbound-endpoints/{id}/listen', () => {
  it('names the body of a message above the limit (body_url, no body) and keeps smaller ones inline', async () => {
    const { id, token } = await createCli();
    const large = bytesOf(INLINE_BODY_MAX_BYTES + 1);
    const atLimit = bytesOf(INLINE_BODY_MAX_BYTES);
    const smallId = await send(token, '{"small":true}', 'application/json');
    const atLimitId = await send(token, atLimit);
    const largeId = await send(token, large);

    const page = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?body_encoding=base64`);
    expect(page.status, page.raw).toBe(200);
    const [small, limit, big] = page.body.data as Message[];
    expect(bodyFields(small!)).toEqual({ body: Buffer.from('{"small":true}').toString('base64'), body_encoding: 'base64' });
    expect(bodyFields(limit!)).toEqual({ body: atLimit.toString('base64'), body_encoding: 'base64' });
    expect(big).toMatchObject({ message_id: largeId, size_bytes: large.length, payload_sha256: sha256(large) });
    expect(bodyFields(big!)).toEqual({ body_url: `/v1/inbound-messages/${largeId}/body` });
    expect([small!.message_id, limit!.message_id]).toEqual([smallId, atLimitId]);

    // Without base64 the small JSON one is a value, as before; the large one is still a reference.
    const plain = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    expect(bodyFields(plain.body.data[0] as Message)).toEqual({ body: { small: true } });
    expect(bodyFields(plain.body.data[2] as Message)).toEqual({ body_url: `/v1/inbound-messages/${largeId}/body` });

    const fetched = await download(big!.body_url!);
    expect(fetched.status).toBe(200);
    expect(fetched.sha).toBe(sha256(large));
    expect(fetched.bytes.equals(large)).toBe(true);
  });

  it('counts a message sent by reference as no body bytes: a page of them is bounded by count only', async () => {
    const { id, token } = await createCli();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await send(token, bytesOf(INLINE_BODY_MAX_BYTES + 10 + i)));
    const small = await send(token, bytesOf(1000));
    const later = await send(token, bytesOf(1000));
    // A budget smaller than one large body: by reference they cost nothing, the small bodies do.
    for (const store of [new DatabasePayloadStore() as PayloadStore, recordingStore().store]) {
      const read = await readCliMessagesAfter(store, t.db.sql, id, null, LISTEN_PAGE_SIZE, true, { maxBodyBytes: 1500 });
      expect(read.messages.map((m) => m.message_id)).toEqual([...ids, small, later]);
      const filtered = await readCliMessagesAfter(store, t.db.sql, id, null, LISTEN_PAGE_SIZE, true, { filter: listenFilterOf({ path: '/' }), maxBodyBytes: 1500 });
      expect(filtered.messages.map((m) => m.message_id)).toEqual([...ids, small, later]);
    }
  });

  it('does not read a large payload from the store at all', async () => {
    const { id, token } = await createCli();
    const largeId = await send(token, bytesOf(INLINE_BODY_MAX_BYTES + 1));
    const smallId = await send(token, bytesOf(10));
    const recording = recordingStore();
    const read = await readCliMessagesAfter(recording.store, t.db.sql, id, null, LISTEN_PAGE_SIZE, true);
    expect(read.messages.map((m) => [m.message_id, m.body_url !== undefined])).toEqual([
      [largeId, true],
      [smallId, false],
    ]);
    expect(recording.keysRead).toHaveLength(1);
    expect(recording.bytesRead).toBe(10);
  });
});

/** The database's payloads served as an object store serves them (one call, by key), recording what is read. */
function recordingStore(): { store: PayloadStore; keysRead: string[]; bytesRead: number } {
  const database = new DatabasePayloadStore();
  const record = { keysRead: [] as string[], bytesRead: 0 };
  const store: PayloadStore = {
    kind: 'object',
    putMany: (sql, items) => database.putMany(sql, items),
    get: (sql, key) => database.get(sql, key),
    getMany: async (sql, keys) => {
      const found = await database.getMany(sql, keys);
      record.keysRead.push(...keys);
      for (const bytes of found.values()) record.bytesRead += bytes.length;
      return found;
    },
    deleteMany: (sql, keys) => database.deleteMany(sql, keys),
  };
  return {
    store,
    get keysRead() {
      return record.keysRead;
    },
    get bytesRead() {
      return record.bytesRead;
    },
  };
}

interface Frame {
  type: string;
  replay?: boolean;
  message?: Message;
}

async function openStream(endpointId: string, after?: string) {
  const url = `${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream${after ? `?after=${after}` : ''}`;
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${t.main.apiKey}` } });
  const frames: Frame[] = [];
  socket.on('message', (data) => {
    const frame: unknown = JSON.parse(data.toString());
    StreamServerFrame.parse(frame);
    frames.push(frame as Frame);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const until = async (predicate: () => boolean) => {
    for (let i = 0; i < 200 && !predicate(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(predicate(), JSON.stringify(frames.map((f) => f.type))).toBe(true);
  };
  await until(() => frames.some((f) => f.type === 'ready'));
  return { socket, messages: () => frames.filter((f) => f.type === 'message'), until };
}

describe('GET /v1/inbound-endpoints/{id}/stream', () => {
  it('sends a large message by reference in the backlog, live and as a replay, and a small one inline', async () => {
    const { id, token } = await createCli();
    const backlog = bytesOf(INLINE_BODY_MAX_BYTES + 100);
    const backlogId = await send(token, backlog);
    const stream = await openStream(id, '00000000-0000-7000-8000-000000000000');
    try {
      await stream.until(() => stream.messages().length === 1);
      const live = bytesOf(INLINE_BODY_MAX_BYTES * 2);
      const liveId = await send(token, live);
      const smallId = await send(token, '{"n":1}', 'application/json');
      await stream.until(() => stream.messages().length === 3);
      const replay = await t.request('POST', `/v1/inbound-messages/${liveId}/replay`);
      expect(replay.status, replay.raw).toBe(200);
      await stream.until(() => stream.messages().length === 4);

      const [first, second, third, fourth] = stream.messages();
      expect(first!.message).toMatchObject({ message_id: backlogId, size_bytes: backlog.length, payload_sha256: sha256(backlog) });
      expect(bodyFields(first!.message!)).toEqual({ body_url: `/v1/inbound-messages/${backlogId}/body` });
      expect(second!.message).toMatchObject({ message_id: liveId, size_bytes: live.length, payload_sha256: sha256(live) });
      expect(bodyFields(second!.message!)).toEqual({ body_url: `/v1/inbound-messages/${liveId}/body` });
      expect(third!.message!.message_id).toBe(smallId);
      expect(bodyFields(third!.message!)).toEqual({ body: Buffer.from('{"n":1}').toString('base64'), body_encoding: 'base64' });
      expect(fourth).toMatchObject({ replay: true, message: { message_id: liveId } });
      expect(bodyFields(fourth!.message!)).toEqual({ body_url: `/v1/inbound-messages/${liveId}/body` });

      const fetched = await download(second!.message!.body_url!);
      expect(fetched.bytes.equals(live)).toBe(true);
    } finally {
      stream.socket.close();
    }
  });
});
