import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createEmptyPostgresDatabaseUrl } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';

/**
 * Two server processes on one PostgreSQL: the ordering guarantee that listen relies on
 * (docs/architecture.md, Ordering) and the stream fan-out across processes.
 */
const apiKey = `hr_${randomBytes(20).toString('hex')}`;
const dirs: string[] = [];
let a: ServerProcess;
let b: ServerProcess;

beforeAll(async () => {
  const databaseUrl = await createEmptyPostgresDatabaseUrl();
  const env = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-listen2-'));
    dirs.push(dir);
    return { DATABASE_URL: databaseUrl, HOOKRELAY_DATA_DIR: dir, HOOKRELAY_BOOTSTRAP_API_KEY: apiKey, HOOKRELAY_ENCRYPTION_KEY: '22'.repeat(32) };
  };
  [a, b] = await Promise.all([startServerProcess(env()), startServerProcess(env())]);
});
afterAll(async () => {
  await Promise.all([a?.stop(5000), b?.stop(5000)]);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function api<T>(server: ServerProcess, method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json()) as { data: T };
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function createCliEndpoint(): Promise<{ id: string; token: string }> {
  const data = await api<{ id: string; secret_token: string }>(a, 'POST', '/v1/inbound-endpoints', { name: 'two processes', mode: 'cli' });
  return { id: data.id, token: data.secret_token };
}

async function post(server: ServerProcess, token: string, n: number): Promise<string> {
  const res = await fetch(`${server.url}/in/${token}`, { method: 'POST', body: JSON.stringify({ n }), headers: { 'content-type': 'application/json' } });
  if (res.status !== 200) throw new Error(`ingest answered ${res.status}`);
  return ((await res.json()) as { data: { message_id: string } }).data.message_id;
}

describe('two ingest processes, one endpoint', () => {
  it('a reader paging with after sees every message exactly once while both ingest concurrently', async () => {
    const { id, token } = await createCliEndpoint();
    const total = 400;
    const acknowledged: string[] = [];
    let next = 0;
    const sender = async () => {
      while (next < total) {
        const n = next++;
        acknowledged.push(await post(n % 2 === 0 ? a : b, token, n));
      }
    };
    const seen: string[] = [];
    let cursor: string | null = null;
    let sendersDone = false;
    const reader = (async () => {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const page = await fetch(`${a.url}/v1/inbound-endpoints/${id}/listen${cursor ? `?after=${cursor}` : ''}`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        const body = (await page.json()) as { data: { message_id: string }[]; meta: { next_cursor: string | null } };
        seen.push(...body.data.map((m) => m.message_id));
        if (body.meta.next_cursor) cursor = body.meta.next_cursor;
        if (sendersDone && seen.length >= total) return;
        if (body.data.length === 0) await new Promise((r) => setTimeout(r, sendersDone ? 50 : 2));
      }
    })();
    await Promise.all(Array.from({ length: 16 }, sender));
    sendersDone = true;
    await reader;
    expect(acknowledged).toHaveLength(total);
    expect(new Set(seen).size).toBe(seen.length);
    expect(new Set(seen)).toEqual(new Set(acknowledged));
    expect([...seen].sort()).toEqual(seen);
  });
});

describe('stream fan-out across processes', () => {
  it('a message ingested by process A reaches a stream connected to process B', async () => {
    const { id, token } = await createCliEndpoint();
    const socket = new WebSocket(`${b.url.replace('http', 'ws')}/v1/inbound-endpoints/${id}/stream`, { headers: { authorization: `Bearer ${apiKey}` } });
    const received: string[] = [];
    const ready = new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as { type: string; message?: { message_id: string } };
        if (frame.type === 'ready') resolve();
        if (frame.type === 'message') received.push(frame.message!.message_id);
      });
      socket.once('error', reject);
    });
    try {
      await ready;
      const sent = [await post(a, token, 1), await post(a, token, 2), await post(b, token, 3)];
      const deadline = Date.now() + 10_000;
      while (received.length < sent.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(received).toEqual(sent);
      // The stream on B counts for A too (connected_listeners is shared by the processes).
      expect(await api<{ connected_listeners: number; messages_24h: number }>(a, 'GET', `/v1/inbound-endpoints/${id}`)).toMatchObject({
        connected_listeners: 1,
        messages_24h: 3,
      });
    } finally {
      socket.close();
    }
    let listeners = 1;
    for (let i = 0; i < 100 && listeners !== 0; i++) {
      listeners = (await api<{ connected_listeners: number }>(a, 'GET', `/v1/inbound-endpoints/${id}`)).connected_listeners;
      if (listeners !== 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(listeners).toBe(0);
  });
});
