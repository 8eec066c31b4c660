import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPGlite, openPostgres, type Database } from '../../src/db/database.js';
import { PGLITE_DIR } from '../../src/runtime.js';
import { createPostgresDatabaseUrl } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * kill -9 of a server process while it ingests and forwards: every webhook answered 2xx is
 * stored, exactly once, and every stored webhook is forwarded once a new process runs on the same
 * database — including the ones whose forwarding was in flight when the process died. The same holds
 * for the embedded database (PGlite) in a data dir made from the template.
 */
const apiKey = `hr_${randomBytes(20).toString('hex')}`;
const LEASE_SECONDS = 20;
let receiver: Receiver;
let databaseUrl: string;
let db: Database;
const started: ServerProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  receiver = await Receiver.start();
  databaseUrl = await createPostgresDatabaseUrl();
  db = openPostgres({ url: databaseUrl, poolSize: 2 });
});

afterAll(async () => {
  await Promise.all(started.map((s) => s.stop(2000)));
  await db?.close();
  await receiver?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-kill-'));
  dirs.push(dir);
  return dir;
}

/** A server on the test's PostgreSQL database, or with `dataDir` alone on PGlite in it. */
async function start(dataDir?: string): Promise<ServerProcess> {
  const server = await startServerProcess({
    ...(dataDir === undefined ? { DATABASE_URL: databaseUrl } : {}),
    HOOKRELAY_DATA_DIR: dataDir ?? tempDir(),
    HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
    HOOKRELAY_ENCRYPTION_KEY: '44'.repeat(32),
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
    HOOKRELAY_TLS_CA_FILE: receiver.caFile,
    HOOKRELAY_RETRY_SCHEDULE: '1,1,1,1,1',
    HOOKRELAY_DELIVERY_LEASE_SECONDS: String(LEASE_SECONDS),
  });
  started.push(server);
  return server;
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface IngestOutcome {
  /** Webhook number → the message id of its 200 answer. */
  acknowledged: Map<number, string>;
  /** Webhooks whose request got no answer (the process died first). */
  unanswered: number[];
}

/**
 * `senders` concurrent senders post numbered webhooks (`x-seq`) until `server` is killed with
 * SIGKILL, once 300 are acknowledged and `ready()` holds; each sender stops at its first failure.
 */
async function ingestUntilKilled(server: ServerProcess, token: string, senders: number, ready: () => boolean): Promise<IngestOutcome> {
  const acknowledged = new Map<number, string>();
  const unanswered: number[] = [];
  const otherAnswers: { seq: number; status: number }[] = [];
  let nextSeq = 0;
  const sender = async () => {
    while (nextSeq < 20_000) {
      const seq = nextSeq++;
      try {
        const res = await fetch(`${server.url}/in/${token}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-seq': String(seq) },
          body: JSON.stringify({ seq }),
          signal: AbortSignal.timeout(10_000),
        });
        const body = (await res.json()) as { data: { message_id: string } };
        if (res.status === 200) acknowledged.set(seq, body.data.message_id);
        else otherAnswers.push({ seq, status: res.status });
      } catch {
        unanswered.push(seq);
        return;
      }
    }
  };
  const running = Array.from({ length: senders }, sender);
  await until('300 acknowledged webhooks', () => acknowledged.size >= 300 && ready(), 30_000);
  server.child.kill('SIGKILL');
  await Promise.all(running);
  await new Promise((r) => (server.child.exitCode !== null || server.child.signalCode !== null ? r(undefined) : server.child.once('exit', r)));
  expect(server.child.signalCode).toBe('SIGKILL');
  expect(unanswered.length).toBeGreaterThan(0); // requests were in flight when it died
  expect(otherAnswers).toEqual([]);
  return { acknowledged, unanswered };
}

/** Stored messages of an endpoint by webhook number; checks each acknowledged one is there exactly once. */
async function expectAcknowledgedStored(sql: Database['sql'], endpointId: string, { acknowledged, unanswered }: IngestOutcome) {
  const stored = await sql<{ id: string; seq: string; status: string }>`
    SELECT id, status, (SELECT h->>1 FROM jsonb_array_elements(raw_headers) h WHERE lower(h->>0) = 'x-seq') AS seq
    FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId}`;
  const storedBySeq = new Map<number, string[]>();
  // Webhooks without a number (sent after the restart) are not part of the count.
  for (const row of stored) if (row.seq !== null) storedBySeq.set(Number(row.seq), [...(storedBySeq.get(Number(row.seq)) ?? []), row.id]);
  for (const [seq, id] of acknowledged) expect(storedBySeq.get(seq), `webhook ${seq}`).toEqual([id]);
  expect([...storedBySeq.values()].filter((ids) => ids.length > 1)).toEqual([]);
  // Stored beyond the acknowledged: only webhooks whose answer was lost with the process.
  for (const seq of storedBySeq.keys()) if (!acknowledged.has(seq)) expect(unanswered).toContain(seq);
  return { stored, storedBySeq };
}

describe('kill -9 of a server process mid-ingest and mid-delivery', () => {
  it('every acknowledged webhook is stored exactly once, and every stored one is forwarded after a restart', async () => {
    const first = await start();
    // Each forwarded request takes 300 ms, so some are in flight when the process dies.
    const route = receiver.route(() => ({ status: 200, delayMs: 300 }));
    const created = await fetch(`${first.url}/v1/inbound-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'kill -9', mode: 'forward', url: route.url }),
    });
    expect(created.status).toBe(201);
    const endpoint = ((await created.json()) as { data: { id: string; secret_token: string } }).data;

    const outcome = await ingestUntilKilled(first, endpoint.secret_token, 32, () => receiver.received(route.path).length > 0);

    const { stored, storedBySeq } = await expectAcknowledgedStored(db.sql, endpoint.id, outcome);
    // Some were being forwarded at that moment, others still waiting.
    expect(stored.filter((r) => r.status === 'delivering').length).toBeGreaterThan(0);
    expect(stored.filter((r) => r.status === 'queued').length).toBeGreaterThan(0);

    // A new process on the same database: the dead one's leases run out and everything is forwarded.
    const second = await start();
    await until('every stored webhook forwarded', async () => {
      const [row] = await db.sql<{ n: number }>`
        SELECT count(*)::int AS n FROM inbound_messages WHERE inbound_endpoint_id = ${endpoint.id} AND status <> 'succeeded'`;
      return row!.n === 0;
    }, (LEASE_SECONDS + 40) * 1000);
    const forwarded = new Set(receiver.received(route.path).map((r) => Number(r.headers['x-seq'])));
    for (const seq of storedBySeq.keys()) expect(forwarded.has(seq), `webhook ${seq} forwarded`).toBe(true);
    expect(await db.sql`SELECT 1 FROM delivery_jobs`).toHaveLength(0);

    // Ingestion goes on after the crash, ordered after everything stored before it.
    const after = await fetch(`${second.url}/in/${endpoint.secret_token}`, { method: 'POST', body: '{"after":true}', headers: { 'content-type': 'application/json' } });
    expect(after.status).toBe(200);
    const afterId = ((await after.json()) as { data: { message_id: string } }).data.message_id;
    expect(stored.every((r) => r.id < afterId)).toBe(true);
    expect(await second.stop()).toBe(0);
  }, 150_000);
});

describe('kill -9 of the embedded server (PGlite) mid-ingest', () => {
  it('every acknowledged webhook is in the data dir after a restart, exactly once', async () => {
    const dataDir = tempDir();
    const first = await start(dataDir);
    expect(first.stderr()).not.toContain('made by initdb'); // the data dir came from the template
    const created = await fetch(`${first.url}/v1/inbound-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'kill -9 embedded', mode: 'cli' }),
    });
    expect(created.status).toBe(201);
    const endpoint = ((await created.json()) as { data: { id: string; secret_token: string } }).data;
    const outcome = await ingestUntilKilled(first, endpoint.secret_token, 8, () => true);

    // The restart recovers the database (and takes over the dead process's lock on the data dir).
    const second = await start(dataDir);
    const after = await fetch(`${second.url}/in/${endpoint.secret_token}`, { method: 'POST', body: '{"after":true}', headers: { 'content-type': 'application/json' } });
    expect(after.status).toBe(200);
    expect(await second.stop()).toBe(0);

    const embedded = await openPGlite({ dataDir: path.join(dataDir, PGLITE_DIR) });
    try {
      const { stored } = await expectAcknowledgedStored(embedded.sql, endpoint.id, outcome);
      expect(stored.length).toBeGreaterThanOrEqual(300);
    } finally {
      await embedded.close();
    }
  }, 120_000);
});
