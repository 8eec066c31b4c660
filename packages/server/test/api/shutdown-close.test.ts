import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SERVER_SHUTDOWN_CLOSE } from '@hookrelay/shared';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** A graceful stop tells every open WebSocket why it ends: 1001, "server shutting down". */

let t: TestApp | undefined;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** Opens a socket and waits (bounded) for its first frame; resolves its close code and reason. */
async function openSocket(url: string, headers: Record<string, string>): Promise<{ socket: WebSocket; closed: Promise<{ code: number; reason: string }> }> {
  const socket = new WebSocket(url, { headers });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no frame within 5 s')), 5000);
    socket.once('message', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.once('error', reject);
  });
  return { socket, closed };
}

describe('the graceful stop', () => {
  it('closes CLI streams and inspector watch sockets with 1001 "server shutting down"', async () => {
    const app = t!;
    const base = (await app.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
    const created = await app.request('POST', '/v1/inbound-endpoints', { body: { name: 'stop', mode: 'cli' } });
    expect(created.status, created.raw).toBe(201);
    const id = created.body.data.id as string;
    const ticket = await app.request('POST', '/v1/stream-tickets');
    expect(ticket.status, ticket.raw).toBe(201);
    const stream = await openSocket(`${base}/v1/inbound-endpoints/${id}/stream`, { authorization: `Bearer ${app.main.apiKey}` });
    const watch = await openSocket(`${base}/v1/inbound-endpoints/${id}/watch?ticket=${encodeURIComponent(ticket.body.data.ticket)}`, {});

    const closing = app.close();
    t = undefined;
    const bounded = <T>(p: Promise<T>) => Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('not closed within 10 s')), 10_000))]);
    expect(await bounded(stream.closed)).toEqual({ code: 1001, reason: 'server shutting down' });
    expect(await bounded(watch.closed)).toEqual({ code: SERVER_SHUTDOWN_CLOSE.code, reason: SERVER_SHUTDOWN_CLOSE.reason });
    await closing;
  });
});
