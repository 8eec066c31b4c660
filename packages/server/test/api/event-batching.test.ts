import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventFanout, eventRequestSha256, type EventSubmission, type FanOutOutcome } from '../../src/delivery/event-fanout.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { DatabasePayloadStore } from '../../src/storage/payload-store.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { recordingStatements } from '../helpers/database.js';
import { Receiver, settled, waitForMessage } from '../helpers/receiver.js';

/**
 * Group-committed POST /v1/events: concurrent events share one statement, yet each is fanned out
 * exactly once, all its messages or none, and each request gets the answer it would have had alone.
 * Each test works in a project of its own, so that its endpoints are the only ones its events find.
 */

/** An event as the route builds it. */
function submission(projectId: string, payload: unknown, extra: { key?: string; eventType?: string; ownerId?: string } = {}): EventSubmission {
  const bytes = Buffer.from(JSON.stringify(payload));
  const fields = {
    eventType: extra.eventType ?? 'order.created',
    ownerId: extra.ownerId ?? 'cus_1',
    channels: [],
    contentType: 'application/json',
    payloadFormat: 'json' as const,
    payloadSha256: sha256Hex(bytes),
  };
  return { projectId, ...fields, idempotencyKey: extra.key ?? null, requestSha256: eventRequestSha256(fields), payload: bytes };
}

const stored = (o: FanOutOutcome) => (o as Extract<FanOutOutcome, { kind: 'stored' }>).fannedOut;
const sorted = (ids: string[]) => [...ids].sort();

/** A project (a new one by default) with `count` endpoints of owner cus_1 that take `order.*`. */
async function projectWithEndpoints(t: TestApp, count: number, url: (i: number) => string, project?: { apiKey: string; projectId: string }) {
  const { apiKey, projectId } = project ?? (await t.createProject());
  const endpoints: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await t.request('POST', '/v1/endpoints', { apiKey, body: { url: url(i), owner_id: 'cus_1', event_types: ['order.*'] } });
    expect(res.status, res.raw).toBe(201);
    endpoints.push(res.body.data.id);
  }
  const rows = async () => {
    const [row] = await t.db.sql<{ events: number; messages: number; jobs: number; payloads: number }>`
      SELECT (SELECT count(*)::int FROM events WHERE project_id = ${projectId}) AS events,
             (SELECT count(*)::int FROM outbound_messages WHERE project_id = ${projectId}) AS messages,
             (SELECT count(*)::int FROM delivery_jobs j JOIN outbound_messages m ON m.id = j.message_id WHERE m.project_id = ${projectId}) AS jobs,
             (SELECT count(*)::int FROM payloads p JOIN events e ON p.key = 'event/' || e.id WHERE e.project_id = ${projectId}) AS payloads`;
    return row!;
  };
  return { apiKey, projectId, endpoints, rows };
}

describe('group commit of POST /v1/events (no worker)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('concurrent events are each fanned out exactly once, to every endpoint that takes them', async () => {
    const p = await projectWithEndpoints(t, 3, (i) => `https://hooks.example.com/batch/${i}`);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        t.request('POST', '/v1/events', { apiKey: p.apiKey, body: { event_type: 'order.created', owner_id: 'cus_1', payload: { n } } }),
      ),
    );
    for (const res of answers) expect(res.status, res.raw).toBe(202);
    const events = answers.map((res) => res.body.data as { event_id: string; messages: { message_id: string; endpoint_id: string }[] });
    expect(new Set(events.map((e) => e.event_id)).size).toBe(40);
    for (const e of events) expect(sorted(e.messages.map((m) => m.endpoint_id))).toEqual(sorted(p.endpoints));
    expect(new Set(events.flatMap((e) => e.messages.map((m) => m.message_id))).size).toBe(120);
    expect(await p.rows()).toEqual({ events: 40, messages: 120, jobs: 120, payloads: 40 });
    // Each stored message is its event's, with that event's payload, and each event counts its three.
    const byEvent = await t.db.sql<{ event_id: string; ids: string[]; n: number; message_count: number }>`
      SELECT m.event_id, array_agg(m.id::text ORDER BY m.id) AS ids, (convert_from(p.data, 'UTF8')::jsonb ->> 'n')::int AS n, e.message_count
      FROM outbound_messages m JOIN events e ON e.id = m.event_id JOIN payloads p ON p.key = m.payload_key
      WHERE m.project_id = ${p.projectId} GROUP BY m.event_id, p.data, e.message_count`;
    expect(byEvent).toHaveLength(40);
    for (const row of byEvent) {
      const answered = events[row.n]!;
      expect(row.event_id).toBe(answered.event_id);
      expect(row.ids).toEqual(sorted(answered.messages.map((m) => m.message_id)));
      expect(row.message_count).toBe(3);
    }
  });

  it('one batch, in arrival order: a repeat of a key answers its first event, a different request conflicts, holders from before win', async () => {
    const p = await projectWithEndpoints(t, 2, (i) => `https://hooks.example.com/keys/${i}`);
    const rec = recordingStatements(t.db);
    const fanout = new EventFanout(rec.db, new DatabasePayloadStore());
    const earlier = await fanout.submit(submission(p.projectId, { held: 1 }, { key: 'held' }));
    expect(earlier.kind).toBe('stored');
    rec.statements.length = 0;

    // Submitted in one turn of the event loop: one batch.
    const outcomes = await Promise.all([
      fanout.submit(submission(p.projectId, { k: 1 }, { key: 'k' })),
      fanout.submit(submission(p.projectId, { k: 1 }, { key: 'k' })),
      fanout.submit(submission(p.projectId, { k: 2 }, { key: 'k' })),
      fanout.submit(submission(p.projectId, { held: 1 }, { key: 'held' })),
      fanout.submit(submission(p.projectId, { held: 2 }, { key: 'held' })),
      fanout.submit(submission(p.projectId, { free: 1 })),
    ]);
    expect(outcomes.map((o) => o.kind)).toEqual(['stored', 'repeat', 'conflict', 'repeat', 'conflict', 'stored']);
    const first = stored(outcomes[0]!);
    expect(first.messages).toHaveLength(2);
    expect(outcomes[1]).toEqual({ kind: 'repeat', fannedOut: first });
    expect(outcomes[2]).toEqual({ kind: 'conflict', eventId: first.event.id });
    // The event from before, with the messages its own fan-out made.
    expect(outcomes[3]).toEqual({ kind: 'repeat', fannedOut: { event: { ...stored(earlier).event, created_at: expect.any(Date) }, messages: stored(earlier).messages } });
    expect((outcomes[3] as Extract<FanOutOutcome, { kind: 'repeat' }>).fannedOut.event.created_at.getTime()).toBe(stored(earlier).event.created_at.getTime());
    expect(outcomes[4]).toEqual({ kind: 'conflict', eventId: stored(earlier).event.id });
    // The keys' locks and the one fan-out statement, in one transaction.
    expect(rec.statements).toEqual(['SELECT count(pg_advisory_xact_lock($::int,', 'WITH input']);
    expect(await p.rows()).toEqual({ events: 3, messages: 6, jobs: 6, payloads: 3 });
    expect(await t.db.sql`SELECT 1 FROM events WHERE project_id = ${p.projectId} AND idempotency_key = 'k'`).toHaveLength(1);

    rec.statements.length = 0;
    const keyless = await Promise.all([1, 2, 3].map((n) => fanout.submit(submission(p.projectId, { n }))));
    expect(keyless.map((o) => o.kind)).toEqual(['stored', 'stored', 'stored']);
    expect(rec.statements).toEqual(['WITH input']);
    await fanout.idle();
  });

  it('an event the database refuses fails only its own request; the others of its batch are stored', async () => {
    const p = await projectWithEndpoints(t, 2, (i) => `https://hooks.example.com/poison/${i}`);
    await t.db.sql.execScript(`
      CREATE FUNCTION test_refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.event_type = 'order.poison' THEN RAISE EXCEPTION 'poison refused by the test'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER test_refuse_poison BEFORE INSERT ON outbound_messages FOR EACH ROW EXECUTE FUNCTION test_refuse_poison();`);
    try {
      const rec = recordingStatements(t.db);
      const fanout = new EventFanout(rec.db, new DatabasePayloadStore());
      const outcomes = await Promise.allSettled([
        fanout.submit(submission(p.projectId, { n: 1 })),
        fanout.submit(submission(p.projectId, { n: 2 }, { eventType: 'order.poison' })),
        fanout.submit(submission(p.projectId, { n: 3 }, { key: 'poison-neighbour' })),
      ]);
      expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.kind : 'rejected'))).toEqual(['stored', 'rejected', 'stored']);
      // The batch, then each event on its own.
      expect(rec.statements.filter((s) => s === 'WITH input')).toHaveLength(4);
      expect(await p.rows()).toEqual({ events: 2, messages: 4, jobs: 4, payloads: 2 });
      expect(await t.db.sql`SELECT 1 FROM events WHERE project_id = ${p.projectId} AND event_type = 'order.poison'`).toHaveLength(0);
    } finally {
      await t.db.sql.execScript('DROP TRIGGER test_refuse_poison ON outbound_messages; DROP FUNCTION test_refuse_poison();');
    }
  });
});

describe('a batch of events handed over to the worker of the same process', () => {
  let receiver: Receiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await createTestApp({
      env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile },
      // Three slots, and no poll: the jobs not handed over wait for the claim their NOTIFY or a slot set free wakes.
      worker: { concurrency: 3, requestTimeoutMs: 10_000, pollIntervalMs: 60_000 },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('leases no more than the free slots across the batch; the others are claimed; each message is delivered once', async () => {
    const route = receiver.route(() => ({ status: 200, body: 'ok', delayMs: 200 }));
    // The main project, which waitForMessage reads.
    const p = await projectWithEndpoints(t, 2, (i) => `${route.url}?endpoint=${i}`, t.main);
    const before = t.worker!.stats();
    const answers = await Promise.all(
      [1, 2, 3, 4].map((n) => t.request('POST', '/v1/events', { apiKey: p.apiKey, body: { event_type: 'order.created', owner_id: 'cus_1', payload: { n } } })),
    );
    const ids = answers.flatMap((res) => {
      expect(res.status, res.raw).toBe(202);
      return (res.body.data.messages as { message_id: string }[]).map((m) => m.message_id);
    });
    expect(ids).toHaveLength(8);
    for (const id of ids) expect(await waitForMessage(t, id, settled)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const after = t.worker!.stats();
    expect(after.handedOver - before.handedOver).toBeGreaterThanOrEqual(1);
    expect(after.handedOver - before.handedOver).toBeLessThanOrEqual(3);
    expect(after.handedOver - before.handedOver + after.claimed - before.claimed).toBe(8);
    expect(sorted(receiver.received(route.path).map((r) => String(r.headers['webhook-id'])))).toEqual(sorted(ids));
  });
});
