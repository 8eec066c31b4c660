import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuidv7 } from '@hookrelay/shared';
import type { Database, Sql } from '../../src/db/database.js';
import {
  applyOutcomes,
  insertAttempts,
  lockHeldJobs,
  releaseJobs,
  rescheduleJobs,
  restoreStatuses,
  type AttemptRecord,
} from '../../src/db/deliveries.js';
import { recordEndpointAttempts } from '../../src/db/endpoints.js';
import { insertProject } from '../../src/db/projects.js';
import { insertPullEndpoint } from '../../src/db/pull-endpoints.js';
import { insertPullEvents, type NewPullEvent } from '../../src/db/pull-events.js';
import { backend, createTestDatabase } from '../helpers/database.js';

/**
 * The statements of a delivery's result commit and of a claim's releases take a batch as arrays
 * (docs/architecture.md, Statements of fixed text): one text whatever the batch's size, so each
 * connection parses it once and the server can keep its plan, where a VALUES list made a new
 * statement, parsed and planned again, for every size. Fenced here by what the database itself
 * holds prepared, and by the bytes a hostile receiver's answer comes back as.
 */
let db: Database;
let projectId: string;
let pullEndpointId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  projectId = (await insertProject(db.sql, 'result-statements')).id;
  pullEndpointId = (
    await insertPullEndpoint(db.sql, {
      id: newUuidv7(),
      projectId,
      name: 'statements',
      description: '',
      retentionDays: 7,
      eventTypeSource: null,
      eventTypePath: null,
      maxBodyBytes: null,
      secretTokenHash: 'x'.repeat(64),
      expiresAt: null,
    })
  ).id;
});
afterAll(async () => {
  await db?.close();
});

const START = new Date('2026-12-01T10:00:00.123Z');

function attempts(n: number, text = 'HTTP 500'): AttemptRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    id: newUuidv7(),
    messageId: newUuidv7(),
    attemptNumber: i + 1,
    startedAt: START,
    responseStatus: i % 2 === 0 ? 500 : null,
    latencyMs: 12,
    error: text,
    responseBody: i % 2 === 0 ? text : null,
    workerId: 'w-1',
    resigned: i % 3 === 0,
  }));
}

function pullEvents(n: number, header = 'application/json'): NewPullEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    id: newUuidv7(),
    projectId,
    endpointId: pullEndpointId,
    eventType: i % 2 === 0 ? 'invoice.paid' : null,
    method: 'POST',
    query: '',
    contentType: 'application/json',
    sizeBytes: 2,
    payloadSha256: '0'.repeat(64),
    rawHeaders: [['content-type', header]],
    payloadKey: `pull/${i}`,
    ingestProcessingMs: 1,
    receivedAt: START,
  }));
}

/** Every statement of the result commit, the claim's releases and pull ingest, each once, with batches of `n`. */
async function runAll(sql: Sql, n: number): Promise<void> {
  const ids = Array.from({ length: n }, () => newUuidv7());
  const leaseId = newUuidv7();
  await lockHeldJobs(sql, ids.map((messageId) => ({ messageId, leaseId })));
  await insertAttempts(sql, attempts(n));
  await applyOutcomes(
    sql,
    'outbound',
    ids.map((messageId, i) => ({
      messageId,
      status: i % 2 === 0 ? 'pending_retry' : 'succeeded',
      attemptNumber: 1,
      startedAt: START,
      finishedAt: START,
      responseStatus: i % 2 === 0 ? 500 : 200,
      latencyMs: 3,
      processingMs: 1,
      error: i % 2 === 0 ? 'HTTP 500' : null,
      nextAttemptAt: i % 2 === 0 ? START : null,
    })),
  );
  await recordEndpointAttempts(
    sql,
    ids.map((_, i) => ({ endpointId: `ep_${i}`, succeeded: i % 2 === 1, startedAt: START, finishedAt: START, error: i % 2 === 1 ? null : 'HTTP 500', endedMessage: false })),
    { pauseAfterSeconds: 60, minFailedMessages: 5 },
  );
  await rescheduleJobs(sql, ids.map((messageId, i) => ({ messageId, runAt: START, attemptBase: i % 2 === 0 ? 1 : null })));
  await releaseJobs(sql, leaseId, ids.map((messageId) => ({ messageId, delayMs: 10 })));
  await restoreStatuses(sql, 'outbound', ids.map((messageId) => ({ messageId, status: 'queued' as const })));
  await insertPullEvents(sql, pullEvents(n));
}

describe('the statements that take a batch', () => {
  it('keep one text whatever the batch size: nothing more is prepared for batches of 2, 5 and 40 than for 1', async () => {
    // PostgreSQL: a transaction keeps one connection, whose prepared statements the driver names.
    // PGlite: autocommit statements are prepared under names of its own (db/pglite-prepared.ts).
    const onPostgres = backend() === 'postgres';
    const check = async (sql: Sql) => {
      const prepared = async () =>
        (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE ${onPostgres} OR name LIKE 'hookrelay_%'`)[0]!.n;
      await runAll(sql, 1);
      const afterOne = await prepared();
      for (const n of [2, 5, 40]) await runAll(sql, n);
      expect(await prepared()).toBe(afterOne);
    };
    if (onPostgres) await db.sql.begin(check);
    else await check(db.sql);
  });

  it('store a receiver’s answer byte for byte through the array encoding: quotes, backslashes, braces, commas, NULL and newlines', async () => {
    const hostile = `{"a":"b\\"c"}, NULL \\N {}\n\t'é' 🦊 ,"`;
    const batch = [...attempts(2, hostile), ...attempts(1, 'NULL'), ...attempts(1, '')];
    await insertAttempts(db.sql, batch);
    const rows = await db.sql<{ id: string; error: string | null; response_body: string | null; resigned: boolean; started_at: Date; response_status: number | null }>`
      SELECT id, error, response_body, resigned, started_at, response_status FROM delivery_attempts WHERE id = ANY(${batch.map((a) => a.id)}::uuid[])`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(rows).toHaveLength(batch.length);
    for (const a of batch) {
      const row = byId.get(a.id)!;
      expect(row.error).toBe(a.error);
      expect(row.response_body).toBe(a.responseBody);
      expect(row.resigned).toBe(a.resigned);
      expect(row.response_status).toBe(a.responseStatus);
      expect(new Date(row.started_at).toISOString()).toBe(START.toISOString());
    }
  });

  it('pull ingest stores raw headers of any content through the array encoding', async () => {
    const header = `a"b\\c {x,y} NULL 🦊 \u00e9`;
    const events = pullEvents(3, header);
    await insertPullEvents(db.sql, events);
    const rows = await db.sql<{ raw_headers: [string, string][]; event_type: string | null }>`
      SELECT raw_headers, event_type FROM pull_events WHERE id = ANY(${events.map((e) => e.id)}::uuid[]) ORDER BY id`;
    expect(rows.map((r) => r.raw_headers)).toEqual(events.map(() => [['content-type', header]]));
    expect(rows.map((r) => r.event_type)).toEqual(['invoice.paid', null, 'invoice.paid']);
  });
});
