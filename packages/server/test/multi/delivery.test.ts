import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { openPostgres, type Database } from '../../src/db/database.js';
import { createPostgresDatabaseUrl } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';
import { Receiver, type Received } from '../helpers/receiver.js';

/**
 * The work queue across real server processes on one PostgreSQL database: every process runs the
 * API and a worker. Deliveries go to a local HTTPS receiver in this test process.
 */
let receiver: Receiver;
const started: ServerProcess[] = [];
const dirs: string[] = [];
const databases: Database[] = [];

beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop(2000)));
  await Promise.all(databases.map((db) => db.close()));
  await receiver?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Cluster {
  databaseUrl: string;
  apiKey: string;
  db: Database;
  start(extra?: Record<string, string>): Promise<ServerProcess>;
}

async function cluster(): Promise<Cluster> {
  const databaseUrl = await createPostgresDatabaseUrl();
  const apiKey = `hr_${randomBytes(20).toString('hex')}`;
  const db = openPostgres({ url: databaseUrl, poolSize: 2 });
  databases.push(db);
  return {
    databaseUrl,
    apiKey,
    db,
    async start(extra = {}) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-worker-'));
      dirs.push(dir);
      const server = await startServerProcess({
        DATABASE_URL: databaseUrl,
        HOOKRELAY_DATA_DIR: dir,
        HOOKRELAY_BOOTSTRAP_API_KEY: apiKey,
        HOOKRELAY_ENCRYPTION_KEY: '22'.repeat(32),
        HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
        HOOKRELAY_TLS_CA_FILE: receiver.caFile,
        HOOKRELAY_RETRY_SCHEDULE: '1,1,1',
        HOOKRELAY_DELIVERY_LEASE_SECONDS: '20',
        ...extra,
      });
      started.push(server);
      return server;
    },
  };
}

async function api(server: ServerProcess, apiKey: string, method: string, url: string, body?: unknown): Promise<any> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  }).catch((error: unknown) => {
    throw new Error(`${method} ${url}: ${(error as Error).message}\n${server.stdout()}\n${server.stderr()}`, { cause: error });
  });
  const json = (await res.json()) as any;
  if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}\n${server.stdout()}\n${server.stderr()}`);
  return json.data;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const countBy = (requests: Received[]) => {
  const counts = new Map<string, number>();
  for (const r of requests) counts.set(String(r.headers['webhook-id']), (counts.get(String(r.headers['webhook-id'])) ?? 0) + 1);
  return counts;
};

describe('two worker processes on one database', () => {
  it('deliver N messages exactly once each and share the load; the rate limit holds across both', async () => {
    const c = await cluster();
    const [a, b] = await Promise.all([c.start({ HOOKRELAY_DELIVERY_CONCURRENCY: '8' }), c.start({ HOOKRELAY_DELIVERY_CONCURRENCY: '8' })]);
    const route = receiver.route(() => ({ status: 200, delayMs: 10 }));
    const endpoint = await api(a!, c.apiKey, 'POST', '/v1/endpoints', { url: route.url });
    const n = 200;
    const ids: string[] = [];
    for (let i = 0; i < n; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: 20 }, (_, j) => api(j % 2 === 0 ? a! : b!, c.apiKey, 'POST', '/v1/messages', { endpoint_id: endpoint.id, payload: { i: i + j } })),
      );
      ids.push(...batch.map((m) => m.message_id));
    }
    await until('every message succeeded', async () => {
      const [row] = await c.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM outbound_messages WHERE status = 'succeeded'`;
      return row!.n === n;
    }, 60_000);
    const counts = countBy(receiver.received(route.path));
    expect(counts.size).toBe(n);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    expect(new Set(counts.keys())).toEqual(new Set(ids));
    for (const r of receiver.received(route.path).slice(0, 5)) expect(() => new Webhook(endpoint.signing_secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    const attempts = await c.db.sql<{ worker_id: string; n: number }>`
      SELECT worker_id, count(*)::int AS n FROM delivery_attempts GROUP BY worker_id`;
    expect(attempts.reduce((sum, r) => sum + r.n, 0)).toBe(n);
    expect(attempts).toHaveLength(2);
    expect(await c.db.sql`SELECT 1 FROM delivery_attempts WHERE attempt_number <> 1`).toHaveLength(0);

    // rps 5, burst 1 across both processes: ten messages take at least 1.8 s.
    const limitedRoute = receiver.route();
    const limited = await api(a!, c.apiKey, 'POST', '/v1/endpoints', { url: limitedRoute.url, rate_limit_rps: 5, burst: 1 });
    const submitted = Date.now();
    await Promise.all(Array.from({ length: 10 }, (_, i) => api(i % 2 === 0 ? a! : b!, c.apiKey, 'POST', '/v1/messages', { endpoint_id: limited.id, payload: { i } })));
    const received = await receiver.waitFor(limitedRoute.path, 10, 15_000);
    expect(Math.max(...received.map((r) => r.at)) - submitted).toBeGreaterThanOrEqual(1800);
    const times = received.map((r) => r.at);
    const busiest = Math.max(...times.map((s) => times.filter((x) => x >= s && x < s + 1000).length));
    expect(busiest).toBeLessThanOrEqual(7); // arrival times: a late send may bunch with the next
    expect(await Promise.all([a!.stop(), b!.stop()])).toEqual([0, 0]);
  }, 120_000);
});

describe('crash safety', () => {
  it('a worker killed with SIGKILL mid-delivery: its leases are reaped and the other worker delivers every message', async () => {
    const c = await cluster();
    let holding = true;
    const route = receiver.route(() => (holding ? { hang: true } : { status: 200 }));
    const a = await c.start();
    const endpoint = await api(a, c.apiKey, 'POST', '/v1/endpoints', { url: route.url });
    const ids = (await Promise.all(Array.from({ length: 5 }, (_, i) => api(a, c.apiKey, 'POST', '/v1/messages', { endpoint_id: endpoint.id, payload: { i } })))).map((m) => m.message_id);
    await receiver.waitFor(route.path, 5, 15_000);
    const leased = await c.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM delivery_jobs WHERE locked_until IS NOT NULL`;
    expect(leased[0]!.n).toBe(5);
    a.child.kill('SIGKILL');
    await new Promise((r) => a.child.once('exit', r));
    holding = false;

    const b = await c.start();
    await until('every message succeeded after the lease ran out', async () => {
      const [row] = await c.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM outbound_messages WHERE status = 'succeeded'`;
      return row!.n === ids.length;
    }, 45_000);
    const counts = countBy(receiver.received(route.path));
    for (const id of ids) expect(counts.get(id)).toBe(2); // once to the killed worker, once more: at least once, none lost
    const attempts = await c.db.sql<{ message_id: string; attempt_number: number; worker_id: string }>`
      SELECT message_id, attempt_number, worker_id FROM delivery_attempts ORDER BY message_id`;
    expect(attempts).toHaveLength(ids.length);
    expect(new Set(attempts.map((r) => r.worker_id)).size).toBe(1);
    expect(attempts.every((r) => r.attempt_number === 1)).toBe(true);
    expect(await c.db.sql`SELECT 1 FROM delivery_jobs`).toHaveLength(0);
    expect(await b.stop()).toBe(0);
  }, 120_000);

  it('SIGTERM lets an in-flight delivery finish before the process exits 0', async () => {
    const c = await cluster();
    const route = receiver.route(() => ({ status: 200, delayMs: 1500 }));
    const server = await c.start();
    const endpoint = await api(server, c.apiKey, 'POST', '/v1/endpoints', { url: route.url });
    const message = await api(server, c.apiKey, 'POST', '/v1/messages', { endpoint_id: endpoint.id, payload: { graceful: true } });
    await receiver.waitFor(route.path, 1, 10_000);
    expect(await server.stop()).toBe(0);
    const [row] = await c.db.sql<{ status: string; attempt_count: number }>`SELECT status, attempt_count FROM outbound_messages WHERE id = ${message.message_id}`;
    expect(row).toEqual({ status: 'succeeded', attempt_count: 1 });
    expect(await c.db.sql`SELECT 1 FROM delivery_jobs`).toHaveLength(0);
  }, 60_000);
});
