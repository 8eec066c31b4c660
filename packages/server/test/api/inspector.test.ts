import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { WatchFrame } from '@hookrelay/shared';
import { revokeApiKey } from '../../src/db/api-keys.js';
import { inspectorDir } from '../../src/routes/inspector.js';
import { createTestApp, expectError, type TestApp } from '../helpers/app.js';

let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp();
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

async function createInbound(mode: 'cli' | 'forward', apiKey?: string): Promise<{ id: string; token: string }> {
  const body = mode === 'cli' ? { name: `watch ${mode}`, mode } : { name: `watch ${mode}`, mode, url: `https://example.com/hook/${Math.random()}` };
  const res = await t.request('POST', '/v1/inbound-endpoints', { body, ...(apiKey ? { apiKey } : {}) });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ticket(apiKey?: string): Promise<string> {
  const res = await t.request('POST', '/v1/stream-tickets', apiKey ? { apiKey } : {});
  expect(res.status, res.raw).toBe(201);
  expect(Date.parse(res.body.data.expires_at) - Date.now()).toBeGreaterThan(20_000);
  return res.body.data.ticket;
}

async function send(token: string, body: string): Promise<string> {
  const res = await fetch(`${baseUrl}/in/${token}/hooks?x=1`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { message_id: string } }).data.message_id;
}

interface Frame {
  type: string;
  cursor?: string | null;
  message?: { id: string; path: string; query: string; size_bytes: number; inbound_endpoint_id: string };
}

/** Opens the watch socket with a ticket; rejects with the HTTP status when the upgrade is refused. */
async function watch(endpointId: string, withTicket: string) {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/watch?ticket=${encodeURIComponent(withTicket)}`);
  const frames: Frame[] = [];
  socket.on('message', (data) => {
    const frame: unknown = JSON.parse(data.toString());
    WatchFrame.parse(frame); // every frame the server sends is one of the shared protocol's
    frames.push(frame as Frame);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    socket.once('error', reject);
  });
  const until = async (predicate: () => boolean, what: string) => {
    const deadline = Date.now() + 5000;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return { socket, frames, until, messages: () => frames.filter((f) => f.type === 'message').map((f) => f.message!) };
}

describe('stream tickets and the watch socket', () => {
  it('announces new messages of a forward-mode and a cli-mode endpoint, not the ones before it connected, without counting as a listener', async () => {
    for (const mode of ['forward', 'cli'] as const) {
      const endpoint = await createInbound(mode);
      const before = await send(endpoint.token, '{"n":0}');
      const w = await watch(endpoint.id, await ticket());
      await w.until(() => w.frames.length >= 1, 'ready');
      expect(w.frames[0]).toEqual({ type: 'ready', cursor: before });
      const first = await send(endpoint.token, '{"n":1}');
      const second = await send(endpoint.token, '{"n":22}');
      await w.until(() => w.messages().length === 2, 'two messages');
      expect(w.messages().map((m) => m.id)).toEqual([first, second]);
      expect(w.messages()[1]).toMatchObject({ inbound_endpoint_id: endpoint.id, path: '/hooks', query: 'x=1', size_bytes: 8, provider: null });
      const metrics = await fetch(`${baseUrl}/metrics`).then((r) => r.text());
      expect(metrics).toMatch(/hookrelay_connected_clis(\{[^}]*\})? 0/u);
      w.socket.close();
    }
  });

  it('a ticket opens one socket only', async () => {
    const endpoint = await createInbound('cli');
    const once = await ticket();
    const w = await watch(endpoint.id, once);
    await expect(watch(endpoint.id, once)).rejects.toThrow('HTTP 401');
    w.socket.close();
  });

  it('refuses a forged or foreign ticket, the key in place of a ticket, and another project’s endpoint', async () => {
    const endpoint = await createInbound('cli');
    const real = await ticket();
    const forged = `${real.slice(0, -4)}${real.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    await expect(watch(endpoint.id, forged)).rejects.toThrow('HTTP 401');
    await expect(watch(endpoint.id, t.main.apiKey)).rejects.toThrow('HTTP 401');
    const other = await t.createProject();
    await expect(watch(endpoint.id, await ticket(other.apiKey))).rejects.toThrow('HTTP 404');
  });

  it('a ticket of a key revoked since it was issued is refused', async () => {
    const other = await t.createProject();
    const endpoint = await createInbound('cli', other.apiKey);
    const issued = await ticket(other.apiKey);
    await revokeApiKey(t.db.sql, other.apiKeyId);
    await expect(watch(endpoint.id, issued)).rejects.toThrow('HTTP 401');
  });

  it('a ticket authenticates nothing but the watch socket', async () => {
    const issued = await ticket();
    const res = await t.request('GET', `/v1/inbound-endpoints?ticket=${encodeURIComponent(issued)}`, { apiKey: null });
    expectError(res, 401, 'UNAUTHORIZED');
  });

  it('watch over plain HTTP is a clear error; POST /v1/stream-tickets needs the key', async () => {
    const endpoint = await createInbound('cli');
    expectError(await t.request('GET', `/v1/inbound-endpoints/${endpoint.id}/watch`), 400, 'INVALID_REQUEST', 'WebSocket');
    expectError(await t.request('POST', '/v1/stream-tickets', { apiKey: null }), 401, 'UNAUTHORIZED');
  });
});

describe('GET /v1/inbound-messages/{id}/attempts', () => {
  it("lists a message's attempts (here a CLI's reports), oldest first, in its project only", async () => {
    const endpoint = await createInbound('cli');
    const id = await send(endpoint.token, '{"n":1}');
    expect((await t.request('GET', `/v1/inbound-messages/${id}/attempts`)).body.data).toEqual([]);
    for (const status of [500, 204]) {
      const res = await t.request('POST', `/v1/inbound-messages/${id}/result`, { body: { message_id: id, status, latency_ms: 12, error: null } });
      expect(res.status, res.raw).toBe(200);
    }
    const res = await t.request('GET', `/v1/inbound-messages/${id}/attempts`);
    expect(res.status, res.raw).toBe(200);
    expect(res.body.data.map((a: { attempt_number: number; response_status: number }) => [a.attempt_number, a.response_status])).toEqual([
      [1, 500],
      [2, 204],
    ]);
    const other = await t.createProject();
    expectError(await t.request('GET', `/v1/inbound-messages/${id}/attempts`, { apiKey: other.apiKey }), 404, 'NOT_FOUND');
  });
});

describe('the inspector page', () => {
  it('is served at / with a strict CSP, frame-ancestors none and nosniff; /v1 keeps its 404 envelope', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const script = /src="(assets\/[^"]+\.js)"/u.exec(page.body)?.[1];
    expect(script).toBeDefined();
    const asset = await t.app.inject({ method: 'GET', url: `/${script!}` });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(asset.headers['x-content-type-options']).toBe('nosniff');
    const missing = await t.app.inject({ method: 'GET', url: '/assets/nothing.js' });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['content-security-policy']).toBe(csp);
    expectError(await t.request('GET', '/v1/no-such-route'), 404, 'ROUTE_NOT_FOUND');
  });

  it('serves the built script and stylesheet brotli- or gzip-compressed by Accept-Encoding, decompressing to the asset', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/' });
    const names = [...page.body.matchAll(/(?:src|href)="assets\/([^"]+\.(?:js|css))"/gu)].map((m) => m[1]!);
    expect(names).toHaveLength(2);
    for (const name of names) {
      const file = readFileSync(join(inspectorDir()!, 'assets', name));
      const plain = await t.app.inject({ method: 'GET', url: `/assets/${name}` });
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers.vary).toBe('accept-encoding');
      expect(plain.rawPayload.equals(file)).toBe(true);
      for (const [accept, coding, decompress] of [['gzip, deflate, br', 'br', brotliDecompressSync], ['gzip', 'gzip', gunzipSync]] as const) {
        const res = await t.app.inject({ method: 'GET', url: `/assets/${name}`, headers: { 'accept-encoding': accept } });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-encoding'], `${name} for ${accept}`).toBe(coding);
        expect(res.headers.vary).toBe('accept-encoding');
        expect(res.rawPayload.length).toBeLessThan(file.length);
        expect(decompress(res.rawPayload).equals(file), `${name} as ${coding}`).toBe(true);
      }
    }
  });
});

describe('refused requests on the watch socket', () => {
  it('come as rejection frames, beside the messages', async () => {
    const endpoint = await createInbound('cli');
    const w = await watch(endpoint.id, await ticket());
    await w.until(() => w.frames.length >= 1, 'ready');
    expect((await t.request('POST', `/v1/inbound-endpoints/${endpoint.id}/pause`)).status).toBe(200);
    const refused = await fetch(`${baseUrl}/in/${endpoint.token}`, { method: 'POST', body: '{}' });
    expect(refused.status).toBe(503);
    await w.until(() => w.frames.some((f) => f.type === 'rejection'), 'the rejection');
    expect(w.frames.find((f) => f.type === 'rejection')).toMatchObject({ type: 'rejection', rejection: { endpoint_id: endpoint.id, reason: 'endpoint_paused', status: 503 } });
    w.socket.close();
  });
});
