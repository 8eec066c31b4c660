import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { KEY_REVOKED_CLOSE } from '@hookrelay/shared';
import { createEmptyPostgresDatabaseUrl } from '../helpers/database.js';
import { SERVER_MAIN, startServerProcess, type ServerProcess } from '../helpers/process.js';

/**
 * `hookrelay-server keys revoke`, run as its own process against the PostgreSQL of two running
 * server processes: the key's sockets on both close within 5 s, with the code the CLI stops on.
 */
const run = promisify(execFile);
const bootstrapKey = `hr_${randomBytes(20).toString('hex')}`;
const dirs: string[] = [];
let databaseUrl: string;
let a: ServerProcess;
let b: ServerProcess;

const tempDir = (): string => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-revoke-'));
  dirs.push(dir);
  return dir;
};

/** An admin command of the built server, as an operator runs it; its --json output. */
async function admin<T>(...args: string[]): Promise<T> {
  const { stdout } = await run(process.execPath, [SERVER_MAIN, ...args, '--json'], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, HOOKRELAY_DATA_DIR: tempDir() },
    timeout: 30_000,
  });
  return JSON.parse(stdout) as T;
}

beforeAll(async () => {
  databaseUrl = await createEmptyPostgresDatabaseUrl();
  const env = () => ({ DATABASE_URL: databaseUrl, HOOKRELAY_DATA_DIR: tempDir(), HOOKRELAY_BOOTSTRAP_API_KEY: bootstrapKey, HOOKRELAY_ENCRYPTION_KEY: '33'.repeat(32) });
  [a, b] = await Promise.all([startServerProcess(env()), startServerProcess(env())]);
});
afterAll(async () => {
  await Promise.all([a?.stop(5000), b?.stop(5000)]);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function api<T>(server: ServerProcess, apiKey: string, method: string, url: string, body?: unknown): Promise<{ status: number; data: T }> {
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, data: ((await res.json()) as { data: T }).data };
}

interface OpenSocket {
  messages: () => number;
  closed: Promise<{ code: number; reason: string; at: number }>;
  terminate: () => void;
}

async function open(url: string, headers: Record<string, string> = {}): Promise<OpenSocket> {
  const socket = new WebSocket(url, { headers });
  let messages = 0;
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  socket.on('message', (data) => {
    const type = (JSON.parse(data.toString()) as { type: string }).type;
    if (type === 'ready') ready();
    if (type === 'message') messages += 1;
  });
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString(), at: Date.now() })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    socket.once('error', reject);
    void isReady.then(resolve);
  });
  return { messages: () => messages, closed, terminate: () => socket.terminate() };
}

describe('revoking a key with the admin command (PostgreSQL, two server processes)', () => {
  it("closes the key's stream on one process and its watch socket on the other within 5 s, with 4401", async () => {
    const {
      data: [project],
    } = await admin<{ data: { id: string }[] }>('projects', 'list');
    const created = await admin<{ id: string; key: string }>('keys', 'create', '--project', project!.id, '--name', 'to revoke');
    const endpoint = await api<{ id: string; secret_token: string }>(a, created.key, 'POST', '/v1/inbound-endpoints', { name: 'revoke', mode: 'cli' });
    expect(endpoint.status).toBe(201);
    const { id, secret_token: token } = endpoint.data;
    const stream = await open(`${b.url.replace('http', 'ws')}/v1/inbound-endpoints/${id}/stream`, { authorization: `Bearer ${created.key}` });
    const ticket = await api<{ ticket: string }>(a, created.key, 'POST', '/v1/stream-tickets');
    const watch = await open(`${a.url.replace('http', 'ws')}/v1/inbound-endpoints/${id}/watch?ticket=${encodeURIComponent(ticket.data.ticket)}`);
    const post = () => fetch(`${a.url}/in/${token}`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }).then((r) => r.status);
    expect(await post()).toBe(200);
    await expect.poll(() => [stream.messages(), watch.messages()], { timeout: 10_000 }).toEqual([1, 1]);

    const revoked = await admin<{ id: string; revoked_at: string }>('keys', 'revoke', created.id);
    // The command has committed by now (it may already have closed them).
    const revokedAt = Date.now();
    expect(revoked.id).toBe(created.id);
    const timeout = setTimeout(() => {
      stream.terminate();
      watch.terminate();
    }, 10_000);
    const closes = await Promise.all([stream.closed, watch.closed]);
    clearTimeout(timeout);
    for (const closed of closes) {
      expect(closed).toMatchObject({ code: KEY_REVOKED_CLOSE.code, reason: KEY_REVOKED_CLOSE.reason });
      expect(closed.at - revokedAt).toBeLessThan(5000);
    }
    expect(await post()).toBe(200);
    expect((await api(b, created.key, 'GET', `/v1/inbound-endpoints/${id}`)).status).toBe(401);
    // The bootstrap key of the same project still works on both.
    expect((await api(a, bootstrapKey, 'GET', `/v1/inbound-endpoints/${id}`)).status).toBe(200);
    expect((await api(b, bootstrapKey, 'GET', `/v1/inbound-endpoints/${id}`)).status).toBe(200);
  });
});
