import { createHash, randomBytes } from 'node:crypto';
import { rmSync, truncateSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../../src/delivery/worker.js';
import { BLOB_CHUNK_BYTES } from '../../src/storage/blob-store.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/database.js';
import { Receiver, settled, waitForMessage, type Handler, type HeadersHook, type Received } from '../helpers/receiver.js';

/**
 * Forward-mode deliveries of bodies in the blob store (above 256 KiB): each attempt streams the body
 * from the store into the request, and signs it with a pass of its own, never holding it whole. A
 * blob that cannot be read is not the receiver's failure. Each test runs its own delivery worker,
 * with a log that is kept, started once its webhooks are stored.
 */

const MIB = 1024 * 1024;
const SCHEDULE = '0.3,0.3,0.3';

let receiver: Receiver;
let t: TestApp;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: SCHEDULE },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

interface LogLine {
  level: string;
  fields: Record<string, unknown>;
  message: string;
}

/** A logger that keeps what it is given. */
function keptLog(lines: LogLine[]): FastifyBaseLogger {
  const at =
    (level: string) =>
    (fields: unknown, message?: string): void => {
      if (typeof fields === 'string') lines.push({ level, fields: {}, message: fields });
      else lines.push({ level, fields: (fields ?? {}) as Record<string, unknown>, message: message ?? '' });
    };
  const log = { level: 'trace', fatal: at('fatal'), error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), trace: at('trace'), silent: () => {}, child: () => log };
  return log as unknown as FastifyBaseLogger;
}

async function withWorker<T>(run: (lines: LogLine[]) => Promise<T>, options: DeliveryWorkerOptions = {}): Promise<T> {
  const lines: LogLine[] = [];
  const worker = new DeliveryWorker({ ...t.app.services, log: keptLog(lines) }, { requestTimeoutMs: 10_000, pollIntervalMs: 200, stopGraceMs: 2000, ...options });
  await worker.start();
  try {
    return await run(lines);
  } finally {
    await worker.stop();
  }
}

async function inbound(handler?: Handler, extra: Record<string, unknown> = {}, onHeaders?: HeadersHook) {
  const route = receiver.route(handler, onHeaders);
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'forward streamed', url: route.url, ...extra } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id as string, token: res.body.data.secret_token as string, secret: res.body.data.signing_secret as string | undefined, path: route.path };
}

/** A JSON body of `size` bytes exactly, of random text (nothing a store could shorten). */
function jsonOf(size: number): Buffer {
  const head = '{"filler":"';
  const tail = '"}';
  const filler = randomBytes(size).toString('base64').slice(0, size - head.length - tail.length);
  return Buffer.from(head + filler + tail);
}

async function ingest(token: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ id: string; key: string }> {
  const res = await t.app.inject({ method: 'POST', url: `/in/${token}`, payload: body, headers: { 'content-type': 'application/json', ...headers } });
  expect(res.statusCode, res.body).toBe(200);
  const id = res.json().data.message_id as string;
  const [row] = await t.db.sql<{ payload_key: string }>`SELECT payload_key FROM inbound_messages WHERE id = ${id}`;
  expect(row!.payload_key).toMatch(/^blob\//);
  return { id, key: row!.payload_key };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const headersOf = (r: Received) => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
const blobFile = (key: string) => path.join(t.app.services.config.dataDir, 'payloads', key.slice('blob/'.length));

/** Removes a blob from its store, or all of it from byte `from` on (at a piece's boundary). */
async function cutBlob(key: string, from = 0): Promise<void> {
  if (backend() === 'pglite') {
    if (from === 0) rmSync(blobFile(key));
    else truncateSync(blobFile(key), from);
  } else {
    await t.db.sql`DELETE FROM payload_chunks WHERE key = ${key} AND seq >= ${from / BLOB_CHUNK_BYTES}`;
  }
}

/** Ends a postponed delivery's job, so that it does not come due again in a later test's worker. */
async function forget(id: string): Promise<void> {
  await t.db.sql`DELETE FROM delivery_jobs WHERE message_id = ${id}`;
}

const attemptsOf = async (id: string) => (await t.request('GET', `/v1/inbound-messages/${id}/attempts`)).body.data as unknown[];

/** The message's row and its job, once the worker has given the job back. */
async function postponed(id: string) {
  for (let i = 0; i < 200; i++) {
    const [job] = await t.db.sql<{ locked_until: Date | null; due_in_ms: number }>`
      SELECT locked_until, (extract(epoch FROM run_at - now()) * 1000)::int AS due_in_ms FROM delivery_jobs WHERE message_id = ${id}`;
    if (job && job.locked_until === null && job.due_in_ms > 0) {
      const [row] = await t.db.sql<{ status: string; attempt_count: number; last_error: string | null }>`
        SELECT status, attempt_count, last_error FROM inbound_messages WHERE id = ${id}`;
      return { job, row: row! };
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the delivery of ${id} was not postponed`);
}

describe('a forward-mode webhook whose body is in the blob store', () => {
  it('reaches the receiver byte for byte with its size as Content-Length, signed so that standardwebhooks verifies it', async () => {
    const ep = await inbound(undefined, { signing_enabled: true });
    const body = jsonOf(2 * MIB);
    const { id } = await ingest(ep.token, body, { 'webhook-signature': 'v1,from-the-sender' });
    await withWorker(async () => {
      expect((await waitForMessage(t, id, settled, { inbound: true })).status).toBe('succeeded');
    });
    const [request] = receiver.received(ep.path);
    expect(request!.body.length).toBe(body.length);
    expect(sha256(request!.body)).toBe(sha256(body));
    expect(request!.headers['content-length']).toBe(String(body.length));
    expect(request!.headers['transfer-encoding']).toBeUndefined();
    expect(request!.headers['webhook-id']).toBe(id);
    const verified = new Webhook(ep.secret!).verify(request!.body, headersOf(request!)) as { filler: string };
    expect(verified.filler.length).toBe(body.length - '{"filler":""}'.length);
  });

  it('unsigned, passes the sender\'s headers on with the exact bytes', async () => {
    const ep = await inbound();
    const body = jsonOf(2 * MIB + 12345);
    const { id } = await ingest(ep.token, body, { 'x-github-event': 'push', 'webhook-signature': 'v1,from-the-sender' });
    await withWorker(async () => {
      expect((await waitForMessage(t, id, settled, { inbound: true })).status).toBe('succeeded');
    });
    const [request] = receiver.received(ep.path);
    expect(sha256(request!.body)).toBe(sha256(body));
    expect(request!.headers['content-length']).toBe(String(body.length));
    expect(request!.headers['x-github-event']).toBe('push');
    expect(request!.headers['webhook-signature']).toBe('v1,from-the-sender');
  });

  it('is sent again whole after a 500, with a signature of its own that verifies', async () => {
    const ep = await inbound((_r, n) => (n === 0 ? { status: 500 } : { status: 200 }), { signing_enabled: true });
    const body = jsonOf(2 * MIB);
    const { id } = await ingest(ep.token, body);
    const m = await withWorker(() => waitForMessage(t, id, settled, { inbound: true }));
    expect(m).toMatchObject({ status: 'succeeded', attempt_count: 2 });
    const requests = receiver.received(ep.path);
    expect(requests).toHaveLength(2);
    for (const request of requests) {
      expect(sha256(request.body)).toBe(sha256(body));
      expect(() => new Webhook(ep.secret!).verify(request.body, headersOf(request))).not.toThrow();
    }
    expect(((await attemptsOf(id)) as { response_status: number }[]).map((a) => a.response_status)).toEqual([500, 200]);
  });

  it('whose blob was removed is postponed before its request, with no attempt recorded and a line naming the blob', async () => {
    const ep = await inbound(undefined, { signing_enabled: true });
    const { id, key } = await ingest(ep.token, jsonOf(2 * MIB));
    await cutBlob(key);
    const { job, row, lines } = await withWorker(async (lines) => ({ ...(await postponed(id)), lines }));
    expect(row).toEqual({ status: 'queued', attempt_count: 0, last_error: null });
    // Postponed as a payload store outage is: ten seconds.
    expect(job.due_in_ms).toBeGreaterThan(8000);
    expect(job.due_in_ms).toBeLessThanOrEqual(10_000);
    expect(await attemptsOf(id)).toEqual([]);
    expect(receiver.received(ep.path)).toHaveLength(0);
    const line = lines.find((l) => l.level === 'warn' && l.fields.messageId === id);
    expect(line?.message).toBe(`delivery worker: the body of message ${id} could not be read from blob ${key}; delivery postponed`);
    expect(line?.fields.blobKey).toBe(key);
    expect(lines.filter((l) => l.level === 'error' && l.fields.messageId === id)).toEqual([]);
    await forget(id);
  });

  it('whose blob was cut short is postponed, never sent short', async () => {
    const ep = await inbound();
    const { id, key } = await ingest(ep.token, jsonOf(3 * MIB));
    await cutBlob(key, MIB);
    const { row, lines } = await withWorker(async (lines) => ({ ...(await postponed(id)), lines }));
    expect(row).toEqual({ status: 'queued', attempt_count: 0, last_error: null });
    expect(await attemptsOf(id)).toEqual([]);
    expect(receiver.received(ep.path)).toHaveLength(0);
    expect(lines.some((l) => l.level === 'warn' && l.message.includes(`could not be read from blob ${key}`))).toBe(true);
    await forget(id);
  });

  it('whose blob is cut while it is being sent is postponed, and the cut request is no attempt', async () => {
    const cut: string[] = [];
    let key = '';
    const cutting: HeadersHook = async (req: IncomingMessage) => {
      req.on('error', () => {});
      req.on('aborted', () => cut.push('aborted'));
      // The headers are here and the sender waits for this body to be read: its last third goes.
      await cutBlob(key, 16 * MIB);
      cut.push('cut');
    };
    const ep = await inbound(undefined, {}, cutting);
    const stored = await ingest(ep.token, jsonOf(24 * MIB));
    key = stored.key;
    const { id } = stored;
    const { row, lines } = await withWorker(async (lines) => ({ ...(await postponed(id)), lines }));
    expect(cut[0]).toBe('cut');
    expect(row).toEqual({ status: 'queued', attempt_count: 0, last_error: null });
    expect(await attemptsOf(id)).toEqual([]);
    expect(receiver.received(ep.path)).toHaveLength(0);
    expect(lines.some((l) => l.level === 'warn' && l.message.includes(`could not be read from blob ${key}`))).toBe(true);
    await forget(id);
  });
});

describe('the byte budget', () => {
  it('counts a streamed body by its size: of three 1 MiB bodies under a 2 MiB budget, the third goes once one has ended', async () => {
    const ep = await inbound(() => ({ status: 200, delayMs: 1500 }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ingest(ep.token, jsonOf(MIB))).id);
    await withWorker(
      async () => {
        for (const id of ids) expect((await waitForMessage(t, id, settled, { inbound: true, timeoutMs: 20_000 })).status).toBe('succeeded');
      },
      { maxBytes: 2 * MIB },
    );
    const arrivals = receiver.received(ep.path).map((r) => r.at).sort((a, b) => a - b);
    expect(arrivals).toHaveLength(3);
    // Each is answered 1.5 s after it arrived: the first two together, the third after an answer.
    expect(arrivals[1]! - arrivals[0]!).toBeLessThan(1500);
    expect(arrivals[2]! - arrivals[0]!).toBeGreaterThanOrEqual(1500);
  });
});
