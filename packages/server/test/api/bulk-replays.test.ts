import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BulkJobOut, StreamServerFrame } from '@hookrelay/shared';
import { claimJob, runChunk, type ChunkContext } from '../../src/bulk/claim.js';
import { BulkJobWorker } from '../../src/bulk/worker.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';
import { interceptSql } from '../helpers/database.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * POST /v1/inbound-endpoints/{id}/replays (docs/api.md, Bulk retries and replays): a dry run
 * counts, a job replays as POST /v1/inbound-messages/{id}/replay does: in forward mode each message
 * is delivered again, in order; in cli mode each is pushed again, in order, to the listeners
 * connected now, without moving their cursors. A worker that dies inside a chunk leaves the job to
 * another, and each message is replayed once (`replay_count`). The delivery worker sends one request
 * at a time, so that the order requests arrive in is the order sent.
 */
let t: TestApp;
let receiver: Receiver;
let baseUrl: string;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({ env: receiver.deliveryEnv(), worker: { concurrency: 1, pollIntervalMs: 200 } });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const since = () => new Date(Date.now() - 60_000).toISOString();
/** The bulk job engine, in chunks of two. */
const bulkWorker = () => new BulkJobWorker({ db: t.db, log: t.app.log }, { chunkSize: 2, chunkDelayMs: 10, pollIntervalMs: 200 });

async function endpoint(fields: Record<string, unknown>): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'replays', ...fields } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ingest(token: string, count: number, eventType = 'order.created'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: JSON.stringify({ type: eventType, n: i }), headers: { 'content-type': 'application/json' } });
    expect(res.statusCode, res.body).toBe(200);
    ids.push(res.json().data.message_id);
  }
  return ids;
}

async function replays(endpointId: string, body: Record<string, unknown>) {
  return t.request('POST', `/v1/inbound-endpoints/${endpointId}/replays`, { body });
}

async function waitForJob(id: string): Promise<BulkJobOut> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const job = BulkJobOut.parse((await t.request('GET', `/v1/bulk-retries/${id}`)).body.data);
    if (job.status !== 'running') return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still running: ${JSON.stringify(job)}`);
    await sleep(25);
  }
}

const replayCounts = async (ids: string[]) =>
  (await t.db.sql<{ replay_count: number }>`SELECT replay_count FROM inbound_messages WHERE id = ANY(${ids}::uuid[]) ORDER BY id`).map((r) => r.replay_count);

describe('POST /v1/inbound-endpoints/{id}/replays', () => {
  it('needs received_after and a live endpoint of the project', async () => {
    const { id } = await endpoint({ mode: 'cli' });
    const res = await replays(id, { dry_run: true });
    expectError(res, 400, 'INVALID_REQUEST', 'body.received_after: is required');
    expectError(await replays(id, { received_after: since(), status: ['nope'] }), 400, 'INVALID_REQUEST', 'body.status.0');
    expectError(await replays('01900000-0000-7000-8000-00000000000c', { received_after: since() }), 404, 'ENDPOINT_NOT_FOUND');
    expect((await t.request('DELETE', `/v1/inbound-endpoints/${id}`)).status).toBe(200);
    expectError(await replays(id, { received_after: since() }), 404, 'ENDPOINT_NOT_FOUND');
  });

  it('a dry run counts the live messages of the window with its statuses and event type', async () => {
    const { id, token } = await endpoint({ mode: 'cli' });
    const after = since();
    const ids = await ingest(token, 3);
    await ingest(token, 2, 'order.cancelled');
    expect((await t.request('DELETE', `/v1/inbound-messages/${ids[0]}`)).status).toBe(200);
    await t.db.sql`UPDATE inbound_messages SET status = 'failed_permanent' WHERE id = ${ids[1]!}::uuid`;
    const count = async (body: Record<string, unknown>) => (await replays(id, { ...body, dry_run: true })).body.data.matched;
    expect(await count({ received_after: after })).toBe(4);
    expect(await count({ received_after: after, event_type: 'order.cancelled' })).toBe(2);
    expect(await count({ received_after: after, status: ['failed_permanent'] })).toBe(1);
    expect(await count({ received_after: after, received_before: after })).toBe(0);
    expect((await t.db.sql`SELECT id FROM bulk_jobs WHERE inbound_endpoint_id = ${id}::uuid`).length).toBe(0);
  });
});

describe('an inbound replay job', () => {
  it('delivers each message of a forward-mode endpoint again, in order', async () => {
    const route = receiver.route();
    const { id, token } = await endpoint({ url: route.url });
    const after = since();
    const ids = await ingest(token, 5);
    const first = (await receiver.waitFor(route.path, 5)).slice();
    const engine = bulkWorker();
    await engine.start();
    try {
      const res = await replays(id, { received_after: after });
      expect(res.status, res.raw).toBe(202);
      const started = BulkJobOut.parse(res.body.data);
      expect(started).toMatchObject({
        kind: 'inbound',
        status: 'running',
        matched: 5,
        filter: { inbound_endpoint_id: id, event_type: null, status: null, received_after: after, received_before: null },
      });
      expect(await waitForJob(started.id)).toMatchObject({ status: 'done', done: 5, skipped: 0, failed: 0 });
      const all = await receiver.waitFor(route.path, 10);
      const order = (requests: typeof all) => requests.map((r) => JSON.parse(r.body.toString()).n);
      expect(order(first)).toEqual([0, 1, 2, 3, 4]);
      expect(order(all.slice(5))).toEqual([0, 1, 2, 3, 4]);
      expect(await replayCounts(ids)).toEqual([1, 1, 1, 1, 1]);
    } finally {
      await engine.stop();
    }
  });

  it('pushes each message of a cli-mode endpoint again, in order, to the listener connected now, whose cursor stays', async () => {
    const { id, token } = await endpoint({ mode: 'cli' });
    const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${id}/stream`, { headers: { authorization: `Bearer ${t.main.apiKey}` } });
    const frames: any[] = [];
    socket.on('message', (data) => frames.push(StreamServerFrame.parse(JSON.parse(data.toString()))));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const until = async (what: string, predicate: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(frames.map((f) => [f.type, f.replay]))}`);
        await sleep(20);
      }
    };
    const messages = () => frames.filter((f) => f.type === 'message');
    try {
      await until('ready', () => frames.some((f) => f.type === 'ready'));
      const after = since();
      const ids = await ingest(token, 5);
      await until('the five messages', () => messages().length === 5);
      const worker = bulkWorker();
      await worker.start();
      try {
        const started = BulkJobOut.parse((await replays(id, { received_after: after })).body.data);
        expect(await waitForJob(started.id)).toMatchObject({ status: 'done', done: 5 });
        await until('the five replays', () => messages().length === 10);
      } finally {
        await worker.stop();
      }
      const replayed = messages().slice(5);
      expect(replayed.map((f) => f.replay)).toEqual([true, true, true, true, true]);
      expect(replayed.map((f) => f.message.message_id)).toEqual(ids);
      // The stream's own sequence goes on from where it was: the next message is no replay.
      const [next] = await ingest(token, 1);
      await until('the next message', () => messages().length === 11);
      expect(messages()[10].message.message_id).toBe(next);
      expect(messages()[10].replay).toBeUndefined();
      expect(await replayCounts(ids)).toEqual([1, 1, 1, 1, 1]);
    } finally {
      socket.close();
    }
  });

  it('is finished by another worker when its worker died inside a chunk, each message replayed once', async () => {
    const { id, token } = await endpoint({ mode: 'cli' });
    const after = since();
    const ids = await ingest(token, 5);
    const started = BulkJobOut.parse((await replays(id, { received_after: after })).body.data);
    // worker-a dies as it saves its second chunk: that chunk's transaction goes, its lease stays.
    let saves = 0;
    const dying = interceptSql(t.db.sql, async (strings, _values, run) => {
      if (strings.join('?').includes('UPDATE bulk_jobs SET after_id') && ++saves === 2) throw new Error('worker-a was killed');
      return run();
    });
    const a: ChunkContext = { sql: dying, workerId: 'worker-a', leaseSeconds: 30, chunkSize: 2 };
    const b: ChunkContext = { sql: t.db.sql, workerId: 'worker-b', leaseSeconds: 30, chunkSize: 2 };
    expect(await runChunk(a, (await claimJob(a))!)).toBe('more');
    await expect(runChunk(a, (await claimJob(a))!)).rejects.toThrow('worker-a was killed');
    expect(await replayCounts(ids)).toEqual([1, 1, 0, 0, 0]);
    expect(await claimJob(b)).toBeUndefined();
    await t.db.sql`UPDATE bulk_jobs SET locked_until = now() - interval '1 second' WHERE id = ${started.id}::uuid`;
    for (const expected of ['more', 'finished']) expect(await runChunk(b, (await claimJob(b))!)).toBe(expected);
    expect(await replayCounts(ids)).toEqual([1, 1, 1, 1, 1]);
    expect(BulkJobOut.parse((await t.request('GET', `/v1/bulk-retries/${started.id}`)).body.data)).toMatchObject({ status: 'done', matched: 5, done: 5 });
  });
});
