import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7AtTime } from '@hookrelay/shared';
import { searchEndpointMessages } from '../../src/db/message-search.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

/**
 * GET /v1/inbound-endpoints/{id}/messages?q=…: the messages whose body (stored in the database) or a
 * header value holds the text, within a window of at most a week that bounds what is read.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const DAY = 86_400_000;

async function endpoint(): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'search', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id as string, token: res.body.data.secret_token as string };
}

async function ingest(token: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}`, headers: { 'content-type': 'application/json', ...headers }, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id as string;
}

const search = (id: string, query: Record<string, string>) => t.request('GET', `/v1/inbound-endpoints/${id}/messages?${new URLSearchParams(query)}`);
const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((m) => m.id);

describe('q: what a body or a header value holds', () => {
  it('finds the text in a body or in a header value, case-sensitively, newest first, with the other filters', async () => {
    const { id, token } = await endpoint();
    const inBody = await ingest(token, '{"customer":"cus_4Kq9Zx","amount":100}', { 'x-github-event': 'push' });
    const inHeader = await ingest(token, '{"n":1}', { 'x-github-event': 'issues', 'x-request-source': 'billing cus_4Kq9Zx' });
    await ingest(token, '{"customer":"cus_other"}', { 'x-github-event': 'push' });
    // A header's name is not its value.
    await ingest(token, '{"n":2}', { 'cus_4Kq9Zx': 'no' });

    const res = await search(id, { q: 'cus_4Kq9Zx' });
    expect(res.status, res.raw).toBe(200);
    expect(ids(res)).toEqual([inHeader, inBody]);
    expect(ids(await search(id, { q: 'CUS_4KQ9ZX' }))).toEqual([]);
    expect(ids(await search(id, { q: 'cus_4Kq9Zx', event_type: 'push' }))).toEqual([inBody]);
    expect(ids(await search(id, { q: 'cus_4Kq9Zx', answer: '2xx' }))).toEqual([]);
    // UTF-8 text matches the body's bytes.
    const accented = await ingest(token, JSON.stringify({ name: 'Zoë Ünal' }));
    expect(ids(await search(id, { q: 'Zoë Ü' }))).toEqual([accented]);
  });

  it('says in meta what it read: the window, the scan limit, which bodies; no search meta without q', async () => {
    const { id, token } = await endpoint();
    await ingest(token, '{"order":"ord_1"}');
    const before = Date.now();
    const res = await search(id, { q: 'ord_1' });
    expect(res.status, res.raw).toBe(200);
    const meta = res.body.meta.search;
    expect(meta).toMatchObject({ q: 'ord_1', scan_limit: 100_000, scan_limit_reached: false, bodies: 'inline' });
    const end = Date.parse(meta.received_before);
    expect(end).toBeGreaterThanOrEqual(before - 1000);
    expect(end - Date.parse(meta.received_after)).toBe(DAY);
    expect(res.body.meta).toMatchObject({ has_more: false, next_cursor: null });
    expect((await search(id, {})).body.meta.search).toBeUndefined();
  });

  it('searches the last day by default, a given window of up to 7 days, and refuses a longer one naming received_after', async () => {
    const { id, token } = await endpoint();
    const recent = await ingest(token, '{"tag":"window"}');
    const stored = await ingest(token, '{"tag":"window"}');
    // Received two and a half days ago, with the id a message stored then has.
    const receivedAt = Date.now() - 2.5 * DAY;
    const old = uuidv7AtTime(receivedAt);
    await t.db.sql`UPDATE inbound_messages SET id = ${old}, received_at = ${new Date(receivedAt)} WHERE id = ${stored}`;
    expect(ids(await search(id, { q: 'window' }))).toEqual([recent]);
    const since = new Date(Date.now() - 4 * DAY).toISOString();
    expect(ids(await search(id, { q: 'window', received_after: since }))).toEqual([recent, old]);
    const until = new Date(Date.now() - 2 * DAY).toISOString();
    const past = await search(id, { q: 'window', received_before: until });
    expect(ids(past)).toEqual([old]);
    expect(Date.parse(past.body.meta.search.received_after)).toBe(Date.parse(until) - DAY);

    const week = new Date(Date.parse(until) - 7 * DAY).toISOString();
    expect((await search(id, { q: 'window', received_after: week, received_before: until })).status).toBe(200);
    const longer = new Date(Date.parse(until) - 7 * DAY - 1).toISOString();
    expectError(await search(id, { q: 'window', received_after: longer, received_before: until }), 400, 'INVALID_REQUEST', 'query.received_after: must be at most 7 days before received_before');
    expectError(await search(id, { q: 'window', received_after: new Date(Date.now() - 8 * DAY).toISOString() }), 400, 'INVALID_REQUEST', 'query.received_after');
    // A window before the first id there can be (1970) holds nothing.
    const early = await search(id, { q: 'window', received_before: '1969-12-31T23:54:59.999Z' });
    expect(early.status, early.raw).toBe(200);
    expect(ids(early)).toEqual([]);
    // Without q a window of any length lists as before.
    expect((await search(id, { received_after: new Date(Date.now() - 30 * DAY).toISOString() })).status).toBe(200);
  });

  it('pages by the cursor through the matches', async () => {
    const { id, token } = await endpoint();
    const sent: string[] = [];
    for (let i = 0; i < 5; i++) sent.push(await ingest(token, `{"batch":"pager","i":${i}}`));
    await ingest(token, '{"batch":"other"}');
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const res = await search(id, { q: 'pager', limit: '2', ...(cursor === null ? {} : { cursor }) });
      expect(res.status, res.raw).toBe(200);
      seen.push(...ids(res));
      cursor = res.body.meta.next_cursor;
      if (!res.body.meta.has_more) break;
    }
    expect(seen).toEqual([...sent].reverse());
    expect(cursor).toBeNull();
  });

  it('reads only bodies stored in the database: one stored in pieces (above 256 KiB) is found by its headers alone', async () => {
    const { id, token } = await endpoint();
    const marker = `needle_${randomBytes(4).toString('hex')}`;
    const large = await ingest(token, JSON.stringify({ marker, filler: 'x'.repeat(300 * 1024) }), { 'x-trace': 'large-one' });
    expect(ids(await search(id, { q: marker }))).toEqual([]);
    expect(ids(await search(id, { q: 'large-one' }))).toEqual([large]);
  });

  it('refuses an empty text, one too long, and NUL: 400 naming query.q', async () => {
    const { id } = await endpoint();
    expectError(await search(id, { q: '' }), 400, 'INVALID_REQUEST', 'query.q');
    expectError(await search(id, { q: 'x'.repeat(257) }), 400, 'INVALID_REQUEST', 'query.q: must be at most 256 characters');
    expectError(await search(id, { q: 'a\u0000b' }), 400, 'INVALID_REQUEST', 'query.q');
  });
});

describe('the scan limit', () => {
  it('stops after that many messages, matched or not, and the next page goes on from the last one read', async () => {
    const { id, token } = await endpoint();
    const sent: string[] = [];
    for (let i = 0; i < 7; i++) sent.push(await ingest(token, i % 3 === 0 ? '{"hit":true}' : '{"miss":true}'));
    const newest = [...sent].reverse();
    const window = { receivedAfter: new Date(Date.now() - DAY).toISOString(), receivedBefore: new Date(Date.now() + 1000).toISOString() };
    const options = { text: '"hit"', bodies: true, scanLimit: 3, planEachChunk: t.db.backend === 'postgres' };
    // Newest first: sent[6] (hit), sent[5], sent[4]: the scan stops at its third message.
    const first = await searchEndpointMessages(t.db.sql, id, window, options, { limit: 10 });
    expect(first.rows.map((r) => r.id)).toEqual([sent[6]]);
    expect(first).toMatchObject({ hasMore: true, scanLimitReached: true, continueBelow: newest[2] });
    const second = await searchEndpointMessages(t.db.sql, id, window, options, { limit: 10, beforeId: first.continueBelow! });
    expect(second.rows.map((r) => r.id)).toEqual([sent[3]]);
    expect(second).toMatchObject({ hasMore: true, scanLimitReached: true, continueBelow: newest[5] });
    const third = await searchEndpointMessages(t.db.sql, id, window, options, { limit: 10, beforeId: second.continueBelow! });
    expect(third.rows.map((r) => r.id)).toEqual([sent[0]]);
    expect(third).toMatchObject({ hasMore: false, scanLimitReached: false, continueBelow: null });
    // A full page before the limit ends the page there, as any list does.
    const full = await searchEndpointMessages(t.db.sql, id, window, { ...options, scanLimit: 100 }, { limit: 1 });
    expect(full).toMatchObject({ hasMore: true, scanLimitReached: false, continueBelow: sent[6] });
  });
});
