import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openPostgres, type Database } from '../../src/db/database.js';
import { startPgCluster, type PgCluster } from '../../src/testing/pg-cluster.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * PostgreSQL stopped for 10 s under a running server: ingestion answers 503
 * SERVICE_UNAVAILABLE with Retry-After, quickly, and never a 2xx for what is not stored; /readyz
 * fails; the server's background work does not flood the log; and everything resumes by itself
 * when the database is back — ingestion, deliveries queued before the outage, and a CLI stream.
 * This file runs its own cluster: stopping the run's shared one would break the other files.
 */
const OUTAGE_MS = 10_000;
const ANSWER_BOUND_MS = 5_000;
const POOL_SIZE = 10;
const apiKey = `hr_${randomBytes(20).toString('hex')}`;

let cluster: PgCluster;
let receiver: Receiver;
let server: ServerProcess;
let db: Database;
let listener: Database | undefined;
const dirs: string[] = [];

beforeAll(async () => {
  cluster = await startPgCluster(process.env);
  receiver = await Receiver.start();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-outage-'));
  dirs.push(dir);
  server = await startServerProcess({
    DATABASE_URL: cluster.url,
    HOOKRELAY_DATA_DIR: dir,
    HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
    HOOKRELAY_ENCRYPTION_KEY: '33'.repeat(32),
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
    HOOKRELAY_TLS_CA_FILE: receiver.caFile,
    // Enough 1 s retries that messages failing before the outage are still retrying after it.
    HOOKRELAY_RETRY_SCHEDULE: Array.from({ length: 60 }, () => '1').join(','),
    // Every background loop runs during the outage: sweepers each second, stream pings each second.
    HOOKRELAY_SWEEP_INTERVAL_SECONDS: '1',
    HOOKRELAY_STREAM_HEARTBEAT_SECONDS: '1',
    HOOKRELAY_LOG_LEVEL: 'info',
    HOOKRELAY_DB_POOL_SIZE: String(POOL_SIZE),
  });
  db = openPostgres({ url: cluster.url, poolSize: 2 });
});

afterAll(async () => {
  await server?.stop(5000);
  await db?.close();
  await listener?.close();
  await receiver?.close();
  cluster?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function api<T = any>(method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as { data: T };
  if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${tail(server.stdout())}\n${server.stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const tail = (text: string) => text.split('\n').slice(-40).join('\n');
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  seq: number;
  sentAt: number;
  answeredAt: number;
  status: number;
  code: string | null;
  retryAfter: string | null;
  messageId: string | null;
  failure: string | null;
}

/** The server's JSON log lines (pino) other than the per-request access lines, within [from, to]. */
function backgroundLogLines(from: number, to: number): { time: number; level: number; msg: string }[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { time: number; level: number; msg: string })
    .filter((l) => l.time >= from && l.time <= to && l.msg !== 'incoming request' && l.msg !== 'request completed');
}

describe('PostgreSQL stopped for 10 s under a running server', () => {
  it('ingestion answers 503 with Retry-After and never hangs; readyz fails; the log stays quiet; everything resumes by itself', async () => {
    // A forward-mode endpoint (its messages are delivered), a cli-mode one with a stream connected
    // through the outage, and outbound messages that are still being retried when it begins.
    const forwardRoute = receiver.route(() => ({ status: 200 }));
    const forward = await api<{ id: string; secret_token: string }>('POST', '/v1/inbound-endpoints', { name: 'outage forward', mode: 'forward', url: forwardRoute.url });
    const cli = await api<{ id: string; secret_token: string }>('POST', '/v1/inbound-endpoints', { name: 'outage cli', mode: 'cli' });
    let receiverUp = false;
    const outboundRoute = receiver.route(() => (receiverUp ? { status: 200 } : { status: 500 }));
    const endpoint = await api<{ id: string }>('POST', '/v1/endpoints', { url: outboundRoute.url });
    const outboundIds: string[] = [];
    for (let i = 0; i < 10; i++) outboundIds.push((await api<{ message_id: string }>('POST', '/v1/messages', { endpoint_id: endpoint.id, payload: { i } })).message_id);
    await until('a failed first attempt of every outbound message', async () => {
      const [row] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM outbound_messages WHERE status = 'pending_retry'`;
      return row!.n === outboundIds.length;
    }, 20_000);

    const streamed: string[] = [];
    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/inbound-endpoints/${cli.id}/stream`, { headers: { authorization: `Bearer ${apiKey}` } });
    await new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as { type: string; message?: { message_id: string } };
        if (frame.type === 'ready') resolve();
        if (frame.type === 'message') streamed.push(frame.message!.message_id);
      });
      socket.once('error', reject);
    });
    let socketClosed = false;
    socket.on('close', () => (socketClosed = true));

    // Four senders post continuously (bounded) to the forward endpoint, each webhook numbered.
    const answers: Answer[] = [];
    let nextSeq = 0;
    let sending = true;
    const sender = async () => {
      while (sending && nextSeq < 3000) {
        const seq = nextSeq++;
        const sentAt = Date.now();
        try {
          const res = await fetch(`${server.url}/in/${forward.secret_token}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-seq': String(seq) },
            body: JSON.stringify({ seq }),
            signal: AbortSignal.timeout(20_000),
          });
          const body = (await res.json().catch(() => null)) as { data?: { message_id?: string }; error?: { code?: string } } | null;
          answers.push({
            seq,
            sentAt,
            answeredAt: Date.now(),
            status: res.status,
            code: body?.error?.code ?? null,
            retryAfter: res.headers.get('retry-after'),
            messageId: body?.data?.message_id ?? null,
            failure: null,
          });
        } catch (error) {
          answers.push({ seq, sentAt, answeredAt: Date.now(), status: 0, code: null, retryAfter: null, messageId: null, failure: String(error) });
        }
        await delay(50);
      }
    };
    const senders = Array.from({ length: 4 }, sender);
    const readyz: { at: number; status: number }[] = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const at = Date.now();
        const res = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(10_000) }).catch(() => null);
        readyz.push({ at, status: res?.status ?? 0 });
        await delay(250);
      }
    })();

    // A LISTEN of this process's own, to see the driver subscribe again once the database is back.
    listener = openPostgres({ url: cluster.url, poolSize: 1 });
    const heard: string[] = [];
    let resubscribed = 0;
    await listener.listen('hookrelay_outage_test', (payload) => heard.push(payload), () => resubscribed++);

    await delay(1500);
    const haltStartedAt = Date.now();
    await cluster.halt('fast');
    const haltedAt = Date.now();
    receiverUp = true;
    await delay(OUTAGE_MS - (haltedAt - haltStartedAt));
    const resumeStartedAt = Date.now();
    await cluster.resume();
    const resumedAt = Date.now();

    // Ingestion succeeds again without restarting the server.
    await until('ingestion accepted again', () => answers.some((a) => a.sentAt > resumedAt && a.status === 200), 20_000);
    const recoveredAt = Date.now();
    await delay(4000);
    sending = false;
    await Promise.all(senders);
    await until('readyz 200 again', () => readyz.some((r) => r.at > resumedAt && r.status === 200), 20_000);
    probing = false;
    await prober;

    // Every answer came in time, and was either stored (200) or 503 SERVICE_UNAVAILABLE + Retry-After.
    const late = answers.filter((a) => a.answeredAt - a.sentAt >= ANSWER_BOUND_MS);
    expect(late.map((a) => ({ ...a, ms: a.answeredAt - a.sentAt })), 'answers that took 5 s or more').toEqual([]);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 503), 'answers other than 200 and 503').toEqual([]);
    const refused = answers.filter((a) => a.status === 503);
    for (const a of refused) expect({ code: a.code, retryAfter: a.retryAfter }).toEqual({ code: 'SERVICE_UNAVAILABLE', retryAfter: '5' });
    const duringOutage = answers.filter((a) => a.sentAt > haltedAt && a.answeredAt < resumeStartedAt);
    expect(duringOutage.length).toBeGreaterThanOrEqual(20);
    expect(duringOutage.filter((a) => a.status !== 503)).toEqual([]);
    // A pooled connection that was idle through the restart may still hand its first query the old
    // server's 57P01: that request is refused (503, not stored), at most once per pooled connection.
    expect(answers.filter((a) => a.sentAt > recoveredAt && a.status !== 200).length).toBeLessThanOrEqual(POOL_SIZE);
    const afterRecovery = answers.filter((a) => a.sentAt > recoveredAt + 2000);
    expect(afterRecovery.length).toBeGreaterThanOrEqual(20);
    expect(afterRecovery.filter((a) => a.status !== 200)).toEqual([]);

    // readyz: never 2xx while the database was down, 200 before and after.
    expect(readyz.filter((r) => r.at < haltStartedAt).every((r) => r.status === 200)).toBe(true);
    const readyzDown = readyz.filter((r) => r.at > haltedAt && r.at < resumeStartedAt - 2000);
    expect(readyzDown.length).toBeGreaterThanOrEqual(10);
    expect(readyzDown.filter((r) => r.status !== 503)).toEqual([]);

    // Each acknowledged webhook is stored exactly once, under the id it was acknowledged with.
    const stored = await db.sql<{ id: string; seq: string }>`
      SELECT id, (SELECT h->>1 FROM jsonb_array_elements(raw_headers) h WHERE lower(h->>0) = 'x-seq') AS seq
      FROM inbound_messages WHERE inbound_endpoint_id = ${forward.id}`;
    const storedBySeq = new Map<number, string[]>();
    for (const row of stored) storedBySeq.set(Number(row.seq), [...(storedBySeq.get(Number(row.seq)) ?? []), row.id]);
    const acknowledged = answers.filter((a) => a.status === 200);
    expect(acknowledged.length).toBeGreaterThan(50);
    for (const a of acknowledged) expect(storedBySeq.get(a.seq), `webhook ${a.seq}`).toEqual([a.messageId]);
    expect([...storedBySeq.values()].filter((ids) => ids.length > 1)).toEqual([]);

    // The background loops noticed the outage without flooding the log.
    const lines = backgroundLogLines(haltStartedAt, resumeStartedAt);
    expect(lines.length, JSON.stringify(lines, null, 1)).toBeLessThan(20);

    // Deliveries resume: the outbound messages queued before the outage, and every stored webhook.
    await until('the outbound messages delivered after the outage', async () => {
      const [row] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM outbound_messages WHERE status = 'succeeded'`;
      return row!.n === outboundIds.length;
    }, 30_000);
    const delivered = new Set(receiver.received(outboundRoute.path).filter((r) => r.at > haltedAt).map((r) => String(r.headers['webhook-id'])));
    expect(delivered).toEqual(new Set(outboundIds));
    await until('every stored webhook forwarded', async () => {
      const [row] = await db.sql<{ n: number }>`
        SELECT count(*)::int AS n FROM inbound_messages WHERE inbound_endpoint_id = ${forward.id} AND status <> 'succeeded'`;
      return row!.n === 0;
    }, 30_000);
    // Forwarded as received (no signing on this endpoint): the sender's own x-seq header identifies it.
    const forwarded = new Set(receiver.received(forwardRoute.path).map((r) => Number(r.headers['x-seq'])));
    for (const row of stored) expect(forwarded.has(Number(row.seq)), `webhook ${row.seq} forwarded`).toBe(true);

    // LISTEN is re-established after the restart (and says so), and hears what is sent after it.
    await until('LISTEN re-established', () => resubscribed === 1, 10_000);
    await db.notify('hookrelay_outage_test', 'after the outage');
    await until('a notification after the outage', () => heard.includes('after the outage'), 10_000);

    // The stream connected through the outage hears a webhook stored after it.
    expect(socketClosed).toBe(false);
    const res = await fetch(`${server.url}/in/${cli.secret_token}`, { method: 'POST', body: '{"after":"outage"}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    const { data } = (await res.json()) as { data: { message_id: string } };
    await until('the stream to receive the webhook stored after the outage', () => streamed.includes(data.message_id), 20_000);
    socket.close();

    expect(server.stderr()).toBe('');
    expect(await server.stop()).toBe(0);
  }, 180_000);
});
