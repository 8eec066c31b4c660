import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecretToken, newUuidv7, uuidv7AtTime } from '@hookrelay/shared';
import type { Database } from '../../src/db/database.js';
import { DELIVERIES_CHANNEL, INBOUND_MESSAGES_CHANNEL } from '../../src/db/channels.js';
import { storeInboundBatch, storeInboundOne, type IngestBatchItem, type IngestBatchResultRow } from '../../src/db/ingest.js';
import { insertProject } from '../../src/db/projects.js';
import { IngestBatcher, type CommittedMessages, type IngestItem } from '../../src/ingest/batcher.js';
import { DatabasePayloadStore } from '../../src/storage/payload-store.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { createTestDatabase, interceptSql } from '../helpers/database.js';

let db: Database;
let projectId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await insertProject(db.sql, 'batcher')).id;
});
afterAll(async () => {
  await db?.close();
});

async function endpoint(mode: 'cli' | 'forward' = 'cli'): Promise<string> {
  const id = newUuidv7();
  const token = newSecretToken();
  await db.sql`
    INSERT INTO inbound_endpoints (id, project_id, name, mode, url, secret_token_encrypted, secret_token_hash)
    VALUES (${id}, ${projectId}, 'batcher', ${mode}, ${mode === 'forward' ? `https://app.example.com/hook/${id}` : ''}, 'unused', ${sha256Hex(token)})`;
  return id;
}

function item(endpointId: string, n: number): IngestItem {
  const body = Buffer.from(`{"n":${n}}`);
  return {
    endpointId,
    endpointMode: 'cli',
    projectId,
    method: 'POST',
    path: '/',
    query: '',
    contentType: 'application/json',
    rawHeaders: [['content-type', 'application/json']],
    body,
    streamed: null,
    sha256: sha256Hex(body),
    idempotencyKey: null,
    receivedAt: new Date(),
    eventType: null,
    verified: [],
    traceContext: null,
  };
}

describe('IngestBatcher with several transactions in flight', () => {
  it('stores every webhook once and keeps each endpoint’s ids growing in commit order', async () => {
    const endpoints = [await endpoint(), await endpoint(), await endpoint()];
    const batcher = new IngestBatcher(db, new DatabasePayloadStore(), { maxConcurrent: 4, maxBatch: 7 });
    const outcomes = await Promise.all(Array.from({ length: 210 }, (_, n) => batcher.submit(item(endpoints[n % 3]!, n))));
    await batcher.idle();
    expect(outcomes.every((o) => o.kind === 'stored')).toBe(true);
    for (const endpointId of endpoints) {
      const rows = await db.sql<{ id: string }>`SELECT id FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
      expect(rows).toHaveLength(70);
      const [last] = await db.sql<{ last_message_id: string }>`SELECT last_message_id FROM inbound_endpoints WHERE id = ${endpointId}`;
      expect(last!.last_message_id).toBe(rows[rows.length - 1]!.id);
    }
    const [payloads] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM payloads`;
    expect(payloads!.n).toBe(210);
  });
});

describe('IngestBatcher when another process committed later ids', () => {
  it('stores every webhook above the committed last id, in arrival order', async () => {
    const endpointId = await endpoint();
    // What a process whose clock runs an hour ahead would have left behind.
    const ahead = uuidv7AtTime(Date.now() + 3_600_000);
    await db.sql`UPDATE inbound_endpoints SET last_message_id = ${ahead}::uuid WHERE id = ${endpointId}`;
    // One batch at a time: concurrent batches commit in lock order, which need not be arrival order.
    const batcher = new IngestBatcher(db, new DatabasePayloadStore(), { maxBatch: 4, maxConcurrent: 1 });
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, n) => batcher.submit(item(endpointId, n))));
    expect(outcomes.map((o) => o.kind)).toEqual(Array(10).fill('stored'));
    const ids = outcomes.map((o) => (o.kind === 'stored' ? o.messageId : ''));
    expect(ids.every((id) => id > ahead)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    const rows = await db.sql<{ id: string; n: string }>`
      SELECT m.id, convert_from(p.data, 'UTF8') AS n FROM inbound_messages m JOIN payloads p ON p.key = m.payload_key
      WHERE m.inbound_endpoint_id = ${endpointId} ORDER BY m.id`;
    expect(rows.map((r) => r.n)).toEqual(Array.from({ length: 10 }, (_, n) => `{"n":${n}}`));
    const [last] = await db.sql<{ last_message_id: string }>`SELECT last_message_id FROM inbound_endpoints WHERE id = ${endpointId}`;
    expect(last!.last_message_id).toBe(ids[9]);
  });

  it('two batchers (two processes) on one endpoint store everything, each id once, the last id the highest', async () => {
    const endpointId = await endpoint();
    const a = new IngestBatcher(db, new DatabasePayloadStore(), { maxBatch: 5 });
    const b = new IngestBatcher(db, new DatabasePayloadStore(), { maxBatch: 3 });
    const outcomes = await Promise.all(Array.from({ length: 300 }, (_, n) => (n % 2 === 0 ? a : b).submit(item(endpointId, n))));
    expect(outcomes.every((o) => o.kind === 'stored')).toBe(true);
    const ids = outcomes.map((o) => (o.kind === 'stored' ? o.messageId : ''));
    expect(new Set(ids).size).toBe(300);
    const rows = await db.sql<{ id: string }>`SELECT id FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
    expect(rows).toHaveLength(300);
    const [last] = await db.sql<{ last_message_id: string }>`SELECT last_message_id FROM inbound_endpoints WHERE id = ${endpointId}`;
    expect(last!.last_message_id).toBe(rows[299]!.id);
  });

  it('answers duplicates of a key within one batch and across batches with the first message', async () => {
    const endpointId = await endpoint();
    const batcher = new IngestBatcher(db, new DatabasePayloadStore());
    const keyed = (n: number, key: string): IngestItem => ({ ...item(endpointId, n), idempotencyKey: key });
    const first = await Promise.all([batcher.submit(keyed(1, 'a')), batcher.submit(keyed(2, 'a')), batcher.submit(keyed(3, 'b'))]);
    expect(first[0]!.kind).toBe('stored');
    const a = first[0]!.kind === 'stored' ? first[0]!.messageId : '';
    expect(first[1]).toEqual({ kind: 'duplicate', messageId: a });
    expect(first[2]!.kind).toBe('stored');
    expect(await batcher.submit(keyed(4, 'a'))).toEqual({ kind: 'duplicate', messageId: a });
    const [count] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId}`;
    expect(count!.n).toBe(2);
  });
});

describe('IngestBatcher and the streams of this process', () => {
  /**
   * A batcher whose store statements reach the database 50 ms late, with the order of what happens
   * in `events`: the statement sent, each rendering, each commit handed to the streams.
   */
  function slowBatcher(wanted: string) {
    const events: string[] = [];
    const renders: { id: string; endpointId: string }[] = [];
    const commits: CommittedMessages[] = [];
    const sql = interceptSql(db.sql, async (strings, _values, run) => {
      if (!/inbound_messages|hookrelay_store_inbound_batch/.test(strings.join(''))) return run();
      events.push('sent');
      await new Promise((r) => setTimeout(r, 50));
      return run();
    });
    const batcher = new IngestBatcher({ ...db, sql }, new DatabasePayloadStore(), {
      wantsCommitted: (endpointId) => endpointId === wanted,
      renderCommitted: ({ id, item: rendered }) => {
        events.push('rendered');
        renders.push({ id, endpointId: rendered.endpointId });
        return `frame of ${id}`;
      },
      onCommitted: (commit) => {
        events.push('committed');
        commits.push(commit);
      },
    });
    return { batcher, events, renders, commits };
  }
  const idOf = (outcome: { kind: string; messageId?: string }) => (outcome.kind === 'stored' ? outcome.messageId! : '');

  it('renders what the streams want while the commit is in flight and hands it over with the commit, alone and in a batch', async () => {
    const [local, other] = [await endpoint(), await endpoint()];
    const alone = slowBatcher(local);
    const one = idOf(await alone.batcher.submit(item(local, 1)));
    expect(alone.events).toEqual(['sent', 'rendered', 'committed']);
    expect(alone.renders).toEqual([{ id: one, endpointId: local }]);
    expect(alone.commits[0]!.messages.map((m) => [m.id, m.rendered])).toEqual([[one, `frame of ${one}`]]);

    // Submitted in one turn: one batch over both endpoints; only the wanted one is rendered.
    const batch = slowBatcher(local);
    const outcomes = await Promise.all([batch.batcher.submit(item(local, 2)), batch.batcher.submit(item(other, 3)), batch.batcher.submit(item(local, 4))]);
    const [two, , four] = outcomes.map(idOf);
    expect(outcomes.map((o) => o.kind)).toEqual(['stored', 'stored', 'stored']);
    expect(batch.events).toEqual(['sent', 'rendered', 'rendered', 'committed']);
    expect(batch.renders).toEqual([
      { id: two, endpointId: local },
      { id: four, endpointId: local },
    ]);
    expect(batch.commits.map((c) => c.endpointId)).toEqual([local]);
    expect(batch.commits[0]!.messages.map((m) => [m.id, m.rendered])).toEqual([
      [two, `frame of ${two}`],
      [four, `frame of ${four}`],
    ]);
    await Promise.all([alone.batcher.idle(), batch.batcher.idle()]);
  });

  it('hands over no rendering when the database gave the message another id than the one rendered', async () => {
    const local = await endpoint();
    const ahead = uuidv7AtTime(Date.now() + 3_600_000);
    await db.sql`UPDATE inbound_endpoints SET last_message_id = ${ahead}::uuid WHERE id = ${local}`;
    const { batcher, renders, commits } = slowBatcher(local);
    const stored = idOf(await batcher.submit(item(local, 1)));
    expect(stored > ahead).toBe(true);
    expect(renders).toHaveLength(1);
    expect(renders[0]!.id).not.toBe(stored);
    expect(commits[0]!.messages.map((m) => [m.id, m.rendered])).toEqual([[stored, undefined]]);
    await batcher.idle();
  });
});

describe('IngestBatcher announcements', () => {
  it('announces a commit this process’s streams took once they have had time to forward it, and any other at once', async () => {
    const [local, remote] = [await endpoint(), await endpoint()];
    const heardAt = new Map<string, number>();
    const unlisten = await db.listen(INBOUND_MESSAGES_CHANNEL, (payload) => {
      for (const entry of payload.split(',')) heardAt.set(entry.split(':')[0]!, performance.now());
    });
    const heard = async (endpointId: string) => {
      const deadline = Date.now() + 10_000;
      while (!heardAt.has(endpointId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      return heardAt.get(endpointId);
    };
    // A wait far above a NOTIFY's round trip, so that the two cases cannot be mistaken for each other.
    const waitMs = 1_000;
    try {
      let handedAt = 0;
      const withStream = new IngestBatcher(db, new DatabasePayloadStore(), {
        announceAfterLocalStreamsMs: waitMs,
        wantsCommitted: (endpointId) => endpointId === local,
        onCommitted: (commit) => {
          if (commit.endpointId === local) handedAt = performance.now();
        },
      });
      expect((await withStream.submit(item(local, 1))).kind).toBe('stored');
      expect(handedAt).toBeGreaterThan(0);
      // Timers may fire up to a millisecond early (they count whole milliseconds).
      expect((await heard(local))! - handedAt).toBeGreaterThanOrEqual(waitMs - 1);

      const withoutStream = new IngestBatcher(db, new DatabasePayloadStore(), { announceAfterLocalStreamsMs: waitMs });
      expect((await withoutStream.submit(item(remote, 2))).kind).toBe('stored');
      const answeredAt = performance.now();
      expect((await heard(remote))! - answeredAt).toBeLessThan(waitMs);
      await Promise.all([withStream.idle(), withoutStream.idle()]);
    } finally {
      await unlisten();
    }
  });

  it('announces, after the commit, every endpoint of a batch over 150 endpoints with its last id, in NOTIFYs under the payload limit', async () => {
    const endpoints: string[] = [];
    for (let i = 0; i < 150; i++) endpoints.push(await endpoint());
    const heard: string[] = [];
    const unlisten = await db.listen(INBOUND_MESSAGES_CHANNEL, (payload) => heard.push(payload));
    try {
      const batcher = new IngestBatcher(db, new DatabasePayloadStore(), { maxConcurrent: 1 });
      // Submitted in one turn of the event loop: one batch, one commit.
      const outcomes = await Promise.all(endpoints.map((endpointId, n) => batcher.submit(item(endpointId, n))));
      await batcher.idle();
      expect(outcomes.map((o) => o.kind)).toEqual(Array(150).fill('stored'));
      const announced = () => new Map(heard.flatMap((payload) => payload.split(',')).map((entry) => entry.split(':') as [string, string]));
      const deadline = Date.now() + 5_000;
      while (announced().size < 150 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      // 150 entries of 73 characters do not fit in one NOTIFY (PostgreSQL refuses 8,000 bytes or more).
      expect(heard.length).toBeGreaterThan(1);
      for (const payload of heard) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
      endpoints.forEach((endpointId, i) => {
        const outcome = outcomes[i]!;
        expect(announced().get(endpointId)).toBe(outcome.kind === 'stored' ? outcome.messageId : 'not stored');
      });
    } finally {
      await unlisten();
    }
  });
});

describe('storeInboundOne from several connections at once', () => {
  it('chains every answer to the one committed before it, whatever order the proposed ids came in', async () => {
    const endpointId = await endpoint();
    // Proposed ids in descending order, sent at once: stores that wait on the row lock must still
    // place theirs above the id committed meanwhile, and answer that id as the previous one.
    const proposed = Array.from({ length: 40 }, (_, n) => uuidv7AtTime(Date.now() + 60_000 - n * 1000));
    const answers = await Promise.all(
      proposed.map((id, n) => {
        const body = Buffer.from(`{"n":${n}}`);
        return storeInboundOne(
          db.sql,
          {
            n: 0,
            ord: n,
            id,
            endpoint_id: endpointId,
            project_id: projectId,
            method: 'POST',
            path: '/',
            query: '',
            content_type: 'application/json',
            size_bytes: body.length,
            sha256: sha256Hex(body),
            raw_headers: [],
            idempotency_key: null,
            received_at: new Date(),
            body_offset: 0,
            event_type: null,
            verified: [],
            trace_context: null,
            payload_key: null,
            replay_of: null,
            replay_signed: null,
          },
          body,
          'cli',
        );
      }),
    );
    expect(answers.every((a) => a.outcome === 'stored')).toBe(true);
    const chain = [...answers].sort((a, b) => (a.message_id! < b.message_id! ? -1 : 1));
    expect(new Set(chain.map((a) => a.message_id)).size).toBe(40);
    chain.forEach((answer, i) => expect(answer.previous_last_id).toBe(i === 0 ? null : chain[i - 1]!.message_id));
    const rows = await db.sql<{ id: string }>`SELECT id FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
    expect(rows.map((r) => r.id)).toEqual(chain.map((a) => a.message_id));
    const [last] = await db.sql<{ last_message_id: string }>`SELECT last_message_id FROM inbound_endpoints WHERE id = ${endpointId}`;
    expect(last!.last_message_id).toBe(chain[39]!.message_id);
  });
});

describe('IngestBatcher and endpoints that changed after the lookup', () => {
  it('answers paused and gone from the locked row and stores nothing for them, in a batch with a live endpoint', async () => {
    const [live, paused, deleted] = [await endpoint(), await endpoint(), await endpoint()];
    await db.sql`UPDATE inbound_endpoints SET paused = true WHERE id = ${paused}`;
    await db.sql`UPDATE inbound_endpoints SET deleted_at = now() WHERE id = ${deleted}`;
    const batcher = new IngestBatcher(db, new DatabasePayloadStore(), { maxConcurrent: 1 });
    const outcomes = await Promise.all([batcher.submit(item(paused, 1)), batcher.submit(item(live, 2)), batcher.submit(item(deleted, 3))]);
    expect(outcomes.map((o) => o.kind)).toEqual(['paused', 'stored', 'gone']);
    const rows = await db.sql<{ inbound_endpoint_id: string }>`
      SELECT inbound_endpoint_id FROM inbound_messages WHERE inbound_endpoint_id IN (${live}, ${paused}, ${deleted})`;
    expect(rows.map((r) => r.inbound_endpoint_id)).toEqual([live]);
    const ends = await db.sql<{ id: string; last_message_id: string | null }>`
      SELECT id, last_message_id FROM inbound_endpoints WHERE id IN (${paused}, ${deleted})`;
    expect(ends.every((e) => e.last_message_id === null)).toBe(true);
  });
});

/**
 * The batcher stores a webhook alone without an idempotency key with `storeInboundOne`, and any other
 * batch (and a webhook whose endpoint that statement finds not live) with
 * hookrelay_store_inbound_batch. Each case runs alone through the function, as the first of a
 * two-webhook batch and as one statement of each mode: the answers and rows must be the same.
 */
describe('hookrelay_store_inbound_batch: one webhook alone answers and stores as in a larger batch', () => {
  const TRACE_CONTEXT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const keyExpiry = () => new Date(Date.now() + 86_400_000);
  const batchItem = (n: number, endpointId: string, id: string, body: Buffer, offset: number): IngestBatchItem => ({
    n,
    ord: 10 + n,
    id,
    endpoint_id: endpointId,
    project_id: projectId,
    method: 'PUT',
    path: '/sub/path',
    query: 'a=1&a=2',
    content_type: 'application/x-www-form-urlencoded',
    size_bytes: body.length,
    sha256: sha256Hex(body),
    raw_headers: [['X-Repeat', 'one'], ['x-repeat', 'two']],
    idempotency_key: null,
    received_at: new Date('2026-11-22T10:00:00.123Z'),
    body_offset: offset,
    event_type: 'order.created',
    verified: ['hmac'],
    trace_context: TRACE_CONTEXT,
    payload_key: null,
    replay_of: null,
    replay_signed: null,
  });

  /**
   * Stores `id` for `endpointId`, alone or followed by a webhook to another live endpoint; `previous`
   * sends the item as a process of an earlier version does (no event_type, verified or trace_context);
   * `copyOf` makes it an edited replay's copy.
   */
  async function store(
    shape: string,
    endpointId: string,
    id: string,
    withBodies = true,
    previous = false,
    copyOf?: Pick<IngestBatchItem, 'replay_of' | 'replay_signed'>,
  ): Promise<IngestBatchResultRow> {
    const body = Buffer.from('a=1&b=%20two');
    const items = [{ ...batchItem(0, endpointId, id, body, 0), ...copyOf }];
    if (previous) {
      const {
        event_type: _eventType,
        verified: _verified,
        trace_context: _traceContext,
        payload_key: _payloadKey,
        replay_of: _replayOf,
        replay_signed: _replaySigned,
        ...older
      } = items[0]!;
      items[0] = older as IngestBatchItem;
    }
    let bodies = body;
    if (shape === 'in a batch') {
      const other = Buffer.from('other');
      items.push(batchItem(1, await endpoint(), newUuidv7(), other, body.length));
      bodies = Buffer.concat([body, other]);
    }
    const readAs = /read as (cli|forward)$/.exec(shape)?.[1] as 'cli' | 'forward' | undefined;
    if (readAs) return storeInboundOne(db.sql, items[0]!, withBodies ? bodies : null, readAs);
    const rows = await storeInboundBatch(db.sql, items, withBodies ? bodies : null, keyExpiry());
    expect(rows).toHaveLength(items.length);
    return rows.find((r) => r.ord === 10)!;
  }

  const lastIdOf = async (endpointId: string) =>
    (await db.sql<{ last_message_id: string | null }>`SELECT last_message_id FROM inbound_endpoints WHERE id = ${endpointId}`)[0]?.last_message_id ?? null;

  // `read as`: the mode the caller last read, which picks the statement; each case's endpoint is in
  // cli mode but for the delivery job's, so each statement also meets an endpoint of the other mode.
  describe.each(['alone', 'in a batch', 'as one statement, the endpoint read as cli', 'as one statement, the endpoint read as forward'])('%s', (shape) => {
    it('stores a live endpoint’s webhook under its proposed id, with every field, its payload and the new last id', async () => {
      const endpointId = await endpoint();
      const first = newUuidv7();
      expect(await store(shape, endpointId, first)).toEqual({ ord: 10, outcome: 'stored', message_id: first, endpoint_id: endpointId, previous_last_id: null });
      const second = newUuidv7();
      expect(await store(shape, endpointId, second)).toMatchObject({ outcome: 'stored', message_id: second, previous_last_id: first });
      const [row] = await db.sql<Record<string, unknown>>`
        SELECT project_id, inbound_endpoint_id, status, method, path, query, content_type, size_bytes, payload_sha256, raw_headers,
               payload_key, idempotency_key, received_at, updated_at, event_type, verified, trace_context, replay_of, replay_signed
        FROM inbound_messages WHERE id = ${second}`;
      expect(await db.sql`SELECT 1 FROM delivery_jobs WHERE message_id IN (${first}, ${second})`).toHaveLength(0);
      const received = new Date('2026-11-22T10:00:00.123Z');
      expect(row).toEqual({
        project_id: projectId,
        inbound_endpoint_id: endpointId,
        status: 'queued',
        method: 'PUT',
        path: '/sub/path',
        query: 'a=1&a=2',
        content_type: 'application/x-www-form-urlencoded',
        size_bytes: 12,
        payload_sha256: sha256Hex(Buffer.from('a=1&b=%20two')),
        raw_headers: [['X-Repeat', 'one'], ['x-repeat', 'two']],
        payload_key: `inbound/${second}`,
        idempotency_key: null,
        received_at: received,
        updated_at: received,
        event_type: 'order.created',
        verified: ['hmac'],
        trace_context: TRACE_CONTEXT,
        replay_of: null,
        replay_signed: null,
      });
      const [payload] = await db.sql<{ data: Uint8Array }>`SELECT data FROM payloads WHERE key = ${`inbound/${second}`}`;
      expect(Buffer.from(payload!.data).toString()).toBe('a=1&b=%20two');
      expect(await lastIdOf(endpointId)).toBe(second);
    });

    it('takes an item of a process of an earlier version: no event type, no checks, no trace context', async () => {
      const endpointId = await endpoint();
      const id = newUuidv7();
      expect(await store(shape, endpointId, id, true, true)).toMatchObject({ outcome: 'stored', message_id: id });
      const [row] = await db.sql<{ event_type: string | null; verified: string[]; trace_context: string | null }>`SELECT event_type, verified, trace_context FROM inbound_messages WHERE id = ${id}`;
      expect(row).toEqual({ event_type: null, verified: [], trace_context: null });
    });

    it('stores an edited replay’s copy with the message it copies and whether the server signed it', async () => {
      const endpointId = await endpoint();
      const [original, signed, unsigned] = [newUuidv7(), newUuidv7(), newUuidv7()];
      await store(shape, endpointId, original);
      await store(shape, endpointId, signed, true, false, { replay_of: original, replay_signed: true });
      await store(shape, endpointId, unsigned, true, false, { replay_of: original, replay_signed: false });
      const rows = await db.sql<{ id: string; replay_of: string | null; replay_signed: boolean | null }>`
        SELECT id, replay_of, replay_signed FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
      expect(rows).toEqual([
        { id: original, replay_of: null, replay_signed: null },
        { id: signed, replay_of: original, replay_signed: true },
        { id: unsigned, replay_of: original, replay_signed: false },
      ]);
    });

    it('places it right after a later id another process committed, keeping the payload key of the proposed id', async () => {
      const endpointId = await endpoint();
      const proposed = newUuidv7();
      const committed = uuidv7AtTime(Date.now() + 60_000);
      await db.sql`UPDATE inbound_endpoints SET last_message_id = ${committed} WHERE id = ${endpointId}`;
      const [after] = await db.sql<{ id: string }>`SELECT hookrelay_uuidv7_after(${committed}, 1)::text AS id`;
      expect(await store(shape, endpointId, proposed)).toEqual({ ord: 10, outcome: 'stored', message_id: after!.id, endpoint_id: endpointId, previous_last_id: committed });
      const [row] = await db.sql<{ payload_key: string }>`SELECT payload_key FROM inbound_messages WHERE id = ${after!.id}`;
      expect(row!.payload_key).toBe(`inbound/${proposed}`);
      expect(await lastIdOf(endpointId)).toBe(after!.id);
    });

    it('answers paused, and gone for a deleted, an expired and an unknown endpoint, storing nothing', async () => {
      const [paused, deleted, expired] = [await endpoint(), await endpoint(), await endpoint()];
      const last = newUuidv7();
      await db.sql`UPDATE inbound_endpoints SET paused = true, last_message_id = ${last} WHERE id = ${paused}`;
      await db.sql`UPDATE inbound_endpoints SET deleted_at = now(), paused = true WHERE id = ${deleted}`;
      await db.sql`UPDATE inbound_endpoints SET ephemeral = true, expires_at = now() - interval '1 second' WHERE id = ${expired}`;
      const unknown = newUuidv7();
      const ids = [newUuidv7(), newUuidv7(), newUuidv7(), newUuidv7()];
      expect(await store(shape, paused, ids[0]!)).toEqual({ ord: 10, outcome: 'paused', message_id: null, endpoint_id: paused, previous_last_id: last });
      expect(await store(shape, deleted, ids[1]!)).toEqual({ ord: 10, outcome: 'gone', message_id: null, endpoint_id: deleted, previous_last_id: null });
      expect(await store(shape, expired, ids[2]!)).toEqual({ ord: 10, outcome: 'gone', message_id: null, endpoint_id: expired, previous_last_id: null });
      expect(await store(shape, unknown, ids[3]!)).toEqual({ ord: 10, outcome: 'gone', message_id: null, endpoint_id: unknown, previous_last_id: null });
      const stored = await db.sql`SELECT 1 FROM inbound_messages WHERE id IN (${ids[0]!}, ${ids[1]!}, ${ids[2]!}, ${ids[3]!})`;
      const payloads = await db.sql`SELECT 1 FROM payloads WHERE key IN (${`inbound/${ids[0]!}`}, ${`inbound/${ids[1]!}`}, ${`inbound/${ids[2]!}`}, ${`inbound/${ids[3]!}`})`;
      expect([stored.length, payloads.length]).toEqual([0, 0]);
      expect([await lastIdOf(paused), await lastIdOf(deleted), await lastIdOf(expired)]).toEqual([last, null, null]);
    });

    it('queues a delivery job for a forward-mode endpoint and announces it on the deliveries channel', async () => {
      const endpointId = await endpoint('forward');
      const heard: string[] = [];
      const unlisten = await db.listen(DELIVERIES_CHANNEL, (payload) => heard.push(payload));
      try {
        const id = newUuidv7();
        expect(await store(shape, endpointId, id)).toMatchObject({ outcome: 'stored', message_id: id });
        const jobs = await db.sql<{ kind: string; destination: string }>`SELECT kind, destination FROM delivery_jobs WHERE message_id = ${id}`;
        expect(jobs).toEqual([{ kind: 'inbound', destination: endpointId }]);
        for (let i = 0; i < 100 && heard.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
        expect(heard.length).toBeGreaterThan(0);
      } finally {
        await unlisten();
      }
    });

    it('with the payloads in an object store (no bodies given) stores the message and no payload row', async () => {
      const endpointId = await endpoint();
      const id = newUuidv7();
      expect(await store(shape, endpointId, id, false)).toMatchObject({ outcome: 'stored', message_id: id });
      expect(await db.sql`SELECT 1 FROM inbound_messages WHERE id = ${id}`).toHaveLength(1);
      expect(await db.sql`SELECT 1 FROM payloads WHERE key = ${`inbound/${id}`}`).toHaveLength(0);
    });
  });
});
