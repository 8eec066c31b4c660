import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { listenIngestOnly } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { createPull } from '../helpers/pull.js';

/**
 * HOOKRELAY_INGEST_PORT: a second listener of the same app that answers only `/in/…`, `/pull/…`
 * and `/healthz`. Each class of route is asked on each port, over real sockets on 127.0.0.1.
 */

let t: TestApp;
let mainUrl: string;
let ingestUrl: string;
let inbound: { id: string; token: string; ingest_url: string };
let pullPath: string;

beforeAll(async () => {
  t = await createTestApp({ env: { HOOKRELAY_INGEST_PORT: '0' } });
  mainUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  ingestUrl = `http://127.0.0.1:${await listenIngestOnly(t.app, '127.0.0.1', 0)}`;
  const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'ingest port', mode: 'cli' } });
  expect(created.status, created.raw).toBe(201);
  const data = created.body.data as { id: string; secret_token: string; ingest_url: string };
  inbound = { id: data.id, token: data.secret_token, ingest_url: data.ingest_url };
  pullPath = (await createPull(t)).path;
});
afterAll(async () => {
  await t?.close();
});

const auth = () => ({ authorization: `Bearer ${t.main.apiKey}` });

async function get(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, { headers });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body };
}

async function post(base: string, path: string, body: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'push' }, body });
  return { status: res.status, body: await res.json().catch(() => undefined) };
}

/** Whether a WebSocket to `url` opens; resolves with the HTTP status of a refused upgrade, or 'closed'. */
function upgrade(url: string): Promise<number | 'open' | 'closed'> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, { headers: auth() });
    socket.once('open', () => {
      socket.close();
      resolve('open');
    });
    socket.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      socket.terminate();
    });
    socket.once('error', () => resolve('closed'));
  });
}

describe('the ingest-only port', () => {
  it('stores webhooks at /in/… and /pull/…, and answers /healthz', async () => {
    const inAnswer = await post(ingestUrl, `/in/${inbound.token}/github?x=1`, '{"via":"ingest port"}');
    expect(inAnswer.status).toBe(200);
    const messageId = inAnswer.body.data.message_id as string;
    const stored = await t.request('GET', `/v1/inbound-messages/${messageId}`);
    expect(stored.status).toBe(200);
    expect(stored.body.data).toMatchObject({ inbound_endpoint_id: inbound.id, path: '/github', body: { via: 'ingest port' } });
    const pullAnswer = await post(ingestUrl, pullPath, '{"via":"pull"}');
    expect(pullAnswer.status).toBeLessThan(300);
    expect((await get(ingestUrl, '/healthz')).status).toBe(200);
  });

  it('answers 404 ROUTE_NOT_FOUND in the envelope for /v1, the inspector, /metrics and /readyz, even with a valid key', async () => {
    for (const path of ['/v1/whoami', `/v1/inbound-endpoints/${inbound.id}`, '/', '/metrics', '/readyz', '/openapi.json', '/in']) {
      const answer = await get(ingestUrl, path, auth());
      expect(answer.status, path).toBe(404);
      expect(answer.body.error.code, path).toBe('ROUTE_NOT_FOUND');
      expect(answer.body.error.message, path).toContain('this port serves only ingest URLs and /healthz');
      expect(answer.body.meta.request_id, path).toMatch(/^[0-9a-f-]{36}$/u);
    }
  });

  it('opens no WebSocket: the stream and the watch socket do not exist there', async () => {
    const wsIngest = ingestUrl.replace('http:', 'ws:');
    expect(await upgrade(`${wsIngest}/v1/inbound-endpoints/${inbound.id}/stream`)).not.toBe('open');
    expect(await upgrade(`${wsIngest}/v1/inbound-endpoints/${inbound.id}/watch`)).not.toBe('open');
    // The same socket opens on the main port: the refusal above is the port's.
    expect(await upgrade(`${mainUrl.replace('http:', 'ws:')}/v1/inbound-endpoints/${inbound.id}/stream`)).toBe('open');
  });
});

describe('the main port keeps every route', () => {
  it('serves /v1, /in/…, /pull/…, /healthz and /metrics', async () => {
    expect((await get(mainUrl, '/v1/whoami', auth())).status).toBe(200);
    expect((await post(mainUrl, `/in/${inbound.token}`, '{}')).status).toBe(200);
    expect((await post(mainUrl, pullPath, '{}')).status).toBeLessThan(300);
    expect((await get(mainUrl, '/healthz')).status).toBe(200);
    expect((await get(mainUrl, '/metrics')).status).toBe(200);
  });

  it('shows ingest URLs with the public URL setting as before (the main port when unset)', () => {
    const port = new URL(mainUrl).port;
    expect(inbound.ingest_url).toBe(`http://localhost:${port}/in/${inbound.token}`);
  });
});

describe('configuration and stop', () => {
  it('refuses an ingest port without the ingest role, or equal to the main port', () => {
    expect(() => parseConfig({ HOOKRELAY_INGEST_PORT: '9001', HOOKRELAY_ROLES: 'api,worker' })).toThrow(/needs the ingest role/u);
    expect(() => parseConfig({ HOOKRELAY_INGEST_PORT: '8787', HOOKRELAY_PORT: '8787' })).toThrow(/must differ/u);
    expect(() => parseConfig({ HOOKRELAY_INGEST_PORT: 'x' })).toThrow(/HOOKRELAY_INGEST_PORT must be a port number/u);
    expect(parseConfig({}).ingestPort).toBeUndefined();
  });

  it('closes the ingest-only listener with the app', async () => {
    const other = await createTestApp({ env: { HOOKRELAY_INGEST_PORT: '0' } });
    const port = await listenIngestOnly(other.app, '127.0.0.1', 0);
    expect((await get(`http://127.0.0.1:${port}`, '/healthz')).status).toBe(200);
    await other.close();
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  });
});
