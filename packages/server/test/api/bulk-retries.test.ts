import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BulkJobOut } from '@hookrelay/shared';
import { claimJob, runChunk, type ChunkContext } from '../../src/bulk/claim.js';
import { BulkJobWorker } from '../../src/bulk/worker.js';
import type { Sql } from '../../src/db/database.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { interceptSql } from '../helpers/database.js';

/**
 * POST /v1/bulk-retries (docs/api.md, Bulk retries and replays): a dry run counts, a job retries
 * what it counted chunk by chunk as POST /v1/messages/{id}/retry does, shows its progress, stops
 * within a chunk when cancelled, and is finished by another worker when its worker's lease ran out,
 * each message retried once. The job's steps (bulk/claim.ts) are driven one at a time here, as two
 * workers would; the last test runs the worker engine itself. No delivery worker runs: a retried
 * message stays `queued` with its delivery job.
 */
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** A project of its own, with helpers bound to its key. */
async function project() {
  const { apiKey, projectId } = await t.createProject();
  const request = (method: string, url: string, body?: unknown) => t.request(method, url, { apiKey, ...(body !== undefined ? { body } : {}) });
  const endpoint = async (fields: Record<string, unknown> = {}) => {
    const res = await request('POST', '/v1/endpoints', { url: `https://example.com/bulk/${Math.random().toString(36).slice(2)}`, ...fields });
    expect(res.status, res.raw).toBe(201);
    return res.body.data.id as string;
  };
  /** Messages that failed for good, oldest first (no delivery job left). */
  const failed = async (endpointId: string, count: number, fields: Record<string, unknown> = {}) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const res = await request('POST', '/v1/messages', { endpoint_id: endpointId, payload: { i }, ...fields });
      expect(res.status, res.raw).toBe(202);
      ids.push(res.body.data.message_id);
    }
    await t.db.sql`UPDATE outbound_messages SET status = 'failed_permanent', attempt_count = 1, failed_at = now() WHERE id = ANY(${ids}::uuid[])`;
    await t.db.sql`DELETE FROM delivery_jobs WHERE message_id = ANY(${ids}::uuid[])`;
    return ids;
  };
  /** An endpoint of its own with `count` messages failed for good, and the time before them. */
  const backlog = async (count: number) => {
    const id = await endpoint();
    const after = since();
    return { endpoint: id, after, ids: await failed(id, count) };
  };
  const count = async (filter: Record<string, unknown>) => {
    const res = await request('POST', '/v1/bulk-retries', { filter, dry_run: true });
    expect(res.status, res.raw).toBe(200);
    return res.body.data.matched as number;
  };
  const start = async (filter: Record<string, unknown>) => {
    const res = await request('POST', '/v1/bulk-retries', { filter });
    expect(res.status, res.raw).toBe(202);
    return BulkJobOut.parse(res.body.data);
  };
  const job = async (id: string) => BulkJobOut.parse((await request('GET', `/v1/bulk-retries/${id}`)).body.data);
  const statuses = async (ids: string[]) =>
    (await t.db.sql<{ id: string; status: string; job: boolean }>`
      SELECT m.id, m.status, EXISTS (SELECT 1 FROM delivery_jobs j WHERE j.message_id = m.id) AS job
      FROM outbound_messages m WHERE m.id = ANY(${ids}::uuid[]) ORDER BY m.id`).map((r) => `${r.status}${r.job ? '+job' : ''}`);
  return { apiKey, projectId, request, endpoint, failed, backlog, count, start, job, statuses };
}

const since = () => new Date(Date.now() - 60_000).toISOString();

/** The ids each statement retried (the requeue of db/deliveries.ts), in the order the statements ran. */
function recordingRetries(sql: Sql): { sql: Sql; retried: string[] } {
  const retried: string[] = [];
  const wrapped = interceptSql(sql, async (strings, values, run) => {
    const result = await run();
    if (strings.join('?').includes('INSERT INTO delivery_jobs AS j')) retried.push(...(result as { message_id: string }[]).map((r) => r.message_id));
    return result;
  });
  return { sql: wrapped, retried };
}

const worker = (sql: Sql, name: string, chunkSize = 2): ChunkContext => ({ sql, workerId: name, leaseSeconds: 30, chunkSize });

/** Runs claimed chunks until the job is done; returns each chunk's outcome. */
async function runToEnd(ctx: ChunkContext): Promise<string[]> {
  const outcomes: string[] = [];
  for (let i = 0; i < 100; i++) {
    const claimed = await claimJob(ctx);
    if (claimed === undefined) return outcomes;
    outcomes.push(await runChunk(ctx, claimed));
  }
  throw new Error('the job did not end within 100 chunks');
}

describe('POST /v1/bulk-retries: the filter', () => {
  it('needs created_after, so that no job runs over every message ever stored', async () => {
    const res = await t.request('POST', '/v1/bulk-retries', { body: { filter: {} } });
    expectError(res, 400, 'INVALID_REQUEST', 'body.filter.created_after: is required');
    expect(res.body.error.details).toEqual([{ path: 'body.filter.created_after', message: expect.stringContaining('is required') }]);
  });

  it('refuses bad statuses, times and unknown fields, naming each', async () => {
    const created_after = since();
    expectError(await t.request('POST', '/v1/bulk-retries', { body: { filter: { created_after, status: [] } } }), 400, 'INVALID_REQUEST', 'body.filter.status: must name at least one status');
    expectError(await t.request('POST', '/v1/bulk-retries', { body: { filter: { created_after, status: ['lost'] } } }), 400, 'INVALID_REQUEST', 'body.filter.status.0');
    expectError(await t.request('POST', '/v1/bulk-retries', { body: { filter: { created_after: 'yesterday' } } }), 400, 'INVALID_REQUEST', 'body.filter.created_after: must be an RFC 3339 date-time');
    expectError(await t.request('POST', '/v1/bulk-retries', { body: { filter: { created_after, endpoint: 'x' } } }), 400, 'INVALID_REQUEST', 'body.filter.endpoint: unknown field');
    expectError(await t.request('POST', '/v1/bulk-retries', { body: { filter: { created_after }, dry_run: 'yes' } }), 400, 'INVALID_REQUEST', 'body.dry_run');
    expectError(await t.request('GET', '/v1/bulk-retries/01900000-0000-7000-8000-00000000000b'), 404, 'NOT_FOUND');
  });

  it('a dry run counts the live messages of live endpoints the filter matches, and starts nothing', async () => {
    const p = await project();
    const a = await p.endpoint({ owner_id: 'customer-a' });
    const b = await p.endpoint({ owner_id: 'customer-b' });
    const gone = await p.endpoint();
    const after = since();
    await p.failed(a, 3, { event_type: 'invoice.paid' });
    await p.failed(a, 1, { event_type: 'invoice.voided' });
    await p.failed(b, 2);
    await p.failed(gone, 1);
    const [deleted] = await p.failed(a, 1);
    expect((await p.request('DELETE', `/v1/messages/${deleted}`)).status).toBe(200);
    expect((await p.request('DELETE', `/v1/endpoints/${gone}`)).status).toBe(200);
    const succeeded = await p.request('POST', '/v1/messages', { endpoint_id: a, payload: {} });
    await t.db.sql`UPDATE outbound_messages SET status = 'succeeded' WHERE id = ${succeeded.body.data.message_id}::uuid`;
    const before = new Date().toISOString();

    expect(await p.count({ created_after: after })).toBe(6);
    expect(await p.count({ created_after: after, endpoint_id: a })).toBe(4);
    expect(await p.count({ created_after: after, owner_id: 'customer-b' })).toBe(2);
    expect(await p.count({ created_after: after, event_type: 'invoice.paid' })).toBe(3);
    expect(await p.count({ created_after: after, status: ['failed_permanent', 'succeeded'] })).toBe(7);
    expect(await p.count({ created_after: after, created_before: after })).toBe(0);
    expect(await p.count({ created_after: before })).toBe(0);
    expect(await p.count({ created_after: after, endpoint_id: `ep_${'0'.repeat(32)}` })).toBe(0);
    // Another project's key counts its own messages only.
    expect((await t.request('POST', '/v1/bulk-retries', { body: { filter: { created_after: after }, dry_run: true } })).body.data).toEqual({ matched: 0 });
    expect((await t.db.sql`SELECT id FROM bulk_jobs WHERE project_id = ${p.projectId}::uuid`).length).toBe(0);
  });
});

describe('a bulk retry job', () => {
  it('retries exactly the messages its dry run counted, oldest first, a chunk at a time, and shows its progress', async () => {
    const p = await project();
    const endpoint = await p.endpoint();
    const after = since();
    const ids = await p.failed(endpoint, 5);
    const [other] = await p.failed(endpoint, 1, { event_type: 'other' });
    expect(await p.count({ created_after: after })).toBe(6);
    const started = await p.start({ created_after: after, status: ['failed_permanent'] });
    expect(started).toEqual({
      id: expect.any(String),
      kind: 'outbound',
      status: 'running',
      filter: { endpoint_id: null, owner_id: null, event_type: null, status: ['failed_permanent'], created_after: new Date(after).toISOString(), created_before: null },
      matched: 6,
      done: 0,
      skipped: 0,
      failed: 0,
      last_error: null,
      created_at: expect.any(String),
      finished_at: null,
    });
    const { sql, retried } = recordingRetries(t.db.sql);
    const ctx = worker(sql, 'one', 4);

    const first = await claimJob(ctx);
    expect(first?.id).toBe(started.id);
    expect(await runChunk(ctx, first!)).toBe('more');
    expect(await p.job(started.id)).toMatchObject({ status: 'running', done: 4, finished_at: null });
    expect(await runToEnd(ctx)).toEqual(['finished']);

    const all = [...ids, other!].sort();
    expect([...retried].sort()).toEqual(all);
    const finished = await p.job(started.id);
    expect(finished).toMatchObject({ status: 'done', matched: 6, done: 6, skipped: 0, failed: 0, last_error: null });
    expect(Date.parse(finished.finished_at!)).toBeGreaterThanOrEqual(Date.parse(finished.created_at));
    expect(await p.statuses(all)).toEqual(all.map(() => 'queued+job'));
    const list = await p.request('GET', '/v1/bulk-retries?limit=1');
    expect(list.body.data.map((j: { id: string }) => j.id)).toEqual([started.id]);
    expect(list.body.meta).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('counts messages deleted meanwhile as skipped and those of a deleted endpoint as failed, with the reason', async () => {
    const p = await project();
    const kept = await p.endpoint();
    const gone = await p.endpoint();
    const after = since();
    const [first, deleted, third] = await p.failed(kept, 3);
    const [lost] = await p.failed(gone, 1);
    const started = await p.start({ created_after: after });
    expect(started.matched).toBe(4);
    expect((await p.request('DELETE', `/v1/messages/${deleted}`)).status).toBe(200);
    expect((await p.request('DELETE', `/v1/endpoints/${gone}`)).status).toBe(200);
    expect(await runToEnd(worker(t.db.sql, 'one', 10))).toEqual(['finished']);
    expect(await p.job(started.id)).toMatchObject({
      status: 'done',
      done: 2,
      skipped: 1,
      failed: 1,
      last_error: `endpoint ${gone} was deleted: its messages cannot be delivered again`,
    });
    expect(await p.statuses([first!, third!])).toEqual(['queued+job', 'queued+job']);
    expect(await p.statuses([lost!])).toEqual(['failed_permanent']);
  });

  it('that matches nothing is done when it is created', async () => {
    const p = await project();
    const started = await p.start({ created_after: new Date().toISOString() });
    expect(started).toMatchObject({ status: 'done', matched: 0, done: 0 });
    expect(started.finished_at).not.toBeNull();
  });
});

describe('cancel', () => {
  it('stops the job within the chunk in flight: that chunk counts, no other follows', async () => {
    const p = await project();
    const { ids, after } = await p.backlog(6);
    const started = await p.start({ created_after: after });
    const ctx = worker(t.db.sql, 'one');
    expect(await runChunk(ctx, (await claimJob(ctx))!)).toBe('more');

    // The second chunk holds its transaction open (the job row locked) until the cancel is under way.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const inside = new Promise<void>((resolve) => (holding = resolve));
    const slow = interceptSql(t.db.sql, async (strings, _values, run) => {
      if (strings.join('?').includes('UPDATE bulk_jobs SET after_id')) {
        holding();
        await held;
      }
      return run();
    });
    const slowCtx = worker(slow, 'one');
    const chunk = runChunk(slowCtx, (await claimJob(slowCtx))!);
    await inside;
    const cancel = p.request('POST', `/v1/bulk-retries/${started.id}/cancel`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    expect(await chunk).toBe('more');
    const cancelled = BulkJobOut.parse((await cancel).body.data);
    expect(cancelled).toMatchObject({ id: started.id, status: 'cancelled', done: 4 });
    expect(cancelled.finished_at).not.toBeNull();

    expect(await claimJob(ctx)).toBeUndefined();
    expect(await p.statuses(ids)).toEqual([...ids.slice(0, 4).map(() => 'queued+job'), 'failed_permanent', 'failed_permanent']);
    // Cancelling an ended job answers it as it is.
    expect(BulkJobOut.parse((await p.request('POST', `/v1/bulk-retries/${started.id}/cancel`)).body.data)).toEqual(cancelled);
    expect(await p.job(started.id)).toEqual(cancelled);
  });
});

describe('a worker that stops without finishing its claim', () => {
  it('leaves the job to another once its lease runs out, and each message is retried once', async () => {
    const p = await project();
    const { ids, after } = await p.backlog(7);
    const started = await p.start({ created_after: after });
    const { sql, retried } = recordingRetries(t.db.sql);
    const a = worker(sql, 'worker-a');
    const b = worker(sql, 'worker-b');

    expect(await runChunk(a, (await claimJob(a))!)).toBe('more');
    // worker-a claims the next chunk and is never heard of again.
    const stale = await claimJob(a);
    expect(stale?.id).toBe(started.id);
    expect(await claimJob(b)).toBeUndefined();
    await t.db.sql`UPDATE bulk_jobs SET locked_until = now() - interval '1 second' WHERE id = ${started.id}::uuid`;
    expect(await runToEnd(b)).toEqual(['more', 'more', 'finished']);
    // Were it to come back, its claim is no longer the job's.
    expect(await runChunk(a, stale!)).toBe('lost');

    expect([...retried].sort()).toEqual([...ids].sort());
    expect(await p.job(started.id)).toMatchObject({ status: 'done', matched: 7, done: 7, skipped: 0, failed: 0 });
    const [row] = await t.db.sql<{ claims: number; locked_by: string | null }>`SELECT claims, locked_by FROM bulk_jobs WHERE id = ${started.id}::uuid`;
    expect(row).toEqual({ claims: 5, locked_by: null });
  });
});

describe('the worker engine', () => {
  it('waits while the deliveries due now fill a chunk, then takes the job chunk after chunk as they drain', async () => {
    const p = await project();
    const { endpoint, after, ids } = await p.backlog(5);
    // Live traffic: messages waiting for a delivery worker (none runs here), due now.
    for (let i = 0; i < 2; i++) expect((await p.request('POST', '/v1/messages', { endpoint_id: endpoint, payload: { live: i } })).status).toBe(202);
    const engine = new BulkJobWorker({ db: t.db, log: t.app.log }, { chunkSize: 2, chunkDelayMs: 10, pollIntervalMs: 60_000 });
    await engine.start();
    try {
      const started = await p.start({ created_after: after, status: ['failed_permanent'] });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await p.job(started.id)).toMatchObject({ status: 'running', done: 0 });
      // A delivery worker's part: the due deliveries leave the queue (here, pushed an hour on).
      const deadline = Date.now() + 10_000;
      let job = await p.job(started.id);
      while (job.status === 'running' && Date.now() < deadline) {
        await t.db.sql`UPDATE delivery_jobs SET run_at = now() + interval '1 hour' WHERE locked_until IS NULL AND run_at <= now()`;
        await new Promise((resolve) => setTimeout(resolve, 20));
        job = await p.job(started.id);
      }
      expect(job).toMatchObject({ status: 'done', done: 5 });
      expect(engine.stats()).toEqual({ chunks: 3, finished: 1 });
      expect(await p.statuses(ids)).toEqual(ids.map(() => 'queued+job'));
    } finally {
      await engine.stop();
    }
  });
});
