import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openPostgres } from '../../src/db/database.js';
import { createEmptyPostgresDatabaseUrl } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';

/**
 * Two CLIs on one endpoint, each connected to its own server process, report every message at
 * the same moment: both processes record their batches over the same rows at once.
 */
const apiKey = `hr_${randomBytes(20).toString('hex')}`;
const dirs: string[] = [];
let databaseUrl: string;
let a: ServerProcess;
let b: ServerProcess;

beforeAll(async () => {
  databaseUrl = await createEmptyPostgresDatabaseUrl();
  const env = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-results2-'));
    dirs.push(dir);
    return { DATABASE_URL: databaseUrl, HOOKRELAY_DATA_DIR: dir, HOOKRELAY_BOOTSTRAP_API_KEY: apiKey, HOOKRELAY_ENCRYPTION_KEY: '33'.repeat(32) };
  };
  [a, b] = await Promise.all([startServerProcess(env()), startServerProcess(env())]);
});
afterAll(async () => {
  await Promise.all([a?.stop(5000), b?.stop(5000)]);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A stream that collects message ids until it has `count`, and the result acknowledgements. */
function collect(server: ServerProcess, endpointId: string, count: number) {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream`, { headers: { authorization: `Bearer ${apiKey}` } });
  const ids: string[] = [];
  const acks: { result_id: string; outcome: string }[] = [];
  let onAll: () => void = () => {};
  const all = new Promise<void>((resolve) => (onAll = resolve));
  const ready = new Promise<void>((resolve, reject) => {
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type: string; message?: { message_id: string }; result_id?: string; outcome?: string };
      if (frame.type === 'ready') resolve();
      if (frame.type === 'message' && ids.push(frame.message!.message_id) === count) onAll();
      if (frame.type === 'result_ack') acks.push({ result_id: frame.result_id!, outcome: frame.outcome! });
    });
    socket.once('error', reject);
  });
  return { socket, ids, acks, ready, all };
}

async function createEndpoint(name: string): Promise<{ id: string; secret_token: string }> {
  const res = await fetch(`${a.url}/v1/inbound-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, mode: 'cli' }),
  });
  return ((await res.json()) as { data: { id: string; secret_token: string } }).data;
}

describe('results from two processes for the same messages', () => {
  it('records every report of both CLIs: two attempts per message, numbered 1 and 2', async () => {
    const res = await fetch(`${a.url}/v1/inbound-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'two reporters', mode: 'cli' }),
    });
    const endpoint = ((await res.json()) as { data: { id: string; secret_token: string } }).data;
    const total = 120;
    const one = collect(a, endpoint.id, total);
    const two = collect(b, endpoint.id, total);
    try {
      await Promise.all([one.ready, two.ready]);
      for (let i = 0; i < total; i++) {
        const sent = await fetch(`${a.url}/in/${endpoint.secret_token}`, { method: 'POST', body: `{"i":${i}}`, headers: { 'content-type': 'application/json' } });
        expect(sent.status).toBe(200);
      }
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('streams did not deliver every message')), 30_000).unref());
      await Promise.race([Promise.all([one.all, two.all]), timeout]);
      // Opposite orders: row locks taken in report order would cross.
      for (const id of one.ids) one.socket.send(JSON.stringify({ type: 'result', message_id: id, status: 200, latency_ms: 1, error: null }));
      for (const id of [...two.ids].reverse()) two.socket.send(JSON.stringify({ type: 'result', message_id: id, status: 500, latency_ms: 2, error: null }));

      const db = openPostgres({ url: databaseUrl, poolSize: 1 });
      try {
        const deadline = Date.now() + 30_000;
        let rows: { id: string; attempt_count: number; attempts: number[]; latencies: number[] }[] = [];
        while (Date.now() < deadline) {
          rows = await db.sql`
            SELECT m.id, m.attempt_count,
                   array_agg(d.attempt_number ORDER BY d.attempt_number) AS attempts,
                   array_agg(d.latency_ms ORDER BY d.latency_ms) AS latencies
            FROM inbound_messages m JOIN delivery_attempts d ON d.message_id = m.id
            WHERE m.inbound_endpoint_id = ${endpoint.id}
            GROUP BY m.id, m.attempt_count`;
          if (rows.length === total && rows.every((r) => r.attempt_count === 2)) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(rows).toHaveLength(total);
        for (const row of rows) expect(row).toMatchObject({ attempt_count: 2, attempts: [1, 2], latencies: [1, 2] });
      } finally {
        await db.close();
      }
      // Neither a lost report nor a batch the database refused (a deadlock between the two would be one).
      const logs = a.stdout() + a.stderr() + b.stdout() + b.stderr();
      expect(logs).not.toContain('could not record');
      expect(logs).not.toContain('a batch of results failed');
    } finally {
      one.socket.close();
      two.socket.close();
    }
  });

  it('the same report sent to both processes at once (a CLI resending after a reconnection) is recorded once, and acknowledged by both', async () => {
    const endpoint = await createEndpoint('resent reports');
    const total = 60;
    const one = collect(a, endpoint.id, total);
    const two = collect(b, endpoint.id, total);
    try {
      await Promise.all([one.ready, two.ready]);
      for (let i = 0; i < total; i++) {
        const sent = await fetch(`${a.url}/in/${endpoint.secret_token}`, { method: 'POST', body: `{"i":${i}}`, headers: { 'content-type': 'application/json' } });
        expect(sent.status).toBe(200);
      }
      const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('streams did not deliver every message')), 30_000).unref());
      await Promise.race([Promise.all([one.all, two.all]), timeout]);
      const resultIds = one.ids.map((_, i) => `0190b2c4-7d2e-7a51-9c3f-${String(i).padStart(12, '0')}`);
      const frame = (id: string, i: number) => JSON.stringify({ type: 'result', message_id: id, status: 200, latency_ms: i, error: null, result_id: resultIds[i] });
      // Opposite orders, as before; each report under the same id on both.
      one.ids.forEach((id, i) => one.socket.send(frame(id, i)));
      [...one.ids].reverse().forEach((id) => two.socket.send(frame(id, one.ids.indexOf(id))));

      const deadline = Date.now() + 30_000;
      while ((one.acks.length < total || two.acks.length < total) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(one.acks).toHaveLength(total);
      expect(two.acks).toHaveLength(total);
      // For each report one process recorded it and the other found it recorded.
      const outcomes = new Map<string, string[]>();
      for (const ack of [...one.acks, ...two.acks]) outcomes.set(ack.result_id, [...(outcomes.get(ack.result_id) ?? []), ack.outcome].sort());
      expect([...outcomes.keys()].sort()).toEqual([...resultIds].sort());
      for (const [id, got] of outcomes) expect(got, id).toEqual(['duplicate', 'recorded']);

      const db = openPostgres({ url: databaseUrl, poolSize: 1 });
      try {
        const rows = await db.sql<{ attempt_count: number; attempts: number }>`
          SELECT m.attempt_count, (SELECT count(*)::int FROM delivery_attempts d WHERE d.message_id = m.id) AS attempts
          FROM inbound_messages m WHERE m.inbound_endpoint_id = ${endpoint.id}`;
        expect(rows).toHaveLength(total);
        for (const row of rows) expect(row).toEqual({ attempt_count: 1, attempts: 1 });
      } finally {
        await db.close();
      }
      const logs = a.stdout() + a.stderr() + b.stdout() + b.stderr();
      expect(logs).not.toContain('could not record');
    } finally {
      one.socket.close();
      two.socket.close();
    }
  });
});
