import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LISTEN_PAGE_SIZE } from '@hookrelay/shared';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { readCliMessagesAfter } from '../../src/stream/cli-message.js';
import { listenFilterOf } from '../../src/stream/listen-filter.js';
import { DatabasePayloadStore, type PayloadStore } from '../../src/storage/payload-store.js';

/** Listen pages and stream reads are bounded by body bytes as well as by count. */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

async function createCli(): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'page bytes', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function send(token: string, size: number, path = '/'): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}${path}`, headers: { 'content-type': 'application/octet-stream' }, payload: Buffer.alloc(size, size & 0xff) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id as string;
}

/** The database's payloads served the way an object store serves them: one call for a page, by key. */
function objectStoreLike(): PayloadStore {
  const database = new DatabasePayloadStore();
  return {
    kind: 'object',
    putMany: (sql, items) => database.putMany(sql, items),
    get: (sql, key) => database.get(sql, key),
    getMany: (sql, keys) => database.getMany(sql, keys),
    deleteMany: (sql, keys) => database.deleteMany(sql, keys),
  };
}

describe('a read stops once the bodies before a message reach the byte budget', () => {
  it.each([
    ['the database store', () => new DatabasePayloadStore() as PayloadStore],
    ['an object store', objectStoreLike],
  ])('with %s: pages of 1000-byte bodies under a 2500-byte budget hold 3, then the rest', async (_name, makeStore) => {
    const store = makeStore();
    const { id, token } = await createCli();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await send(token, 1000));
    const first = await readCliMessagesAfter(store, t.db.sql, id, null, LISTEN_PAGE_SIZE, true, { maxBodyBytes: 2500 });
    expect(first.messages.map((m) => m.message_id)).toEqual(ids.slice(0, 3));
    expect(first.messages.map((m) => Buffer.from((m as { body: string }).body, 'base64').length)).toEqual([1000, 1000, 1000]);
    expect(first).toMatchObject({ lastId: ids[2], cursor: ids[2], more: true });
    const second = await readCliMessagesAfter(store, t.db.sql, id, first.cursor, LISTEN_PAGE_SIZE, true, { maxBodyBytes: 2500 });
    expect(second.messages.map((m) => m.message_id)).toEqual(ids.slice(3));
    expect(second.more).toBe(false);
  });

  it('always holds the first message, however large, and tells that more wait', async () => {
    const { id, token } = await createCli();
    const big = await send(token, 5000);
    const small = await send(token, 10);
    const first = await readCliMessagesAfter(new DatabasePayloadStore(), t.db.sql, id, null, LISTEN_PAGE_SIZE, true, { maxBodyBytes: 1000 });
    expect(first.messages.map((m) => m.message_id)).toEqual([big]);
    expect(first.more).toBe(true);
    const second = await readCliMessagesAfter(new DatabasePayloadStore(), t.db.sql, id, first.cursor, LISTEN_PAGE_SIZE, true, { maxBodyBytes: 1000 });
    expect(second.messages.map((m) => m.message_id)).toEqual([small]);
    expect(second.more).toBe(false);
  });

  it('with a filter, counts only the matches and leaves the cursor before the first match not read', async () => {
    const { id, token } = await createCli();
    const a1 = await send(token, 1000, '/a');
    await send(token, 1000, '/b');
    const a2 = await send(token, 1000, '/a');
    const a3 = await send(token, 1000, '/a');
    const filter = listenFilterOf({ path: '/a' });
    const first = await readCliMessagesAfter(new DatabasePayloadStore(), t.db.sql, id, null, LISTEN_PAGE_SIZE, true, { filter, maxBodyBytes: 2000 });
    expect(first.messages.map((m) => m.message_id)).toEqual([a1, a2]);
    expect(first).toMatchObject({ cursor: a2, more: true });
    const second = await readCliMessagesAfter(new DatabasePayloadStore(), t.db.sql, id, first.cursor, LISTEN_PAGE_SIZE, true, { filter, maxBodyBytes: 2000 });
    expect(second.messages.map((m) => m.message_id)).toEqual([a3]);
    expect(second.more).toBe(false);
  });
});

describe('GET /v1/inbound-endpoints/{id}/listen', () => {
  it('says has_more on a full page and not at the end', async () => {
    const { id, token } = await createCli();
    for (let i = 0; i < LISTEN_PAGE_SIZE + 1; i++) await send(token, 1);
    const first = await t.request('GET', `/v1/inbound-endpoints/${id}/listen`);
    expect(first.body.data).toHaveLength(LISTEN_PAGE_SIZE);
    expect(first.body.meta.has_more).toBe(true);
    const second = await t.request('GET', `/v1/inbound-endpoints/${id}/listen?after=${first.body.meta.cursor}`);
    expect(second.body.data).toHaveLength(1);
    expect(second.body.meta.has_more).toBe(false);
  });
});
