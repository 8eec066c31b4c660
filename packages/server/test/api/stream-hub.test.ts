import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { Database } from '../../src/db/database.js';
import { readInboundCommits } from '../../src/db/channels.js';
import { DatabasePayloadStore } from '../../src/storage/payload-store.js';
import type { CommittedInboundMessage } from '../../src/stream/cli-message.js';
import { committedFrame, StreamHub, type StreamSubscriber } from '../../src/stream/hub.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { interceptSql } from '../helpers/database.js';

/**
 * StreamHub.publishCommitted: messages a commit of this process has just stored go to its idle
 * streams without a read-back, and never twice or out of order to a stream that is catching up.
 */
let t: TestApp;
let hub: StreamHub;
let hubDb: Database;
/** Statements the hub has run, and those still running. */
const queries = { started: 0, running: 0 };

beforeAll(async () => {
  t = await createTestApp();
  const counted = interceptSql(t.db.sql, (_strings, _values, run) => {
    queries.started++;
    queries.running++;
    return run().finally(() => queries.running--);
  });
  // The hub hears no NOTIFY of its own (the app's LISTEN feeds the app's hub): the test plays the notices itself.
  hubDb = { backend: t.db.backend, sql: counted, listen: async () => async () => {}, notify: async () => {}, announce: async () => {}, close: async () => {} };
  // No periodic check here: these tests count the hub's reads.
  hub = new StreamHub(hubDb, new DatabasePayloadStore(), t.app.log, { recheckMs: 3_600_000 });
  hub.start();
});
afterAll(async () => {
  hub?.stop();
  await t?.close();
});

interface SentFrame {
  type: string;
  message: { message_id: string; body: string; body_encoding: string; path: string };
}

/** A socket that keeps what the hub sends. */
function fakeSocket(): { socket: WebSocket; frames: SentFrame[]; ids: () => string[] } {
  const frames: SentFrame[] = [];
  const socket = { bufferedAmount: 0, send: (data: string) => frames.push(JSON.parse(data) as SentFrame) } as unknown as WebSocket;
  return { socket, frames, ids: () => frames.map((f) => f.message.message_id) };
}

async function createCli(): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'hub', mode: 'cli' } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ingest(token: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await t.app.inject({ method: 'POST', url: `/in/${token}/n${i}`, payload: `{"n":${i}}`, headers: { 'content-type': 'application/json' } });
    expect(res.statusCode, res.body).toBe(200);
    ids.push((JSON.parse(res.body) as { data: { message_id: string } }).data.message_id);
  }
  return ids;
}

/** The stored messages as the ingest path would hand them over after its commit. */
async function committedRows(ids: readonly string[]): Promise<CommittedInboundMessage[]> {
  const rows = await t.db.sql<CommittedInboundMessage>`
    SELECT m.id, m.method, m.path, m.query, m.content_type, m.size_bytes, m.payload_sha256, m.raw_headers, m.received_at, m.replay_of, m.replay_signed, p.data AS payload
    FROM inbound_messages m JOIN payloads p ON p.key = m.payload_key
    WHERE m.id = ANY(${[...ids]}::uuid[]) ORDER BY m.id`;
  return rows;
}

/** Waits (bounded) until the hub has no statement running and `done` holds. */
async function settle(done: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (queries.running > 0 || !done()) {
    if (Date.now() > deadline) throw new Error(`timed out (${queries.running} statements running)`);
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 20));
}

async function startedSubscriber(endpointId: string, cursor: string | null): Promise<{ subscriber: StreamSubscriber; frames: SentFrame[]; ids: () => string[] }> {
  const fake = fakeSocket();
  const subscriber = hub.subscribe(endpointId, fake.socket);
  const before = queries.started;
  subscriber.start(cursor);
  await settle(() => queries.started > before);
  return { subscriber, ...fake };
}

describe('StreamHub.publishCommitted', () => {
  it('sends at once, with no read, to an idle stream that stands at `after`; then follows on from there', async () => {
    const { id, token } = await createCli();
    const [a, b, c, d] = await ingest(token, 4);
    const stream = await startedSubscriber(id, a!);
    expect(stream.ids()).toEqual([b, c, d]);
    const [e, f, g] = await ingest(token, 3);
    const rows = await committedRows([e!, f!, g!]);
    const reads = queries.started;

    hub.publishCommitted(id, d!, rows.slice(0, 2));
    // Synchronously, with no statement: the frames are already on the socket.
    expect(stream.ids()).toEqual([b, c, d, e, f]);
    hub.publishCommitted(id, f!, rows.slice(2));
    expect(stream.ids()).toEqual([b, c, d, e, f, g]);
    expect(queries.started).toBe(reads);
    const frame = stream.frames[3]!;
    expect(frame.type).toBe('message');
    expect(frame.message).toMatchObject({ message_id: e, body_encoding: 'base64', path: '/n0' });
    expect(Buffer.from(frame.message.body, 'base64').toString()).toBe('{"n":0}');

    // The NOTIFY of the same commits names their last id: the stream is past it, so no read.
    // As the process's LISTEN on the commit channel hands a notice to the hub.
    const notify = (payload: string) => readInboundCommits(payload, (endpointId, lastId) => hub.committed(endpointId, lastId));
    notify(`${id}:${g}`);
    await settle();
    expect(queries.started).toBe(reads);
    // One that does not name it (or names a later id) still wakes the stream.
    notify(`${id}`);
    await settle();
    expect(queries.started).toBe(reads + 1);
    // Rows it has already sent are not sent again.
    hub.publishCommitted(id, d!, rows);
    await settle();
    expect(stream.ids()).toEqual([b, c, d, e, f, g]);
    expect(queries.started).toBe(reads + 1);
    hub.unsubscribe(stream.subscriber);
  });

  it('sends a frame the ingest rendered during the commit as it is, and renders the others as the ingest does', async () => {
    const { id, token } = await createCli();
    const [a] = await ingest(token, 1);
    const stream = await startedSubscriber(id, a!);
    const [b, c] = await ingest(token, 2);
    const [rowB, rowC] = await committedRows([b!, c!]);
    // B's frame carries a mark the hub could not have made itself.
    const rendered = JSON.parse(committedFrame(rowB!)) as SentFrame;
    rendered.message.path = '/rendered-during-the-commit';
    hub.publishCommitted(id, a!, [{ ...rowB!, frame: JSON.stringify(rendered) }, rowC!]);
    expect(stream.ids()).toEqual([b, c]);
    expect(stream.frames[0]).toEqual(rendered);
    expect(stream.frames[1]).toEqual(JSON.parse(committedFrame(rowC!)));
    expect(stream.frames[1]!.message).toMatchObject({ message_id: c, path: '/n1', body_encoding: 'base64' });
    hub.unsubscribe(stream.subscriber);
  });

  it('reads back, in order and once, when the stream is not exactly at `after`', async () => {
    const { id, token } = await createCli();
    const [a, b, c] = await ingest(token, 3);
    const stream = await startedSubscriber(id, a!);
    expect(stream.ids()).toEqual([b, c]);
    // A commit this stream never heard of (another process), then ours: a gap the hub must not skip.
    const [d, e] = await ingest(token, 2);
    hub.publishCommitted(id, d!, await committedRows([e!]));
    expect(stream.ids()).toEqual([b, c]);
    await settle(() => stream.ids().length === 4);
    expect(stream.ids()).toEqual([b, c, d, e]);
    hub.unsubscribe(stream.subscriber);
  });

  it('a stream catching up a backlog gets every message once, in id order, whatever is published meanwhile', async () => {
    const { id, token } = await createCli();
    const ids = await ingest(token, 230);
    const rows = await committedRows(ids);
    const fake = fakeSocket();
    const subscriber = hub.subscribe(id, fake.socket);
    // Not started yet: nothing can be sent (its start cursor is still being read).
    hub.publishCommitted(id, null, rows.slice(0, 3));
    expect(fake.ids()).toEqual([]);
    subscriber.start(null);
    // Reading page one: `after` matches its cursor (null), but the read in flight will bring them.
    hub.publishCommitted(id, null, rows.slice(0, 3));
    hub.publishCommitted(id, ids[226]!, rows.slice(227));
    expect(fake.ids()).toEqual([]);
    await settle(() => fake.ids().length >= 230);
    expect(fake.ids()).toEqual(ids);
    // Out of order, or not above `after`: only a wake-up, which finds nothing new.
    hub.publishCommitted(id, ids[229]!, [rows[229]!]);
    hub.publishCommitted(id, ids[228]!, [rows[229]!, rows[228]!]);
    await settle();
    expect(fake.ids()).toEqual(ids);
    hub.unsubscribe(subscriber);
  });

  it('waits for a slow socket instead of piling frames on it', async () => {
    const { id, token } = await createCli();
    const [a] = await ingest(token, 1);
    const fake = fakeSocket();
    const subscriber = hub.subscribe(id, fake.socket);
    subscriber.start(a!);
    await settle();
    const [b] = await ingest(token, 1);
    (fake.socket as { bufferedAmount: number }).bufferedAmount = 64 * 1024 * 1024;
    hub.publishCommitted(id, a!, await committedRows([b!]));
    expect(fake.ids()).toEqual([]);
    (fake.socket as { bufferedAmount: number }).bufferedAmount = 0;
    await settle(() => fake.ids().length === 1);
    expect(fake.ids()).toEqual([b]);
    hub.unsubscribe(subscriber);
  });
});

describe('StreamHub periodic check', () => {
  it('brings a stream the messages of commits whose NOTIFY never reached it', async () => {
    // Hears no NOTIFY at all, as when the committing process died before sending it.
    const deaf: Database = { ...hubDb, sql: t.db.sql, listen: async () => async () => {} };
    const checking = new StreamHub(deaf, new DatabasePayloadStore(), t.app.log, { recheckMs: 50 });
    checking.start();
    try {
      const { id, token } = await createCli();
      const [a] = await ingest(token, 1);
      const fake = fakeSocket();
      const subscriber = checking.subscribe(id, fake.socket);
      subscriber.start(a!);
      // Stored by the app's own ingest path: nothing is published to this hub.
      const later = await ingest(token, 3);
      const deadline = Date.now() + 5_000;
      while (fake.ids().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(fake.ids()).toEqual(later);
      checking.unsubscribe(subscriber);
    } finally {
      checking.stop();
    }
  });
});

describe('StreamHub when the database is down', () => {
  it('warns once per run of failed reads, retries each second, and resumes where it stood', async () => {
    const { id, token } = await createCli();
    const [a] = await ingest(token, 1);
    let down = true;
    let reads = 0;
    const flaky = interceptSql(t.db.sql, (_strings, _values, run) => {
      reads++;
      return down ? Promise.reject(new Error('database unavailable')) : run();
    });
    const warnings: string[] = [];
    const log = { ...t.app.log, warn: (_obj: unknown, message: string) => void warnings.push(message) } as unknown as FastifyBaseLogger;
    const outage = new StreamHub({ ...hubDb, sql: flaky, listen: async () => async () => {} }, new DatabasePayloadStore(), log, { recheckMs: 3_600_000 });
    outage.start();
    try {
      const fake = fakeSocket();
      const subscriber = outage.subscribe(id, fake.socket);
      subscriber.start(a!);
      const later = await ingest(token, 2);
      await new Promise((r) => setTimeout(r, 2_300));
      expect(reads).toBeGreaterThanOrEqual(3);
      expect(warnings).toHaveLength(1);
      down = false;
      const deadline = Date.now() + 5_000;
      while (fake.ids().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(fake.ids()).toEqual(later);
      // A new outage is a new run of failures: one more warning.
      down = true;
      subscriber.wake();
      await new Promise((r) => setTimeout(r, 200));
      expect(warnings).toHaveLength(2);
      outage.unsubscribe(subscriber);
    } finally {
      outage.stop();
    }
  });
});
