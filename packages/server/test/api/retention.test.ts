import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuidv7, uuidv7AtTime } from '@hookrelay/shared';
import { insertAttempts } from '../../src/db/deliveries.js';
import { messageRetentionSweeper } from '../../src/sweepers/retention.js';
import { runSweeperOnce, startSweepers } from '../../src/sweepers/runner.js';
import type { Sweeper } from '../../src/sweepers/sweeper.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/database.js';

/**
 * Message retention (docs/operating.md, Message retention): outbound and inbound messages older
 * than their endpoint's retention_days, or the server's default, are removed for good with their
 * attempts, answers and payloads, in bounded batches; a message still being delivered stays.
 * Runs are made at a `now` in the future, which is what the messages' age is measured against.
 */

const DAY = 86_400_000;
const MIB = 1024 * 1024;

let t: TestApp;
let sweeper: Sweeper;
beforeAll(async () => {
  t = await createTestApp();
  sweeper = retentionOf(t);
});
afterAll(async () => {
  await t?.close();
});

/** The sweeper as the worker role builds it, from the app's configuration. */
function retentionOf(app: TestApp): Sweeper {
  const { config } = app.app.services;
  return messageRetentionSweeper({ defaultDays: config.messageRetentionDays, batch: config.messageRetentionBatchSize });
}

/** Runs until a run removes nothing (the last one takes the listed payloads of the one before). */
async function drain(now: number, app = t, retention = sweeper): Promise<number> {
  let removed = 0;
  for (let run = 0; run < 50; run++) {
    const n = await runSweeperOnce(app.db, retention, app.app.services, new Date(now));
    if (!n) return removed;
    removed += n;
  }
  throw new Error('the sweeper did not come to an end in 50 runs');
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function inboundEndpoint(settings: Record<string, unknown> = {}, app = t): Promise<{ id: string; token: string }> {
  const res = await app.request('POST', '/v1/inbound-endpoints', { body: { name: 'retention', mode: 'cli', ...settings } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ingest(token: string, body = '{"n":1}', app = t): Promise<string> {
  const res = await app.app.inject({ method: 'POST', url: `/in/${token}`, payload: body, headers: { 'content-type': 'application/json' } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.message_id;
}

async function outboundEndpoint(settings: Record<string, unknown> = {}, app = t): Promise<string> {
  const res = await app.request('POST', '/v1/endpoints', { body: { url: 'https://example.com/retention', ...settings } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id;
}

async function send(endpointId: string, app = t): Promise<string> {
  const res = await app.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { n: 1 } } });
  expect(res.status, res.raw).toBe(202);
  return res.body.data.message_id;
}

/** What a delivery that succeeded leaves: one attempt, the message succeeded, its job gone. */
async function settle(messageId: string, app = t): Promise<void> {
  await insertAttempts(app.db.sql, [
    { id: newUuidv7(), messageId, attemptNumber: 1, startedAt: new Date(), responseStatus: 200, latencyMs: 3, error: null, responseBody: 'ok', workerId: 'test' },
  ]);
  await app.db.sql`UPDATE outbound_messages SET status = 'succeeded', attempt_count = 1, delivered_at = now() WHERE id = ${messageId}`;
  await app.db.sql`DELETE FROM delivery_jobs WHERE message_id = ${messageId}`;
}

/** A listener's report of the app's answer: an attempt row and an answer row with a body. */
async function report(messageId: string): Promise<void> {
  const res = await t.request('POST', `/v1/inbound-messages/${messageId}/result`, {
    body: { message_id: messageId, status: 200, latency_ms: 4, error: null, listener: 'ci', response_headers: [['x-a', '1']], response_body: Buffer.from('answer').toString('base64') },
  });
  expect(res.status, res.raw).toBe(200);
}

const bornAt = async (table: 'inbound' | 'outbound', id: string): Promise<number> => {
  const rows =
    table === 'inbound'
      ? await t.db.sql<{ at: Date }>`SELECT received_at AS at FROM inbound_messages WHERE id = ${id}`
      : await t.db.sql<{ at: Date }>`SELECT created_at AS at FROM outbound_messages WHERE id = ${id}`;
  return rows[0]!.at.getTime();
};

/** Of these messages, those still stored, with what belongs to them. */
async function stored(ids: readonly string[], app = t) {
  const list = [...ids];
  const sql = app.db.sql;
  const ofIds = async (rows: Promise<{ id: string }[]>) => (await rows).map((r) => r.id).sort();
  return {
    inbound: await ofIds(sql<{ id: string }>`SELECT id FROM inbound_messages WHERE id = ANY(${list}::uuid[])`),
    outbound: await ofIds(sql<{ id: string }>`SELECT id FROM outbound_messages WHERE id = ANY(${list}::uuid[])`),
    attempts: await ofIds(sql<{ id: string }>`SELECT DISTINCT message_id AS id FROM delivery_attempts WHERE message_id = ANY(${list}::uuid[])`),
    answers: await ofIds(sql<{ id: string }>`SELECT DISTINCT message_id AS id FROM inbound_message_answers WHERE message_id = ANY(${list}::uuid[])`),
  };
}

async function payloadRows(keys: readonly string[], app = t): Promise<string[]> {
  return (await app.db.sql<{ key: string }>`SELECT key FROM payloads WHERE key = ANY(${[...keys]}::text[]) ORDER BY key`).map((r) => r.key);
}

async function payloadKeyOf(table: 'inbound' | 'outbound', id: string, app = t): Promise<string> {
  const rows =
    table === 'inbound'
      ? await app.db.sql<{ key: string }>`SELECT payload_key AS key FROM inbound_messages WHERE id = ${id}`
      : await app.db.sql<{ key: string }>`SELECT payload_key AS key FROM outbound_messages WHERE id = ${id}`;
  return rows[0]!.key;
}

async function purgedCount(kind: 'inbound' | 'outbound', app = t): Promise<number> {
  const res = await app.request('GET', '/metrics', { apiKey: null });
  expect(res.status).toBe(200);
  const match = new RegExp(`^hookrelay_messages_purged_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(res.raw);
  expect(match, res.raw).not.toBeNull();
  return Number(match![1]);
}

const sorted = (ids: readonly string[]) => [...ids].sort();

describe('the default retention (HOOKRELAY_MESSAGE_RETENTION_DAYS, 30 days)', () => {
  it('removes exactly the messages older than it, with their attempts, answers and payload rows, and counts them', async () => {
    expect(t.app.services.config.messageRetentionDays).toBe(30);
    const inbound = await inboundEndpoint();
    const unread = await ingest(inbound.token);
    const answered = await ingest(inbound.token);
    await report(answered);
    const outbound = await outboundEndpoint();
    const delivered = await send(outbound);
    await settle(delivered);
    // Younger by a few milliseconds: the cutoff falls between the two groups.
    await pause(20);
    const youngIn = await ingest(inbound.token);
    await report(youngIn);
    const youngOut = await send(outbound);
    await settle(youngOut);
    const keys = [await payloadKeyOf('inbound', unread), await payloadKeyOf('inbound', answered), await payloadKeyOf('outbound', delivered)];
    const youngKeys = [await payloadKeyOf('inbound', youngIn), await payloadKeyOf('outbound', youngOut)];
    expect(await payloadRows([...keys, ...youngKeys])).toEqual(sorted([...keys, ...youngKeys]));
    const counted = { inbound: await purgedCount('inbound'), outbound: await purgedCount('outbound') };

    // When the first of them is exactly 30 days old: nothing is older, nothing goes.
    const first = Math.min(await bornAt('inbound', unread), await bornAt('inbound', answered), await bornAt('outbound', delivered));
    await drain(first + 30 * DAY);
    const all = [unread, answered, delivered, youngIn, youngOut];
    expect(await stored(all)).toEqual({
      inbound: sorted([unread, answered, youngIn]),
      outbound: sorted([delivered, youngOut]),
      attempts: sorted([answered, delivered, youngIn, youngOut]),
      answers: sorted([answered, youngIn]),
    });

    // At the younger ones' 30 days exactly: the older ones are past it, the younger ones not yet.
    const cutoff = Math.min(await bornAt('inbound', youngIn), await bornAt('outbound', youngOut));
    await drain(cutoff + 30 * DAY);
    expect(await stored(all)).toEqual({ inbound: [youngIn], outbound: [youngOut], attempts: sorted([youngIn, youngOut]), answers: [youngIn] });
    expect(await payloadRows([...keys, ...youngKeys])).toEqual(sorted(youngKeys));
    expect(await t.db.sql`SELECT key FROM payload_removals`).toEqual([]);
    expect((await t.request('GET', `/v1/inbound-messages/${unread}`)).status).toBe(404);
    expect((await t.request('GET', `/v1/messages/${delivered}`)).status).toBe(404);
    expect(await purgedCount('inbound')).toBe(counted.inbound + 2);
    expect(await purgedCount('outbound')).toBe(counted.outbound + 1);
  });

  it('removes soft-deleted messages past it too', async () => {
    const inbound = await inboundEndpoint();
    const id = await ingest(inbound.token);
    expect((await t.request('DELETE', `/v1/inbound-messages/${id}`)).status).toBe(200);
    await drain((await bornAt('inbound', id)) + 31 * DAY);
    expect((await stored([id])).inbound).toEqual([]);
  });
});

describe("an endpoint's retention_days", () => {
  it('overrides the default both ways, and a change applies from the next run', async () => {
    const short = await inboundEndpoint({ retention_days: 1 });
    const long = await inboundEndpoint({ retention_days: 60 });
    const plain = await inboundEndpoint();
    const shortOut = await outboundEndpoint({ retention_days: 2 });
    const longOut = await outboundEndpoint({ retention_days: 90 });
    const ids = {
      short: await ingest(short.token),
      long: await ingest(long.token),
      plain: await ingest(plain.token),
      shortOut: await send(shortOut),
      longOut: await send(longOut),
    };
    await settle(ids.shortOut);
    await settle(ids.longOut);
    const start = Date.now();
    const left = async () => {
      const s = await stored(Object.values(ids));
      return sorted([...s.inbound, ...s.outbound]);
    };

    await drain(start + 3 * DAY);
    expect(await left()).toEqual(sorted([ids.long, ids.plain, ids.longOut]));
    await drain(start + 31 * DAY);
    expect(await left()).toEqual(sorted([ids.long, ids.longOut]));

    expect((await t.request('PATCH', `/v1/inbound-endpoints/${long.id}`, { body: { retention_days: 30 } })).status).toBe(200);
    await drain(start + 31 * DAY);
    expect(await left()).toEqual([ids.longOut]);
    // null: back to the default of 30 days, which this message is past.
    expect((await t.request('PATCH', `/v1/endpoints/${longOut}`, { body: { retention_days: null } })).status).toBe(200);
    await drain(start + 31 * DAY);
    expect(await left()).toEqual([]);
  });

  it('applies where the default is 0 (kept forever), which keeps the others', async () => {
    const forever = await createTestApp({ env: { HOOKRELAY_MESSAGE_RETENTION_DAYS: '0' } });
    try {
      const retention = retentionOf(forever);
      const plain = await inboundEndpoint({}, forever);
      const own = await inboundEndpoint({ retention_days: 3 }, forever);
      const plainOut = await outboundEndpoint({}, forever);
      const ids = [await ingest(plain.token, '{}', forever), await ingest(own.token, '{}', forever), await send(plainOut, forever)];
      await settle(ids[2]!, forever);
      await drain(Date.now() + 20 * 365 * DAY, forever, retention);
      const left = await stored(ids, forever);
      expect(left.inbound).toEqual([ids[0]]);
      expect(left.outbound).toEqual([ids[2]]);
    } finally {
      await forever.close();
    }
  });
});

describe('messages of an event', () => {
  it('go by their own endpoint’s retention; the event keeps its payload, which its other messages deliver', async () => {
    const short = await outboundEndpoint({ owner_id: 'retention-fanout', retention_days: 1 });
    const long = await outboundEndpoint({ owner_id: 'retention-fanout', retention_days: 60 });
    const res = await t.request('POST', '/v1/events', { body: { event_type: 'order.paid', owner_id: 'retention-fanout', payload: { order: 7 } } });
    expect(res.status, res.raw).toBe(202);
    const event = res.body.data;
    const byEndpoint = new Map<string, string>(event.messages.map((m: { endpoint_id: string; message_id: string }) => [m.endpoint_id, m.message_id]));
    const [gone, kept] = [byEndpoint.get(short)!, byEndpoint.get(long)!];
    for (const id of [gone, kept]) await settle(id);
    const key = await payloadKeyOf('outbound', gone);
    expect(await payloadKeyOf('outbound', kept)).toBe(key);

    await drain((await bornAt('outbound', gone)) + 2 * DAY);
    expect((await stored([gone, kept])).outbound).toEqual([kept]);
    expect(await payloadRows([key])).toEqual([key]);
    expect(await t.db.sql`SELECT key FROM payload_removals WHERE key = ${key}`).toEqual([]);
    const message = await t.request('GET', `/v1/messages/${kept}`);
    expect(message.status, message.raw).toBe(200);
    expect(message.body.data.payload).toEqual({ order: 7 });
    expect((await t.request('GET', `/v1/events/${event.event_id}`)).status).toBe(200);
  });
});

describe('a message still being delivered', () => {
  it('stays, whatever its age, until its delivery has settled: due, leased, waiting for a retry, held by a paused endpoint, forwarded', async () => {
    const endpoint = await outboundEndpoint();
    const paused = await outboundEndpoint();
    const due = await send(endpoint);
    const leased = await send(endpoint);
    const retrying = await send(endpoint);
    expect((await t.request('POST', `/v1/endpoints/${paused}/pause`)).status).toBe(200);
    const held = await send(paused);
    const sql = t.db.sql;
    await sql`UPDATE delivery_jobs SET locked_by = 'w', locked_until = now() + interval '30 seconds', lease_id = ${newUuidv7()} WHERE message_id = ${leased}`;
    await sql`UPDATE outbound_messages SET status = 'delivering' WHERE id = ${leased}`;
    await sql`UPDATE delivery_jobs SET run_at = now() + interval '10 hours' WHERE message_id = ${retrying}`;
    await sql`UPDATE outbound_messages SET status = 'pending_retry', attempt_count = 1 WHERE id = ${retrying}`;
    // What the worker's claim does to a paused endpoint's job: parked until the resume.
    await sql`UPDATE delivery_jobs SET run_at = 'infinity' WHERE message_id = ${held}`;
    const forward = await inboundEndpoint({ mode: 'forward', url: 'https://example.com/forward' });
    const forwarded = await ingest(forward.token);
    const all = [due, leased, retrying, held, forwarded];
    const keys = [...(await Promise.all([due, leased, retrying, held].map((id) => payloadKeyOf('outbound', id)))), await payloadKeyOf('inbound', forwarded)];

    const later = Date.now() + 400 * DAY;
    await drain(later);
    const kept = await stored(all);
    expect(kept.outbound).toEqual(sorted([due, leased, retrying, held]));
    expect(kept.inbound).toEqual([forwarded]);
    expect(await payloadRows(keys)).toEqual(sorted(keys));

    // Settled: the next run removes it, and only it.
    await settle(due);
    await sql`DELETE FROM delivery_jobs WHERE message_id = ${forwarded}`;
    await sql`UPDATE inbound_messages SET status = 'failed_permanent' WHERE id = ${forwarded}`;
    await drain(later);
    const left = await stored(all);
    expect(left.outbound).toEqual(sorted([leased, retrying, held]));
    expect(left.inbound).toEqual([]);
  });

  it.runIf(backend() === 'postgres')('stays while another transaction holds its row (a result being recorded), and goes at the next run', async () => {
    const inbound = await inboundEndpoint();
    const busy = await ingest(inbound.token);
    const free = await ingest(inbound.token);
    const later = (await bornAt('inbound', free)) + 31 * DAY;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = t.db.sql.begin(async (tx) => {
      await tx`SELECT id FROM inbound_messages WHERE id = ${busy} FOR UPDATE`;
      locked();
      await released;
    });
    await isLocked;
    try {
      await drain(later);
      expect((await stored([busy, free])).inbound).toEqual([busy]);
    } finally {
      release();
      await holder;
    }
    await drain(later);
    expect((await stored([busy, free])).inbound).toEqual([]);
  });
});

describe('large bodies (the blob store)', () => {
  it('go with their message: chunk rows in its transaction (PostgreSQL), the file by the next run once the removal committed (PGlite)', async () => {
    const inbound = await inboundEndpoint();
    const body = JSON.stringify({ filler: 'x'.repeat(MIB) });
    const id = await ingest(inbound.token, body);
    const key = await payloadKeyOf('inbound', id);
    expect(key).toMatch(/^blob\//);
    const file = path.join(t.app.services.config.dataDir, 'payloads', key.slice('blob/'.length));
    const chunks = async () => (await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM payload_chunks WHERE key = ${key}`)[0]!.n;
    const listed = async () => (await t.db.sql<{ key: string }>`SELECT key FROM payload_removals`).map((r) => r.key);
    if (backend() === 'pglite') expect(existsSync(file)).toBe(true);
    else expect(await chunks()).toBeGreaterThan(0);

    const later = (await bornAt('inbound', id)) + 31 * DAY;
    expect(await runSweeperOnce(t.db, sweeper, t.app.services, new Date(later))).toBeGreaterThanOrEqual(1);
    expect((await stored([id])).inbound).toEqual([]);
    if (backend() === 'pglite') {
      // Its row is gone and committed; the file waits on the list for the next run.
      expect(existsSync(file)).toBe(true);
      expect(await listed()).toEqual([key]);
    } else {
      expect(await chunks()).toBe(0);
      expect(await listed()).toEqual([]);
    }
    await runSweeperOnce(t.db, sweeper, t.app.services, new Date(later));
    expect(existsSync(file)).toBe(false);
    expect(await listed()).toEqual([]);
  });
});

describe('batches', () => {
  let b: TestApp;
  beforeAll(async () => {
    b = await createTestApp({ env: { HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE: '3' } });
  });
  afterAll(async () => {
    await b?.close();
  });

  it('each run removes at most HOOKRELAY_MESSAGE_RETENTION_BATCH_SIZE messages of each kind', async () => {
    const retention = retentionOf(b);
    const inbound = await inboundEndpoint({}, b);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await ingest(inbound.token, `{"i":${i}}`, b));
    const outbound = await outboundEndpoint({}, b);
    const sent: string[] = [];
    for (let i = 0; i < 4; i++) {
      sent.push(await send(outbound, b));
      await settle(sent[i]!, b);
    }
    const later = Date.now() + 31 * DAY;
    const runs: number[] = [];
    const left: number[] = [];
    for (let run = 0; run < 6; run++) {
      runs.push((await runSweeperOnce(b.db, retention, b.app.services, new Date(later)))!);
      const s = await stored([...ids, ...sent], b);
      left.push(s.inbound.length + s.outbound.length);
    }
    expect(runs).toEqual([6, 4, 2, 0, 0, 0]);
    expect(left).toEqual([6, 2, 0, 0, 0, 0]);
  });

  it('one round of the sweepers drains a backlog, a batch per transaction', async () => {
    const retention = retentionOf(b);
    const inbound = await inboundEndpoint({}, b);
    // Messages received 40 days ago, as ingestion would have stored them then.
    const old = Date.now() - 40 * DAY;
    const [project] = await b.db.sql<{ project_id: string }>`SELECT project_id FROM inbound_endpoints WHERE id = ${inbound.id}`;
    await b.db.sql`UPDATE inbound_endpoints SET created_at = ${new Date(old - DAY)} WHERE id = ${inbound.id}`;
    const ids = Array.from({ length: 7 }, (_, i) => uuidv7AtTime(old + i));
    for (const [i, id] of ids.entries()) {
      await b.db.sql`
        INSERT INTO inbound_messages (id, project_id, inbound_endpoint_id, method, path, size_bytes, payload_sha256, raw_headers, payload_key, received_at, updated_at)
        VALUES (${id}, ${project!.project_id}, ${inbound.id}, 'POST', '/', 2, 'x', '[]'::jsonb, ${`inbound/${id}`}, ${new Date(old + i)}, ${new Date(old + i)})`;
      await b.db.sql`INSERT INTO payloads (key, data) VALUES (${`inbound/${id}`}, ${Buffer.from('{}')}::bytea)`;
    }
    const logged: { count?: number; sweeper?: string }[] = [];
    const log = { info: (fields: object, message: string) => message === 'sweeper removed expired rows' && logged.push(fields), warn: () => {}, error: () => {} };
    const runs: number[] = [];
    const counting: Sweeper = { ...retention, run: async (tx, now, deps) => runs[runs.push(await retention.run(tx, now, deps)) - 1]! };
    const handle = startSweepers(b.db, b.app.services, log as never, 60_000, [counting]);
    try {
      for (let i = 0; i < 400 && logged.length === 0; i++) await pause(10);
    } finally {
      await handle.stop();
    }
    expect(runs).toEqual([3, 3, 1]);
    expect(logged).toEqual([expect.objectContaining({ sweeper: 'message-retention', count: 7 })]);
    expect((await stored(ids, b)).inbound).toEqual([]);
    expect(await payloadRows(ids.map((id) => `inbound/${id}`), b)).toEqual([]);
  });
});
