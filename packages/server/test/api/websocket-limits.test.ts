import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { KEY_REVOKED_CLOSE, keyHint, newApiKey } from '@hookrelay/shared';
import { parseConfig } from '../../src/config.js';
import { insertApiKey, revokeApiKey } from '../../src/db/api-keys.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { createTestApp, type TestApp, type TestProjectKey } from '../helpers/app.js';

/**
 * The /v1 WebSockets (CLI stream, inspector watch) end with their API key: a revoked key's sockets
 * close within 5 s, whether or not the revocation's NOTIFY arrives. And one process bounds how many
 * are open per key, per project and in all, refusing more before the upgrade.
 */

let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp({
    env: { HOOKRELAY_MAX_SOCKETS_PER_KEY: '2', HOOKRELAY_MAX_SOCKETS_PER_PROJECT: '3', HOOKRELAY_MAX_SOCKETS: '6' },
  });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
});

const wsBase = () => baseUrl.replace('http', 'ws');

async function createCli(key: TestProjectKey): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'sockets', mode: 'cli' }, apiKey: key.apiKey });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function ticket(key: TestProjectKey): Promise<string> {
  const res = await t.request('POST', '/v1/stream-tickets', { apiKey: key.apiKey });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.ticket;
}

async function send(token: string, body: string): Promise<number> {
  const res = await fetch(`${baseUrl}/in/${token}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  return res.status;
}

interface Opened {
  socket: WebSocket;
  frames: { type: string }[];
  closed: Promise<{ code: number; reason: string; at: number }>;
}

type Refused = { status: number; retryAfter: string | undefined; body: any };

/** Opens a socket and waits for its `ready` frame, or for the HTTP answer that refused the upgrade. */
async function open(url: string, headers: Record<string, string> = {}): Promise<Opened | Refused> {
  const socket = new WebSocket(url, { headers });
  const frames: { type: string }[] = [];
  socket.on('message', (data) => frames.push(JSON.parse(data.toString()) as { type: string }));
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString(), at: Date.now() })),
  );
  return new Promise((resolve, reject) => {
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        const retry = res.headers['retry-after'];
        resolve({ status: res.statusCode ?? 0, retryAfter: Array.isArray(retry) ? retry[0] : retry, body });
      });
    });
    socket.once('error', reject);
    socket.once('open', () => {
      const deadline = Date.now() + 5000;
      const wait = () => {
        if (frames.some((f) => f.type === 'ready')) return resolve({ socket, frames, closed });
        if (Date.now() > deadline) return reject(new Error('no ready frame'));
        setTimeout(wait, 10);
      };
      wait();
    });
  });
}

const stream = (key: TestProjectKey, endpointId: string) => open(`${wsBase()}/v1/inbound-endpoints/${endpointId}/stream`, { authorization: `Bearer ${key.apiKey}` });
const watch = async (key: TestProjectKey, endpointId: string) =>
  open(`${wsBase()}/v1/inbound-endpoints/${endpointId}/watch?ticket=${encodeURIComponent(await ticket(key))}`);

/** The socket's close, or a failure once `ms` have passed without one. */
function closedWithin(socket: Opened, ms: number): Promise<{ code: number; reason: string; at: number }> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    socket.closed.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        socket.socket.terminate();
        reject(new Error(`still open after ${ms} ms`));
      }, ms);
    }),
  ]);
}

function opened(result: Opened | Refused): Opened {
  if (!('socket' in result)) throw new Error(`upgrade refused: ${result.status} ${JSON.stringify(result.body)}`);
  return result;
}

function expectRefused(result: Opened | Refused, messageIncludes: string): void {
  if ('socket' in result) {
    result.socket.terminate();
    throw new Error('the upgrade was accepted');
  }
  expect(result.status).toBe(429);
  expect(result.retryAfter).toMatch(/^[1-9][0-9]*$/u);
  expect(result.body.error.code).toBe('RATE_LIMITED');
  expect(result.body.error.message).toContain(messageIncludes);
  expect(typeof result.body.meta.request_id).toBe('string');
}

/** Closes the sockets and waits (bounded) until the server has let go of them all. */
async function closeAll(sockets: Opened[]): Promise<void> {
  for (const s of sockets) s.socket.close();
  await Promise.all(sockets.map((s) => s.closed));
  for (let i = 0; i < 200 && t.app.services.sockets.openCount > 0; i++) await new Promise((r) => setTimeout(r, 10));
  expect(t.app.services.sockets.openCount).toBe(0);
}

async function refusals(): Promise<Record<string, number>> {
  const text = await fetch(`${baseUrl}/metrics`).then((r) => r.text());
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^hookrelay_websocket_refusals_total\{limit="(\w+)"\} (\d+)$/gmu)) counts[match[1]!] = Number(match[2]);
  return counts;
}

describe('a revoked key loses its sockets', () => {
  it('revoking closes its stream and watch sockets with 4401 within 5 s, and nothing more is sent on them', async () => {
    const key = await t.createProject();
    const other = await t.createProject();
    const endpoint = await createCli(key);
    const otherEndpoint = await createCli(other);
    const s = opened(await stream(key, endpoint.id));
    const w = opened(await watch(key, endpoint.id));
    const unaffected = opened(await stream(other, otherEndpoint.id));
    expect(await send(endpoint.token, '{"before":1}')).toBe(200);
    await expect.poll(() => s.frames.filter((f) => f.type === 'message').length).toBe(1);

    const revokedAt = Date.now();
    expect(await revokeApiKey(t.db.sql, key.apiKeyId)).toBeDefined();
    const [streamClosed, watchClosed] = await Promise.all([closedWithin(s, 6000), closedWithin(w, 6000)]);
    for (const closed of [streamClosed, watchClosed]) {
      expect(closed).toMatchObject({ code: KEY_REVOKED_CLOSE.code, reason: KEY_REVOKED_CLOSE.reason });
      expect(closed.at - revokedAt).toBeLessThan(5000);
    }
    expect(await send(endpoint.token, '{"after":1}')).toBe(200);
    expect(s.frames.filter((f) => f.type === 'message')).toHaveLength(1);
    // The key's REST calls and new sockets are refused; another project's socket is untouched.
    expect((await stream(key, endpoint.id)) as Refused).toMatchObject({ status: 401 });
    expect(unaffected.socket.readyState).toBe(WebSocket.OPEN);
    await closeAll([unaffected]);
  });

  it('without the NOTIFY (a key revoked or removed behind the server\'s back), the periodic check closes its sockets within 5 s', async () => {
    for (const how of ['revoked', 'removed'] as const) {
      const key = await t.createProject();
      const endpoint = await createCli(key);
      const s = opened(await stream(key, endpoint.id));
      const w = opened(await watch(key, endpoint.id));
      const changedAt = Date.now();
      if (how === 'revoked') await t.db.sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${key.apiKeyId}`;
      else await t.db.sql`DELETE FROM api_keys WHERE id = ${key.apiKeyId}`;
      for (const closed of await Promise.all([closedWithin(s, 6000), closedWithin(w, 6000)])) {
        expect(closed.code, how).toBe(KEY_REVOKED_CLOSE.code);
        expect(closed.at - changedAt, how).toBeLessThan(5000);
      }
    }
    for (let i = 0; i < 300 && t.app.services.sockets.openCount > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(t.app.services.sockets.openCount).toBe(0);
  });
});

describe('socket limits', () => {
  it('per key: the third socket of a key is refused 429 before the upgrade; closing one frees its slot', async () => {
    const key = await t.createProject();
    const endpoint = await createCli(key);
    const before = await refusals();
    const first = opened(await stream(key, endpoint.id));
    const second = opened(await watch(key, endpoint.id));
    expectRefused(await stream(key, endpoint.id), 'too many open WebSockets for this API key (limit 2');
    expectRefused(await watch(key, endpoint.id), 'too many open WebSockets for this API key (limit 2');
    expect((await refusals()).key).toBe((before.key ?? 0) + 2);

    first.socket.close();
    await first.closed;
    let third: Opened | Refused | undefined;
    for (let i = 0; i < 50; i++) {
      third = await stream(key, endpoint.id);
      if ('socket' in third) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await closeAll([second, opened(third!)]);
  });

  it('a socket that drops without a close handshake, and upgrades refused for other reasons, leave no slot taken', async () => {
    const key = await t.createProject();
    const endpoint = await createCli(key);
    const a = opened(await stream(key, endpoint.id));
    const b = opened(await stream(key, endpoint.id));
    a.socket.terminate();
    b.socket.terminate();
    await Promise.all([a.closed, b.closed]);
    for (let i = 0; i < 200 && t.app.services.sockets.openCount > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(t.app.services.sockets.openCount).toBe(0);
    // Unknown endpoint, a used ticket: refused without taking a slot.
    const unknown = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
    for (let i = 0; i < 3; i++) expect((await stream(key, unknown)) as Refused).toMatchObject({ status: 404 });
    const used = await ticket(key);
    await closeAll([opened(await open(`${wsBase()}/v1/inbound-endpoints/${endpoint.id}/watch?ticket=${encodeURIComponent(used)}`))]);
    expect((await open(`${wsBase()}/v1/inbound-endpoints/${endpoint.id}/watch?ticket=${encodeURIComponent(used)}`)) as Refused).toMatchObject({ status: 401 });
    expect(t.app.services.sockets.openCount).toBe(0);
    await closeAll([opened(await stream(key, endpoint.id)), opened(await watch(key, endpoint.id))]);
  });

  it('per project: two keys of one project share its limit; another project is not held back by it', async () => {
    const key = await t.createProject();
    const endpoint = await createCli(key);
    const second = await t.createProject();
    const apiKey = newApiKey();
    const row = await insertApiKey(t.db.sql, { projectId: key.projectId, keyHash: sha256Hex(apiKey), keyHint: keyHint(apiKey) });
    const sameProject: TestProjectKey = { projectId: key.projectId, apiKeyId: row.id, apiKey };

    const before = await refusals();
    const sockets = [opened(await stream(key, endpoint.id)), opened(await stream(key, endpoint.id)), opened(await stream(sameProject, endpoint.id))];
    expectRefused(await stream(sameProject, endpoint.id), 'too many open WebSockets for this project (limit 3');
    expect((await refusals()).project).toBe((before.project ?? 0) + 1);
    const otherEndpoint = await createCli(second);
    sockets.push(opened(await stream(second, otherEndpoint.id)));
    await closeAll(sockets);
  });

  it('per process: all projects together are held to the process limit', async () => {
    const keys = await Promise.all([t.createProject(), t.createProject(), t.createProject(), t.createProject()]);
    const endpoints = await Promise.all(keys.map((key) => createCli(key)));
    const before = await refusals();
    const sockets: Opened[] = [];
    for (let i = 0; i < 3; i++) for (let j = 0; j < 2; j++) sockets.push(opened(await stream(keys[i]!, endpoints[i]!.id)));
    expectRefused(await stream(keys[3]!, endpoints[3]!.id), 'this server process has too many open WebSockets (limit 6)');
    expect((await refusals()).process).toBe((before.process ?? 0) + 1);
    const gauge = await fetch(`${baseUrl}/metrics`).then((r) => r.text());
    expect(gauge).toMatch(/^hookrelay_websockets_open 6$/mu);
    await closeAll(sockets);
    await closeAll([opened(await stream(keys[3]!, endpoints[3]!.id))]);
  });
});

describe('socket limit settings', () => {
  const parse = (env: Record<string, string>) => parseConfig({ HOOKRELAY_DATA_DIR: '/tmp/hookrelay-unused', ...env });

  it('default to 100 per key, 500 per project and 10,000 per process; 0 turns one off, empty means the default', () => {
    expect(parse({}).maxSockets).toEqual({ perKey: 100, perProject: 500, total: 10_000 });
    expect(parse({ HOOKRELAY_MAX_SOCKETS_PER_KEY: '0', HOOKRELAY_MAX_SOCKETS_PER_PROJECT: '', HOOKRELAY_MAX_SOCKETS: '20000' }).maxSockets).toEqual({
      perKey: 0,
      perProject: 500,
      total: 20_000,
    });
  });

  it('refuse what is not a whole number of 0 or more, naming the variable', () => {
    expect(() => parse({ HOOKRELAY_MAX_SOCKETS_PER_KEY: '-1' })).toThrow('HOOKRELAY_MAX_SOCKETS_PER_KEY must be 0 or more');
    expect(() => parse({ HOOKRELAY_MAX_SOCKETS_PER_PROJECT: '1.5' })).toThrow('HOOKRELAY_MAX_SOCKETS_PER_PROJECT must be an integer');
    expect(() => parse({ HOOKRELAY_MAX_SOCKETS: 'many' })).toThrow('HOOKRELAY_MAX_SOCKETS must be an integer');
  });
});
