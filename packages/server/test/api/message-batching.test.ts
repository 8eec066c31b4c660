import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { LocalDeliveryWorker } from '../../src/delivery/local-worker.js';
import { MessageBatcher, type MessageSubmission, type SubmissionOutcome } from '../../src/delivery/message-batcher.js';
import { DeliveryWorker } from '../../src/delivery/worker.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { DatabasePayloadStore } from '../../src/storage/payload-store.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { interceptSql, recordingStatements } from '../helpers/database.js';
import { Receiver, settled, waitForMessage } from '../helpers/receiver.js';

/**
 * Group-committed POST /v1/messages: concurrent submissions share one statement, yet each request
 * gets the answer it would have had alone; a refused batch stores nothing. In a process with a
 * worker, new messages are leased at enqueue and handed to it without a claim.
 */

let urlCounter = 0;
async function createEndpoint(t: TestApp, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.request('POST', '/v1/endpoints', { body: { url: `https://hooks.example.com/batch/${++urlCounter}`, ...extra } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id;
}

/** A submission as the route builds it from `payload`. */
function submission(t: TestApp, endpointId: string, payload: unknown, extra: { key?: string; eventType?: string } = {}): MessageSubmission {
  const bytes = Buffer.from(JSON.stringify(payload));
  const payloadSha256 = sha256Hex(bytes);
  return {
    projectId: t.main.projectId,
    endpointId,
    eventType: extra.eventType ?? null,
    idempotencyKey: extra.key ?? null,
    requestSha256: sha256Hex(JSON.stringify([endpointId, extra.eventType ?? null, 'application/json', 'json', payloadSha256])),
    payloadFormat: 'json',
    contentType: 'application/json',
    payload: bytes,
    payloadSha256,
  };
}

const UNKNOWN_ENDPOINT = `ep_${'0'.repeat(32)}`;

const countRows = async (t: TestApp, endpointId: string) => {
  const [row] = await t.db.sql<{ messages: number; payloads: number; jobs: number }>`
    SELECT (SELECT count(*)::int FROM outbound_messages WHERE endpoint_id = ${endpointId}) AS messages,
           (SELECT count(*)::int FROM payloads p JOIN outbound_messages m ON m.payload_key = p.key WHERE m.endpoint_id = ${endpointId}) AS payloads,
           (SELECT count(*)::int FROM delivery_jobs WHERE destination = ${endpointId}) AS jobs`;
  return row!;
};

describe('group commit of POST /v1/messages (no worker)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('concurrent POSTs with mixed duplicate keys: one message per key, and each request gets its own answer', async () => {
    const endpointId = await createEndpoint(t);
    type Sent = { key: string | null; payload: unknown; endpointId: string };
    const sent: Sent[] = [];
    for (let round = 0; round < 5; round++) {
      sent.push({ key: 'mix-a', payload: { key: 'a' }, endpointId });
      sent.push({ key: 'mix-b', payload: { key: 'b' }, endpointId });
      // Five different requests for one key: whichever commits first holds it, the others conflict.
      sent.push({ key: 'mix-c', payload: { key: 'c', round }, endpointId });
      sent.push({ key: null, payload: { round }, endpointId });
      sent.push({ key: 'mix-d', payload: { key: 'd' }, endpointId: UNKNOWN_ENDPOINT });
    }
    const answers = await Promise.all(
      sent.map((s) =>
        t.request('POST', '/v1/messages', { body: { endpoint_id: s.endpointId, payload: s.payload }, ...(s.key ? { headers: { 'idempotency-key': s.key } } : {}) }),
      ),
    );

    const stored = await t.db.sql<{ id: string; idempotency_key: string | null; data: Uint8Array }>`
      SELECT m.id, m.idempotency_key, p.data FROM outbound_messages m JOIN payloads p ON p.key = m.payload_key WHERE m.endpoint_id = ${endpointId}`;
    const byKey = new Map(stored.filter((m) => m.idempotency_key !== null).map((m) => [m.idempotency_key!, m]));
    expect(stored.filter((m) => m.idempotency_key === 'mix-a')).toHaveLength(1);
    expect(stored.filter((m) => m.idempotency_key === 'mix-b')).toHaveLength(1);
    expect(stored.filter((m) => m.idempotency_key === 'mix-c')).toHaveLength(1);
    expect(stored.filter((m) => m.idempotency_key === null)).toHaveLength(5);
    expect(await t.db.sql`SELECT 1 FROM outbound_messages WHERE idempotency_key = 'mix-d'`).toHaveLength(0);

    const keyless = new Set<string>();
    sent.forEach((s, i) => {
      const res = answers[i]!;
      if (s.endpointId === UNKNOWN_ENDPOINT) {
        expectError(res, 404, 'ENDPOINT_NOT_FOUND');
        return;
      }
      if (s.key === null) {
        expect(res.status, res.raw).toBe(202);
        keyless.add(res.body.data.message_id);
        return;
      }
      const holder = byKey.get(s.key)!;
      if (Buffer.from(holder.data).toString() === JSON.stringify(s.payload)) {
        expect(res.status, res.raw).toBe(202);
        expect(res.body.data).toMatchObject({ message_id: holder.id, status: 'queued' });
      } else {
        expectError(res, 409, 'IDEMPOTENCY_CONFLICT', holder.id);
      }
    });
    expect(keyless.size).toBe(5);
    // Repeats answer the same record as the request that stored it.
    const a = answers.filter((_, i) => sent[i]!.key === 'mix-a').map((r) => r.body.data);
    expect(new Set(a.map((d) => JSON.stringify(d))).size).toBe(1);
    expect(answers.filter((r) => r.status === 409)).toHaveLength(4);
    expect(await countRows(t, endpointId)).toEqual({ messages: 8, payloads: 8, jobs: 8 });
  });

  it('one batch, in arrival order: an earlier unknown endpoint is 404, later repeats return the first, holders from before win', async () => {
    const endpointId = await createEndpoint(t);
    const rec = recordingStatements(t.db);
    const batcher = new MessageBatcher(rec.db, new DatabasePayloadStore());
    const earlier = await batcher.submit(submission(t, endpointId, { held: 1 }, { key: 'order-held' }));
    expect(earlier.kind).toBe('stored');
    const heldId = (earlier as Extract<SubmissionOutcome, { kind: 'stored' }>).message.id;
    rec.statements.length = 0;

    // Submitted in one turn of the event loop: one batch.
    const outcomes = await Promise.all([
      batcher.submit(submission(t, UNKNOWN_ENDPOINT, { k: 1 }, { key: 'order-k' })),
      batcher.submit(submission(t, endpointId, { k: 1 }, { key: 'order-k' })),
      batcher.submit(submission(t, endpointId, { k: 1 }, { key: 'order-k' })),
      batcher.submit(submission(t, endpointId, { k: 2 }, { key: 'order-k' })),
      batcher.submit(submission(t, UNKNOWN_ENDPOINT, { k: 1 }, { key: 'order-k' })),
      batcher.submit(submission(t, endpointId, { held: 1 }, { key: 'order-held' })),
      batcher.submit(submission(t, endpointId, { held: 2 }, { key: 'order-held' })),
      batcher.submit(submission(t, endpointId, { free: 1 })),
      batcher.submit(submission(t, UNKNOWN_ENDPOINT, { free: 2 })),
    ]);
    const firstK = outcomes[1]!;
    expect(firstK.kind).toBe('stored');
    const firstId = (firstK as Extract<SubmissionOutcome, { kind: 'stored' }>).message.id;
    expect(outcomes.map((o) => o.kind)).toEqual(['endpoint_not_found', 'stored', 'repeat', 'conflict', 'conflict', 'repeat', 'conflict', 'stored', 'endpoint_not_found']);
    expect(outcomes[2]).toEqual({ kind: 'repeat', message: (firstK as Extract<SubmissionOutcome, { kind: 'stored' }>).message });
    expect(outcomes[3]).toEqual({ kind: 'conflict', messageId: firstId });
    expect(outcomes[4]).toEqual({ kind: 'conflict', messageId: firstId });
    expect(outcomes[5]).toMatchObject({ kind: 'repeat', message: { id: heldId, status: 'queued' } });
    expect(outcomes[6]).toEqual({ kind: 'conflict', messageId: heldId });
    // The key locks and the one enqueue statement, in one transaction.
    expect(rec.statements).toEqual(['SELECT count(pg_advisory_xact_lock($::int,', 'WITH input']);
    expect(await countRows(t, endpointId)).toEqual({ messages: 3, payloads: 3, jobs: 3 });

    rec.statements.length = 0;
    const keyless = await Promise.all([1, 2, 3, 4].map((n) => batcher.submit(submission(t, endpointId, { n }))));
    expect(keyless.map((o) => o.kind)).toEqual(['stored', 'stored', 'stored', 'stored']);
    expect(rec.statements).toEqual(['WITH input']);
  });

  it('a batch the database refuses answers each request with an error and stores nothing', async () => {
    const endpointId = await createEndpoint(t);
    // Fails the statement after its payload and message rows are written.
    await t.db.sql.execScript(`
      CREATE FUNCTION test_refuse_jobs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
      CREATE TRIGGER test_refuse_jobs BEFORE INSERT ON delivery_jobs FOR EACH ROW EXECUTE FUNCTION test_refuse_jobs();`);
    try {
      const [payloadsBefore] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM payloads`;
      const answers = await Promise.all(
        [0, 1, 2, 3, 4, 5].map((i) =>
          t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { i } }, ...(i % 2 ? { headers: { 'idempotency-key': `refused-${i}` } } : {}) }),
        ),
      );
      for (const res of answers) expectError(res, 500, 'INTERNAL_ERROR', 'internal error');
      for (const res of answers) expect(res.raw).not.toContain('refused by the test');
      expect(await countRows(t, endpointId)).toEqual({ messages: 0, payloads: 0, jobs: 0 });
      const [payloadsAfter] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM payloads`;
      expect(payloadsAfter!.n).toBe(payloadsBefore!.n);

      // At the batcher: the whole batch first, then each submission on its own; all refused.
      const rec = recordingStatements(t.db);
      const batcher = new MessageBatcher(rec.db, new DatabasePayloadStore());
      const settledOutcomes = await Promise.allSettled([1, 2, 3].map((n) => batcher.submit(submission(t, endpointId, { n }))));
      expect(settledOutcomes.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(rec.statements).toEqual(['WITH input', 'WITH input', 'WITH input', 'WITH input']);
      expect(await countRows(t, endpointId)).toEqual({ messages: 0, payloads: 0, jobs: 0 });
    } finally {
      await t.db.sql.execScript('DROP TRIGGER test_refuse_jobs ON delivery_jobs; DROP FUNCTION test_refuse_jobs();');
    }
    expect((await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: 1 } })).status).toBe(202);
  });

  it('a submission the database refuses fails only its own request', async () => {
    const endpointId = await createEndpoint(t);
    await t.db.sql.execScript(`
      CREATE FUNCTION test_refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.event_type = 'poison' THEN RAISE EXCEPTION 'poison refused by the test'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER test_refuse_poison BEFORE INSERT ON outbound_messages FOR EACH ROW EXECUTE FUNCTION test_refuse_poison();`);
    try {
      const batcher = new MessageBatcher(t.db, new DatabasePayloadStore());
      const outcomes = await Promise.allSettled([
        batcher.submit(submission(t, endpointId, { n: 1 })),
        batcher.submit(submission(t, endpointId, { n: 2 }, { eventType: 'poison' })),
        batcher.submit(submission(t, endpointId, { n: 3 }, { key: 'poison-neighbour' })),
      ]);
      expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.kind : 'rejected'))).toEqual(['stored', 'rejected', 'stored']);
      expect(await countRows(t, endpointId)).toEqual({ messages: 2, payloads: 2, jobs: 2 });

      const answers = await Promise.all(
        ['ok', 'poison', 'ok'].map((eventType, i) => t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { i }, event_type: eventType } })),
      );
      expect(answers.map((r) => r.status)).toEqual([202, 500, 202]);
      expect(await countRows(t, endpointId)).toEqual({ messages: 4, payloads: 4, jobs: 4 });
    } finally {
      await t.db.sql.execScript('DROP TRIGGER test_refuse_poison ON outbound_messages; DROP FUNCTION test_refuse_poison();');
    }
  });

  it('a database outage fails the whole batch at once, without retrying each submission', async () => {
    const endpointId = await createEndpoint(t);
    const statements: string[] = [];
    const down: Database = {
      ...t.db,
      sql: interceptSql(t.db.sql, (strings) => {
        statements.push(strings[0]!.trim().split(/\s+/)[0]!);
        return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
      }),
    };
    const batcher = new MessageBatcher(down, new DatabasePayloadStore());
    const outcomes = await Promise.allSettled([1, 2, 3].map((n) => batcher.submit(submission(t, endpointId, { n }))));
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : o.status))).toEqual(['ECONNREFUSED', 'ECONNREFUSED', 'ECONNREFUSED']);
    expect(statements).toEqual(['WITH']);
  });
});

describe('hand-over to the worker of the same process', () => {
  let receiver: Receiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await createTestApp({
      env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '0.3' },
      // No poll: a claim happens only when something wakes the worker.
      worker: { concurrency: 3, requestTimeoutMs: 5000, pollIntervalMs: 60_000 },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  async function endpoint(delayMs = 0, extra: Record<string, unknown> = {}) {
    const route = receiver.route(() => ({ status: 200, body: 'ok', delayMs }));
    const res = await t.request('POST', '/v1/endpoints', { body: { url: route.url, ...extra } });
    expect(res.status, res.raw).toBe(201);
    return { id: res.body.data.id as string, path: route.path };
  }
  const send = async (endpointId: string, payload: unknown = { hello: 'world' }) => {
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload } });
    expect(res.status, res.raw).toBe(202);
    expect(res.body.data.status).toBe('queued');
    return res.body.data.message_id as string;
  };

  it('a new message is leased in the enqueue and delivered without a claim; a long attempt shows `delivering`', async () => {
    const slow = await endpoint(2000);
    const before = t.worker!.stats();
    const id = await send(slow.id);
    const [job] = await t.db.sql<{ locked_by: string; leased: boolean; claims: number }>`
      SELECT locked_by, lease_id IS NOT NULL AND locked_until > now() AS leased, claims FROM delivery_jobs WHERE message_id = ${id}`;
    expect(job).toEqual({ locked_by: t.worker!.workerId, leased: true, claims: 1 });
    await receiver.waitFor(slow.path, 1);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await t.request('GET', `/v1/messages/${id}`)).body.data).toMatchObject({ status: 'delivering', attempt_count: 0 });
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 1, response_status: 200 });
    const after = t.worker!.stats();
    expect(after.handedOver - before.handedOver).toBe(1);
    expect(after.claimed - before.claimed).toBe(0);
    expect(receiver.received(slow.path).map((r) => r.headers['webhook-id'])).toEqual([id]);
    expect(await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ${id}`).toHaveLength(0);
  });

  it('a fast attempt goes from queued straight to its result', async () => {
    const fast = await endpoint();
    const id = await send(fast.id);
    const m = await waitForMessage(t, id, settled);
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    await new Promise((r) => setTimeout(r, 700));
    expect((await t.request('GET', `/v1/messages/${id}`)).body.data).toMatchObject({ status: 'succeeded', attempt_count: 1 });
  });

  it('paused and rate-limited endpoints are not handed over: their jobs wait for a claim', async () => {
    const paused = await endpoint();
    await t.request('POST', `/v1/endpoints/${paused.id}/pause`);
    const limited = await endpoint(0, { rate_limit_rps: 50 });
    const before = t.worker!.stats();
    const parkedId = await send(paused.id);
    const limitedId = await send(limited.id);
    const m = await waitForMessage(t, limitedId, settled);
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const deadline = Date.now() + 5000;
    let parked: { parked: boolean; leased: boolean } | undefined;
    while (Date.now() < deadline) {
      [parked] = await t.db.sql<{ parked: boolean; leased: boolean }>`
        SELECT run_at = 'infinity' AS parked, lease_id IS NOT NULL AS leased FROM delivery_jobs WHERE message_id = ${parkedId}`;
      if (parked?.parked) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(parked).toEqual({ parked: true, leased: false });
    const after = t.worker!.stats();
    expect(after.handedOver - before.handedOver).toBe(0);
    expect(after.claimed - before.claimed).toBe(2);
    expect(receiver.received(paused.path)).toHaveLength(0);
  });

  it('a claim reads database payloads with the message: one whose payload row is gone ends failed_permanent, no attempt', async () => {
    const ep = await endpoint();
    await t.request('POST', `/v1/endpoints/${ep.id}/pause`);
    const gone = await send(ep.id, { gone: true });
    const kept = await send(ep.id, { kept: true });
    await t.db.sql`DELETE FROM payloads WHERE key = ${`outbound/${gone}`}`;
    const before = t.worker!.stats();
    expect((await t.request('POST', `/v1/endpoints/${ep.id}/resume`)).status).toBe(200);
    expect(await waitForMessage(t, gone, settled)).toMatchObject({ status: 'failed_permanent', attempt_count: 0, last_error: 'payload is no longer stored' });
    expect(await waitForMessage(t, kept, settled)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const received = receiver.received(ep.path);
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([kept]);
    expect(received[0]!.body.toString()).toBe('{"kept":true}');
    expect(t.worker!.stats().claimed - before.claimed).toBeGreaterThanOrEqual(2);
  });

  it('no more than the free slots are handed over; the others are claimed, each delivered once', async () => {
    const slow = await endpoint(400);
    const before = t.worker!.stats();
    const ids = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((n) => send(slow.id, { n })));
    for (const id of ids) expect(await waitForMessage(t, id, settled)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const after = t.worker!.stats();
    expect(after.handedOver - before.handedOver).toBeGreaterThanOrEqual(1);
    expect(after.handedOver - before.handedOver).toBeLessThanOrEqual(3);
    expect(after.handedOver - before.handedOver + after.claimed - before.claimed).toBe(7);
    const received = receiver.received(slow.path);
    expect(received.map((r) => String(r.headers['webhook-id'])).sort()).toEqual([...ids].sort());
    // Never more than 3 at once: a fourth request starts only after one of the three before it was answered.
    const arrivals = received.map((r) => r.at).sort((a, b) => a - b);
    for (let i = 3; i < arrivals.length; i++) expect(arrivals[i]! - arrivals[i - 3]!).toBeGreaterThanOrEqual(395);
  });

  it('a message handed to a worker that never sends it is delivered by another once its lease runs out', async () => {
    const ep = await endpoint();
    // This process's worker "crashes" right after the commit: it takes the lease and sends nothing.
    const lost: string[] = [];
    const crashed: LocalDeliveryWorker = {
      workerId: 'crashed-worker',
      reserveHandoff: (max) => ({ workerId: 'crashed-worker', leaseId: '01900000-0000-7000-8000-00000000c0de', leaseSeconds: 1, slots: max }),
      acceptHandoff: (_lease, deliveries) => void lost.push(...deliveries.map((d) => d.messageId)),
      returnHandoff: () => {},
      wake: () => {},
    };
    await t.worker!.stop();
    const rescuer = new DeliveryWorker({ ...t.app.services, db: { ...t.db }, log: t.app.log }, { requestTimeoutMs: 2000, leaseSeconds: 10, reapIntervalMs: 200, pollIntervalMs: 200 });
    // The enqueue of a process whose worker is the crashed one.
    const batcher = new MessageBatcher(t.db, new DatabasePayloadStore(), { localWorker: crashed });
    try {
      await rescuer.start();
      const outcome = await batcher.submit(submission(t, ep.id, { hello: 'world' }));
      expect(outcome.kind).toBe('stored');
      const id = (outcome as Extract<SubmissionOutcome, { kind: 'stored' }>).message.id;
      expect(lost).toEqual([id]);
      const m = await waitForMessage(t, id, settled, { timeoutMs: 10_000 });
      expect(m).toMatchObject({ status: 'succeeded', attempt_count: 1 });
      expect(receiver.received(ep.path).map((r) => r.headers['webhook-id'])).toEqual([id]);
      expect(rescuer.stats().claimed).toBe(1);
    } finally {
      await batcher.idle();
      await rescuer.stop();
    }
  });
});

describe('the worker\'s byte budget', () => {
  let receiver: Receiver;
  let t: TestApp;
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await createTestApp({
      env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile },
      // Room for ten deliveries by count, for three of these payloads by bytes.
      worker: { concurrency: 10, maxBytes: 2500, requestTimeoutMs: 5000, pollIntervalMs: 60_000 },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('holds no more payload bytes in flight than the budget: a claim stops before the payload that would pass it', async () => {
    const route = receiver.route(() => ({ status: 200, body: 'ok', delayMs: 400 }));
    const created = await t.request('POST', '/v1/endpoints', { body: { url: route.url } });
    const endpointId = created.body.data.id as string;
    // Paused, so that all six wait for one claim instead of being handed over one by one.
    await t.request('POST', `/v1/endpoints/${endpointId}/pause`);
    const ids: string[] = [];
    for (let n = 0; n < 6; n++) {
      const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { n, pad: 'x'.repeat(980) } } });
      expect(res.status, res.raw).toBe(202);
      ids.push(res.body.data.message_id);
    }
    const [size] = await t.db.sql<{ min: number; max: number }>`SELECT min(size_bytes) AS min, max(size_bytes) AS max FROM outbound_messages WHERE endpoint_id = ${endpointId}`;
    expect(size!.min).toBeGreaterThan(2500 / 3);
    expect(size!.max).toBeLessThan(2500 / 2);
    expect((await t.request('POST', `/v1/endpoints/${endpointId}/resume`)).status).toBe(200);
    for (const id of ids) expect(await waitForMessage(t, id, settled)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const received = receiver.received(route.path);
    expect(received.map((r) => String(r.headers['webhook-id'])).sort()).toEqual([...ids].sort());
    // Three at once: a fourth request starts only after one of the three before it was answered.
    const arrivals = received.map((r) => r.at).sort((a, b) => a - b);
    for (let i = 3; i < arrivals.length; i++) expect(arrivals[i]! - arrivals[i - 3]!).toBeGreaterThanOrEqual(395);
    expect(arrivals[2]! - arrivals[0]!).toBeLessThan(395);
  });

  it('a payload larger than the whole budget still goes, alone', async () => {
    const route = receiver.route(() => ({ status: 200, body: 'ok' }));
    const created = await t.request('POST', '/v1/endpoints', { body: { url: route.url } });
    // Paused, then resumed: the message goes through a claim.
    await t.request('POST', `/v1/endpoints/${created.body.data.id}/pause`);
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: created.body.data.id, payload: { pad: 'x'.repeat(5000) } } });
    expect(res.status, res.raw).toBe(202);
    // A claim parks the paused endpoint's job first; the one that counts comes after the resume.
    const deadline = Date.now() + 5000;
    let parked = false;
    while (!parked && Date.now() < deadline) {
      const [job] = await t.db.sql<{ parked: boolean }>`SELECT run_at = 'infinity' AND lease_id IS NULL AS parked FROM delivery_jobs WHERE message_id = ${res.body.data.message_id}`;
      parked = job?.parked === true;
      if (!parked) await new Promise((r) => setTimeout(r, 25));
    }
    expect(parked).toBe(true);
    const claimedBefore = t.worker!.stats().claimed;
    expect((await t.request('POST', `/v1/endpoints/${created.body.data.id}/resume`)).status).toBe(200);
    expect(await waitForMessage(t, res.body.data.message_id, settled)).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    expect(receiver.received(route.path)).toHaveLength(1);
    expect(t.worker!.stats().claimed - claimedBefore).toBe(1);
  });
});
