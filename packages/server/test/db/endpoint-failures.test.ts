import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEndpointId } from '@hookrelay/shared';
import type { Database } from '../../src/db/database.js';
import { findEndpoint, insertEndpoint, recordEndpointAttempts, softDeleteEndpoint, updateEndpoint, type EndpointAttempt } from '../../src/db/endpoints.js';
import { insertProject } from '../../src/db/projects.js';
import { createTestDatabase } from '../helpers/database.js';

/**
 * The failure tracking of outbound endpoints (db/endpoints.ts, recordEndpointAttempts) on both
 * databases, with attempt times chosen by the test: when an endpoint counts as failing, what a
 * success sets back, and when it is paused — for the whole time, with enough messages failed for
 * good, only once, never when the setting is 0, when it is paused already or when it is gone.
 */
let db: Database;
let projectId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await insertProject(db.sql, 'endpoint-failures')).id;
});
afterAll(async () => {
  await db?.close();
});

const FIVE_DAYS = 5 * 24 * 3600;
const OPTIONS = { pauseAfterSeconds: FIVE_DAYS, minFailedMessages: 5 };
const T0 = Date.parse('2026-11-01T00:00:00.000Z');
/** A time `seconds` after T0. */
const at = (seconds: number) => new Date(T0 + seconds * 1000);

async function endpoint(ownerId: string | null = null): Promise<string> {
  const row = await insertEndpoint(db.sql, {
    id: newEndpointId(),
    projectId,
    url: 'https://hooks.example.com/failing',
    description: '',
    rateLimitRps: 0,
    burst: 0,
    headers: {},
    expiresAt: null,
    subscription: { ownerId, eventTypes: null, channels: null },
    retentionDays: null,
  });
  return row.id;
}

/** An attempt that started at `seconds` and took one. */
function attempt(endpointId: string, seconds: number, outcome: 'ok' | 'retry' | 'ended', error = 'HTTP 500'): EndpointAttempt {
  return {
    endpointId,
    succeeded: outcome === 'ok',
    startedAt: at(seconds),
    finishedAt: at(seconds + 1),
    error: outcome === 'ok' ? null : error,
    endedMessage: outcome === 'ended',
  };
}

const tracking = async (id: string) => {
  const [row] = await db.sql<{ failing_since: Date | null; failed_messages: number; paused: boolean; paused_reason: string | null; paused_at: Date | null }>`
    SELECT failing_since, failed_messages, paused, paused_reason, paused_at FROM endpoints WHERE id = ${id}`;
  return row!;
};

/** Five messages ended for good, the first failure at T0, the last attempt at `lastSeconds`. */
const fiveEnded = (id: string, lastSeconds: number) => [0, 10, 20, 30].map((s) => attempt(id, s, 'ended')).concat(attempt(id, lastSeconds, 'ended'));

describe('recordEndpointAttempts', () => {
  it('marks an endpoint failing from its first failed attempt, counts its messages failed for good, and a success sets both back', async () => {
    const id = await endpoint();
    expect(await recordEndpointAttempts(db.sql, [attempt(id, 0, 'retry')], OPTIONS)).toEqual([]);
    expect(await tracking(id)).toMatchObject({ failing_since: at(0), failed_messages: 0 });
    await recordEndpointAttempts(db.sql, [attempt(id, 5, 'ended'), attempt(id, 6, 'retry')], OPTIONS);
    // The first failure stays the start.
    expect(await tracking(id)).toMatchObject({ failing_since: at(0), failed_messages: 1 });

    await recordEndpointAttempts(db.sql, [attempt(id, 7, 'ok')], OPTIONS);
    expect(await tracking(id)).toMatchObject({ failing_since: null, failed_messages: 0 });
  });

  it('takes a batch’s attempts in the order they finished: failures after its last success count, those before do not', async () => {
    const id = await endpoint();
    await recordEndpointAttempts(db.sql, [attempt(id, 0, 'ended')], OPTIONS);
    await recordEndpointAttempts(db.sql, [attempt(id, 30, 'ended'), attempt(id, 10, 'ended'), attempt(id, 20, 'ok'), attempt(id, 40, 'retry')], OPTIONS);
    expect(await tracking(id)).toMatchObject({ failing_since: at(30), failed_messages: 1 });
    await recordEndpointAttempts(db.sql, [attempt(id, 50, 'ended'), attempt(id, 60, 'ok')], OPTIONS);
    expect(await tracking(id)).toMatchObject({ failing_since: null, failed_messages: 0 });
  });

  it('pauses an endpoint whose attempts have all failed for the whole time with five messages failed for good, once, with the last error', async () => {
    const id = await endpoint('cus_7');
    // Five ended, but the last attempt is a second short of five days after the first failure.
    expect(await recordEndpointAttempts(db.sql, fiveEnded(id, FIVE_DAYS - 2), OPTIONS)).toEqual([]);
    expect(await tracking(id)).toMatchObject({ paused: false, failed_messages: 5 });

    const paused = await recordEndpointAttempts(db.sql, [attempt(id, FIVE_DAYS, 'retry', 'connect ECONNREFUSED 127.0.0.1:1')], OPTIONS);
    expect(paused).toEqual([{ id, project_id: projectId, owner_id: 'cus_7', failing_since: at(0), last_error: 'connect ECONNREFUSED 127.0.0.1:1' }]);
    const row = await tracking(id);
    expect(row).toMatchObject({ paused: true, paused_reason: 'failing', failing_since: at(0), failed_messages: 5 });
    expect(row.paused_at).toBeInstanceOf(Date);
    expect((await findEndpoint(db.sql, projectId, id))?.paused_reason).toBe('failing');

    // Paused already: a later failure (an attempt that was in flight) pauses nothing again.
    expect(await recordEndpointAttempts(db.sql, [attempt(id, FIVE_DAYS + 10, 'ended')], OPTIONS)).toEqual([]);
    expect(await tracking(id)).toMatchObject({ paused: true, paused_reason: 'failing', failed_messages: 6 });
  });

  it('needs five messages failed for good: four and any number of retries over the whole time pause nothing', async () => {
    const id = await endpoint();
    await recordEndpointAttempts(db.sql, [0, 10, 20, 30].map((s) => attempt(id, s, 'ended')), OPTIONS);
    expect(await recordEndpointAttempts(db.sql, [attempt(id, FIVE_DAYS, 'retry'), attempt(id, 2 * FIVE_DAYS, 'retry')], OPTIONS)).toEqual([]);
    expect(await tracking(id)).toMatchObject({ paused: false, failed_messages: 4 });
    expect(await recordEndpointAttempts(db.sql, [attempt(id, 2 * FIVE_DAYS + 10, 'ended')], OPTIONS)).toHaveLength(1);
  });

  it('a success inside the time starts the count again', async () => {
    const id = await endpoint();
    await recordEndpointAttempts(db.sql, fiveEnded(id, 40), OPTIONS);
    await recordEndpointAttempts(db.sql, [attempt(id, 50, 'ok')], OPTIONS);
    expect(await recordEndpointAttempts(db.sql, [attempt(id, FIVE_DAYS + 100, 'ended')], OPTIONS)).toEqual([]);
    expect(await tracking(id)).toMatchObject({ paused: false, failing_since: at(FIVE_DAYS + 100), failed_messages: 1 });
  });

  it('pauses nothing with a setting of 0, at a paused endpoint or at a deleted one', async () => {
    const never = await endpoint();
    expect(await recordEndpointAttempts(db.sql, fiveEnded(never, 10 * FIVE_DAYS), { pauseAfterSeconds: 0, minFailedMessages: 5 })).toEqual([]);
    expect(await tracking(never)).toMatchObject({ paused: false, failed_messages: 5 });

    const manual = await endpoint();
    await updateEndpoint(db.sql, projectId, manual, { paused: true });
    expect(await recordEndpointAttempts(db.sql, fiveEnded(manual, FIVE_DAYS), OPTIONS)).toEqual([]);
    expect(await tracking(manual)).toMatchObject({ paused: true, paused_reason: 'manual' });

    const deleted = await endpoint();
    await softDeleteEndpoint(db.sql, projectId, deleted);
    expect(await recordEndpointAttempts(db.sql, fiveEnded(deleted, FIVE_DAYS), OPTIONS)).toEqual([]);
    expect(await tracking(deleted)).toMatchObject({ paused: false });
  });

  it('a resume of a paused endpoint starts its count again; one of an endpoint not paused keeps it', async () => {
    const id = await endpoint();
    expect(await recordEndpointAttempts(db.sql, fiveEnded(id, FIVE_DAYS), OPTIONS)).toHaveLength(1);
    await updateEndpoint(db.sql, projectId, id, { paused: false });
    expect(await tracking(id)).toMatchObject({ paused: false, paused_reason: null, paused_at: null, failing_since: null, failed_messages: 0 });
    expect(await recordEndpointAttempts(db.sql, [attempt(id, FIVE_DAYS + 10, 'ended')], OPTIONS)).toEqual([]);

    await updateEndpoint(db.sql, projectId, id, { paused: false });
    expect(await tracking(id)).toMatchObject({ failing_since: at(FIVE_DAYS + 10), failed_messages: 1 });
  });

  it('writes nothing for successes at an endpoint that is not failing', async () => {
    const id = await endpoint();
    const [before] = await db.sql<{ xmin: string }>`SELECT xmin::text AS xmin FROM endpoints WHERE id = ${id}`;
    await recordEndpointAttempts(db.sql, [attempt(id, 0, 'ok'), attempt(id, 5, 'ok')], OPTIONS);
    const [after] = await db.sql<{ xmin: string }>`SELECT xmin::text AS xmin FROM endpoints WHERE id = ${id}`;
    expect(after!.xmin).toBe(before!.xmin);
  });
});
