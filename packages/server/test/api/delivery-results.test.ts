import type { FastifyBaseLogger } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuidv7 } from '@hookrelay/shared';
import type { Database } from '../../src/db/database.js';
import { EventFanout } from '../../src/delivery/event-fanout.js';
import { ResultWriter, type AttemptResult } from '../../src/delivery/results.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { interceptSql } from '../helpers/database.js';

/**
 * The worker's result writer against a database that goes away: results of an outage are written
 * once it is back (each once, one warning), a stopping worker gives up after a few tries, and a
 * write the database refuses fails at once without holding up the results behind it.
 */

let t: TestApp;
let urlCounter = 0;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** A stored outbound message (its job queued, leased to nobody). */
async function message(): Promise<string> {
  const ep = await t.request('POST', '/v1/endpoints', { body: { url: `https://hooks.example.com/results/${++urlCounter}` } });
  expect(ep.status, ep.raw).toBe(201);
  const res = await t.request('POST', '/v1/messages', { body: { endpoint_id: ep.body.data.id, payload: { n: urlCounter } } });
  expect(res.status, res.raw).toBe(202);
  return res.body.data.message_id;
}

function attempt(messageId: string): AttemptResult {
  const now = new Date();
  return {
    kind: 'outbound',
    messageId,
    leaseId: newUuidv7(),
    attemptNumber: 1,
    attemptInDelivery: 1,
    startedAt: now,
    finishedAt: now,
    processingMs: 0,
    result: { status: 200, headers: {}, body: 'ok', latencyMs: 3, error: null, aborted: false, bodyError: null },
  };
}

/** A writer over `db` (a failing endpoint is never paused: these results all succeed). */
const newWriter = (db: Database, log: FastifyBaseLogger) =>
  new ResultWriter(db, [1], 'test-worker', log, () => undefined, { pauseAfterSeconds: 0, events: new EventFanout(db, t.app.services.payloadStore) });

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/** The app's database, whose statements fail while `failing()` says so; counts the statements tried. */
/** A database whose `failing(n)` error, if any, answers the first statement of the n-th write (its jobs' lock). */
function flaky(failing: (write: number) => Error | null): { db: Database; tried: () => number } {
  let tried = 0;
  const sql = interceptSql(t.db.sql, (strings, _values, run) => {
    if (!strings.join('').includes('FOR UPDATE OF j')) return run();
    const error = failing(++tried);
    return error ? Promise.reject(error) : run();
  });
  return { db: { ...t.db, sql }, tried: () => tried };
}

function recordingLog() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_obj: unknown, msg?: string) => void lines.push({ level, msg: msg ?? '' });
  const log = { warn: at('warn'), error: at('error'), info: at('info'), debug: at('debug') } as unknown as FastifyBaseLogger;
  return { log, lines };
}

const attemptRows = (ids: string[]) => t.db.sql<{ message_id: string; response_status: number }>`
  SELECT message_id, response_status FROM delivery_attempts WHERE message_id = ANY(${ids}::uuid[])`;

describe('ResultWriter', () => {
  it('writes the results of a database outage once it is back, each once, with one warning', async () => {
    const ids = [await message(), await message()];
    const { db, tried } = flaky((n) => (n <= 2 ? refused() : null));
    const { log, lines } = recordingLog();
    const writer = newWriter(db, log);
    // One turn: one batch, written again as a whole after each failure.
    await Promise.all(ids.map((id) => writer.push(attempt(id))));
    await writer.close();
    expect(tried()).toBeGreaterThan(2);
    expect((await attemptRows(ids)).map((r) => r.message_id).sort()).toEqual([...ids].sort());
    expect(lines).toEqual([{ level: 'warn', msg: 'delivery worker: database unavailable; retrying to record delivery results' }]);
  });

  it('once closed, gives up after five tries: the results are rejected and nothing is written', async () => {
    const id = await message();
    const { db, tried } = flaky(() => refused());
    const { log } = recordingLog();
    const writer = newWriter(db, log);
    const pushed = writer.push(attempt(id)).then(
      () => 'written',
      (error: { code?: string }) => error.code,
    );
    await writer.close();
    expect(await pushed).toBe('ECONNREFUSED');
    expect(tried()).toBe(5);
    expect(await attemptRows([id])).toEqual([]);
  });

  it('a write the database refuses fails its results at once with an error line, and the next results are written', async () => {
    const [bad, good] = [await message(), await message()];
    const { db, tried } = flaky((n) => (n === 1 ? new Error('refused by the test') : null));
    const { log, lines } = recordingLog();
    const writer = newWriter(db, log);
    const first = await writer.push(attempt(bad)).then(
      () => 'written',
      (error: Error) => error.message,
    );
    expect(first).toBe('refused by the test');
    expect(tried()).toBe(1);
    await writer.push(attempt(good));
    await writer.close();
    expect((await attemptRows([bad, good])).map((r) => r.message_id)).toEqual([good]);
    expect(lines).toEqual([{ level: 'error', msg: 'delivery worker: could not record delivery results' }]);
  });
});
