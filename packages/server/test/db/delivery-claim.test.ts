import type { FastifyBaseLogger } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newUuidv7 } from '@hookrelay/shared';
import type { Sql } from '../../src/db/database.js';
import { claimDueJobs, ENDPOINT_DELETED_ERROR, loadOutboundContexts } from '../../src/db/deliveries.js';
import { updateEndpoint } from '../../src/db/endpoints.js';
import {
  claimDeliveries,
  ClockOffset,
  isOutbound,
  loadContexts,
  markSending,
  parkPaused,
  reserveRateLimits,
  type ClaimContext,
  type Release,
} from '../../src/delivery/claim.js';
import { DatabasePayloadStore } from '../../src/storage/payload-store.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

/**
 * The delivery claim's steps against the database, each on its own, and one whole claim: the
 * decisions that the delivery API tests reach only through timing (a resume or a pause that lands
 * while a claim runs, a rate limit's horizon, a message deleted during the claim).
 */

let t: TestApp;
beforeAll(async () => {
  // No worker: the test claims.
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});
beforeEach(async () => {
  await t.db.sql`DELETE FROM delivery_jobs`;
});

const silent = { warn: () => {}, info: () => {}, error: () => {}, debug: () => {} } as unknown as FastifyBaseLogger;

function context(horizonMs = 1500): ClaimContext {
  return { sql: t.db.sql, workerId: 'claim-test', leaseSeconds: 30, horizonMs, payloadStore: new DatabasePayloadStore(), log: silent, clock: new ClockOffset() };
}

async function endpoint(settings: Record<string, unknown> = {}): Promise<string> {
  const res = await t.request('POST', '/v1/endpoints', { body: { url: 'https://receiver.example/hooks', ...settings } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id as string;
}

async function send(endpointId: string, count = 1): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: endpointId, payload: { n: i } } });
    expect(res.status, res.raw).toBe(202);
    ids.push(res.body.data.message_id as string);
  }
  return ids;
}

/** Leases every due job in `tx`, as a claim does first, with the contexts it loads. */
async function lease(tx: Sql) {
  const leaseId = newUuidv7();
  const jobs = await claimDueJobs(tx, { workerId: 'claim-test', leaseId, limit: 100, leaseSeconds: 30, maxBytes: 1 << 30 });
  const contexts = await loadContexts(tx, jobs, true);
  const outbound = contexts.all.filter(isOutbound);
  return { leaseId, jobs, contexts, outbound };
}

const job = (messageId: string) =>
  t.db.sql<{ parked: boolean; leased: boolean; due_in_ms: number }>`
    SELECT run_at = 'infinity' AS parked, lease_id IS NOT NULL AS leased,
           CASE WHEN run_at = 'infinity' THEN -1 ELSE round(extract(epoch FROM run_at - now()) * 1000)::int END AS due_in_ms
    FROM delivery_jobs WHERE message_id = ${messageId}`;

describe('parkPaused', () => {
  it('parks the jobs of an endpoint still paused under its lock, and releases at once those of one resumed first', async () => {
    const stillPaused = await endpoint();
    const resumed = await endpoint();
    const [parkedId] = await send(stillPaused);
    const [resumedId] = await send(resumed);
    for (const id of [stillPaused, resumed]) await updateEndpoint(t.db.sql, t.main.projectId, id, { paused: true });
    const release = await t.db.sql.begin(async (tx) => {
      const { leaseId, outbound } = await lease(tx);
      expect(outbound.map((c) => c.paused)).toEqual([true, true]);
      // The resume commits between the claim's read and its lock.
      await updateEndpoint(tx, t.main.projectId, resumed, { paused: false });
      return parkPaused(tx, leaseId, outbound);
    });
    expect(release).toEqual([{ messageId: resumedId, delayMs: 0 }]);
    expect(await job(parkedId!)).toEqual([{ parked: true, leased: false, due_in_ms: -1 }]);
    // Not yet released: the claim's last step does that.
    expect((await job(resumedId!))[0]).toMatchObject({ parked: false, leased: true });
  });
});

describe('reserveRateLimits', () => {
  it('keeps the slots within the horizon as local times a slot apart, and gives the later ones back with the wait for theirs', async () => {
    const limited = await endpoint({ rate_limit_rps: 1, burst: 1 });
    const unlimited = await endpoint();
    const limitedIds = await send(limited, 3);
    const [freeId] = await send(unlimited);
    const before = Date.now();
    const { notBefore, release } = await t.db.sql.begin(async (tx) => {
      const { outbound } = await lease(tx);
      const released: Release[] = [];
      return { notBefore: await reserveRateLimits(context(1500), tx, outbound, released), release: released };
    });
    // 1 per second from an idle bucket: at once, one second later, and (past the horizon) two seconds later.
    expect(notBefore.has(freeId!)).toBe(false);
    expect(notBefore.size).toBe(2);
    const slots = [...notBefore.values()].sort((a, b) => a - b);
    expect(slots[1]! - slots[0]!).toBe(1000);
    expect(slots[0]!).toBeGreaterThanOrEqual(before - 1000);
    expect(slots[0]!).toBeLessThanOrEqual(Date.now() + 1000);
    expect(release).toHaveLength(1);
    expect(release[0]).toEqual({ messageId: expect.any(String), delayMs: 2000 });
    expect(limitedIds).toContain(release[0]!.messageId);
    expect([...notBefore.keys(), release[0]!.messageId].sort()).toEqual([...limitedIds].sort());
    const [row] = await t.db.sql<{ ahead_ms: number }>`
      SELECT round(extract(epoch FROM rate_limit_tat - now()) * 1000)::int AS ahead_ms FROM endpoints WHERE id = ${limited}`;
    // The bucket's next slot is stored two intervals ahead: the third request competes for it again.
    expect(row!.ahead_ms).toBeGreaterThan(1000);
    expect(row!.ahead_ms).toBeLessThanOrEqual(2000);
  });

  it('gives back at once every delivery of an endpoint paused while the claim waited for its lock', async () => {
    const limited = await endpoint({ rate_limit_rps: 10 });
    const ids = await send(limited, 2);
    const { notBefore, release } = await t.db.sql.begin(async (tx) => {
      const { outbound } = await lease(tx);
      await updateEndpoint(tx, t.main.projectId, limited, { paused: true });
      const released: Release[] = [];
      return { notBefore: await reserveRateLimits(context(), tx, outbound, released), release: released };
    });
    expect(notBefore.size).toBe(0);
    expect(release.map((r) => r.delayMs)).toEqual([0, 0]);
    expect(release.map((r) => r.messageId).sort()).toEqual([...ids].sort());
  });
});

describe('markSending', () => {
  it('marks `delivering` what is sent now; a message deleted during the claim is neither marked nor sent', async () => {
    const ep = await endpoint();
    const [sent, deleted, released] = await send(ep, 3);
    const result = await t.db.sql.begin(async (tx) => {
      const { contexts, outbound } = await lease(tx);
      await tx`UPDATE outbound_messages SET deleted_at = now() WHERE id = ${deleted}`;
      return markSending(tx, outbound, [{ messageId: released!, delayMs: 0 }], contexts);
    });
    expect(result.sending.map((c) => c.id)).toEqual([sent]);
    expect(result.deletedMeanwhile).toEqual([deleted]);
    const statuses = await t.db.sql<{ id: string; status: string }>`
      SELECT id, status FROM outbound_messages WHERE id IN (${sent}, ${deleted}, ${released}) ORDER BY id`;
    expect(Object.fromEntries(statuses.map((s) => [s.id, s.status]))).toEqual({ [sent!]: 'delivering', [deleted!]: 'queued', [released!]: 'queued' });
  });
});

describe('claimDeliveries', () => {
  it('leases the due jobs, settles in the same commit those that cannot be sent, and returns the rest to send', async () => {
    const live = await endpoint();
    const gone = await endpoint();
    const [sendId] = await send(live);
    const [deletedId, noPayloadId] = await send(live, 2);
    const [goneId] = await send(gone);
    await t.db.sql`UPDATE outbound_messages SET deleted_at = now() WHERE id = ${deletedId}`;
    await t.db.sql`DELETE FROM payloads WHERE key = ${`outbound/${noPayloadId}`}`;
    await t.db.sql`UPDATE endpoints SET deleted_at = now() WHERE id = ${gone}`;

    const claim = await claimDeliveries(context(), 10, 1 << 30);
    expect(claim).toMatchObject({ claimed: 4, released: 0 });
    expect(claim.deliveries.map((d) => ({ id: d.context.id, notBefore: d.notBefore, payload: d.payload.toString() }))).toEqual([
      { id: sendId, notBefore: 0, payload: '{"n":0}' },
    ]);
    const jobs = await t.db.sql<{ message_id: string; lease_id: string }>`SELECT message_id, lease_id::text AS lease_id FROM delivery_jobs`;
    expect(jobs).toEqual([{ message_id: sendId, lease_id: claim.leaseId }]);
    const messages = await t.db.sql<{ id: string; status: string; last_error: string | null; attempt_count: number }>`
      SELECT id, status, last_error, attempt_count FROM outbound_messages WHERE id IN (${sendId}, ${deletedId}, ${noPayloadId}, ${goneId})`;
    expect(Object.fromEntries(messages.map(({ id, ...rest }) => [id, rest]))).toEqual({
      [sendId!]: { status: 'delivering', last_error: null, attempt_count: 0 },
      [deletedId!]: { status: 'queued', last_error: null, attempt_count: 0 },
      [noPayloadId!]: { status: 'failed_permanent', last_error: 'payload is no longer stored', attempt_count: 0 },
      [goneId!]: { status: 'failed_permanent', last_error: ENDPOINT_DELETED_ERROR, attempt_count: 0 },
    });
    expect(await claimDeliveries(context(), 10, 1 << 30)).toMatchObject({ claimed: 0, deliveries: [], released: 0 });
  });

  it('sends an event’s one payload with each of its messages, read from the database once', async () => {
    const { apiKey } = await t.createProject();
    for (let i = 0; i < 3; i++) {
      expect((await t.request('POST', '/v1/endpoints', { apiKey, body: { url: `https://receiver.example/fanout/${i}` } })).status).toBe(201);
    }
    const event = await t.request('POST', '/v1/events', { apiKey, body: { event_type: 'shared.payload', payload: { shared: true } } });
    expect(event.status, event.raw).toBe(202);
    const ids: string[] = event.body.data.messages.map((m: { message_id: string }) => m.message_id);
    expect(ids).toHaveLength(3);
    const loaded = await loadOutboundContexts(t.db.sql, ids, true);
    expect(loaded.filter((c) => c.payload).map((c) => Buffer.from(c.payload!).toString())).toEqual(['{"shared":true}']);

    const claim = await claimDeliveries(context(), 10, 1 << 30);
    expect(claim).toMatchObject({ claimed: 3, released: 0 });
    expect(claim.deliveries.map((d) => [d.context.id, d.payload.toString()]).sort()).toEqual(ids.map((id) => [id, '{"shared":true}']).sort());
  });

  it('gives back without an attempt what the rate limit does not let through within the horizon', async () => {
    const limited = await endpoint({ rate_limit_rps: 1, burst: 1 });
    const ids = await send(limited, 2);
    const claim = await claimDeliveries(context(500), 10, 1 << 30);
    expect(claim).toMatchObject({ claimed: 2, released: 1 });
    expect(claim.deliveries).toHaveLength(1);
    const released = ids.find((id) => id !== claim.deliveries[0]!.context.id)!;
    const [row] = await job(released);
    expect(row).toMatchObject({ parked: false, leased: false });
    expect(row!.due_in_ms).toBeGreaterThan(500);
    expect(row!.due_in_ms).toBeLessThanOrEqual(1000);
  });
});
