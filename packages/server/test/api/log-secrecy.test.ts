import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { backend, createPostgresDatabaseUrl } from '../helpers/database.js';
import { startServerProcess, type ServerProcess } from '../helpers/process.js';

/**
 * Secrets never reach the logs. The real server process runs at log level trace with
 * JSON logs; every kind of secret is sent to it or made by it — the API key in Authorization
 * headers (good and bad ones), ingest tokens in URL paths, static tokens in query strings and
 * headers, HMAC secrets, signing secrets in responses, custom header values, the encryption key —
 * and then stdout and stderr are searched for each of them. The one exception (docs/operating.md,
 * Logs): a generated bootstrap key is printed once, as a plain stdout line, never in a JSON log line.
 */

let dataDir: string;
let server: ServerProcess;
let stdout = '';
let stderr = '';
let bootstrapKey = '';
/** Every secret the run handles, by name (the values are known once the server has made them). */
const SECRET_NAMES = [
  'bootstrap API key',
  'wrong API key',
  'custom header value',
  'static token',
  'HMAC secret',
  'encryption key',
  'endpoint signing secret',
  'rotated signing secret',
  'inbound ingest token',
  'forward ingest token',
  'inbound signing secret',
  'rotated inbound signing secret',
  'pull token',
  'percent-encoded ingest token',
] as const;
const secrets = new Map<(typeof SECRET_NAMES)[number], string>();
const ENCRYPTION_KEY = randomBytes(32).toString('hex');
/** Secret-looking values that only ever travel inside requests. */
const WRONG_KEY = `hr_${randomBytes(20).toString('hex')}`;
const CUSTOM_HEADER_SECRET = `custom-${randomBytes(12).toString('hex')}`;
const STATIC_TOKEN = `static-${randomBytes(12).toString('hex')}`;
const HMAC_SECRET = `hmac-${randomBytes(12).toString('hex')}`;

async function call(method: string, url: string, options: { body?: unknown; key?: string; headers?: Record<string, string>; raw?: string } = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${server.url}${url}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : options.raw !== undefined ? { body: options.raw } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, json: text.length > 0 && text.startsWith('{') ? JSON.parse(text) : undefined };
}

/** A request whose path is sent as written: fetch would resolve `/./` and `/../` before sending. */
function rawRequest(method: string, path: string, body = ''): Promise<number> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method, path, headers: { 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${method} ${path} in 10 s`)));
    req.end(body);
  });
}

/** A WebSocket stream opened with the key in its Authorization header, kept until `ready`. */
async function openStream(endpointId: string, key: string): Promise<void> {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream`, { headers: { authorization: `Bearer ${key}` } });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no ready frame in 10 s')), 10_000);
      socket.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
  } finally {
    socket.close();
  }
}

/** A WebSocket stream asked for with the key in its query string, which the server does not read. */
async function openStreamWithQueryKey(endpointId: string, key: string): Promise<void> {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream?api_key=${key}`);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no answer in 10 s')), 10_000);
    socket.once('open', () => {
      clearTimeout(timer);
      socket.close();
      resolve();
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** A WebSocket upgrade of any URL, until the server ends it (it has no WebSocket there). */
async function upgradeUntilClosed(url: string): Promise<void> {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}${url}`);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server kept the socket open for 10 s')), 10_000);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    socket.once('close', done);
    socket.once('error', done);
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-log-secrecy-'));
  const env: Record<string, string> = {
    HOOKRELAY_DATA_DIR: dataDir,
    HOOKRELAY_LOG_LEVEL: 'trace',
    HOOKRELAY_ENCRYPTION_KEY: ENCRYPTION_KEY,
    // Deliveries go to a closed loopback port: they fail at once and log their failures, and no
    // destination check needs DNS.
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true',
    HOOKRELAY_RETRY_SCHEDULE: '1',
    HOOKRELAY_SWEEP_INTERVAL_SECONDS: '1',
  };
  if (backend() === 'postgres') env.DATABASE_URL = await createPostgresDatabaseUrl();
  server = await startServerProcess(env, 90_000);
  bootstrapKey = readFileSync(path.join(dataDir, 'bootstrap-api-key'), 'utf8').trim();
  secrets.set('bootstrap API key', bootstrapKey);
  secrets.set('wrong API key', WRONG_KEY);
  secrets.set('custom header value', CUSTOM_HEADER_SECRET);
  secrets.set('static token', STATIC_TOKEN);
  secrets.set('HMAC secret', HMAC_SECRET);
  secrets.set('encryption key', ENCRYPTION_KEY);

  const key = bootstrapKey;
  expect((await call('GET', '/v1/whoami', { key })).status).toBe(200);
  expect((await call('GET', '/v1/whoami', { headers: { authorization: `bearer ${key}` } })).status).toBe(200);
  expect((await call('GET', '/v1/whoami', { key: WRONG_KEY })).status).toBe(401);
  expect((await call('GET', '/v1/whoami', { headers: { authorization: `Basic ${Buffer.from(`user:${WRONG_KEY}`).toString('base64')}` } })).status).toBe(401);

  const endpoint = await call('POST', '/v1/endpoints', { key, body: { url: 'https://127.0.0.1:9/hook', headers: { 'X-Api-Key': CUSTOM_HEADER_SECRET } } });
  expect(endpoint.status).toBe(201);
  secrets.set('endpoint signing secret', endpoint.json.data.signing_secret);
  const rotated = await call('POST', `/v1/endpoints/${endpoint.json.data.id}/rotate-secret`, { key });
  expect(rotated.status).toBe(200);
  secrets.set('rotated signing secret', rotated.json.data.signing_secret);
  const message = await call('POST', '/v1/messages', { key, body: { endpoint_id: endpoint.json.data.id, payload: { hello: 'logs' } } });
  expect(message.status).toBe(202);

  const cli = await call('POST', '/v1/inbound-endpoints', {
    key,
    body: { name: 'secrets', mode: 'cli', verify_static_token: true, static_token_query_param: 'token', static_token: STATIC_TOKEN },
  });
  expect(cli.status).toBe(201);
  secrets.set('inbound ingest token', cli.json.data.secret_token);
  const token = cli.json.data.secret_token as string;
  expect((await call('POST', `/in/${token}/github/push?token=${STATIC_TOKEN}&x=1`, { raw: '{"a":1}', headers: { 'content-type': 'application/json' } })).status).toBe(200);
  expect((await call('POST', `/in/${token}?x=1&token=${STATIC_TOKEN}`, { raw: 'plain' })).status).toBe(200);
  expect((await call('POST', `/in/${token}?token=wrong-${STATIC_TOKEN}`, { raw: '{}' })).status).toBe(401);
  expect((await call('GET', `/in/${token}/a/b?token=${STATIC_TOKEN}`)).status).toBe(200);
  expect((await call('OPTIONS', `/in/${token}`)).status).toBe(200);
  expect((await call('POST', `/in/${token}%ZZ`, { raw: '{}' })).status).toBe(400);
  // Near misses that do not route are logged before routing: still redacted.
  expect((await call('POST', `//in/${token}?token=${STATIC_TOKEN}`, { raw: '{}' })).status).toBe(404);
  expect((await call('POST', `/IN/${token}`, { raw: '{}' })).status).toBe(404);
  // Nearer misses, sent byte for byte: dot segments, a parameter on the prefix, an escaped token.
  for (const path of [`/./in/${token}`, `/in/../in/${token}?token=${STATIC_TOKEN}`, `/in;x=1/${token}`, `/./in/${token}/a?token=${STATIC_TOKEN}`, `/x/${token}`]) {
    expect(await rawRequest('POST', path, '{}'), path).toBe(404);
  }
  const escapedToken = [...token].map((char) => `%${char.charCodeAt(0).toString(16)}`).join('');
  secrets.set('percent-encoded ingest token', escapedToken);
  expect(await rawRequest('POST', `/in/${escapedToken}`, '{}')).toBe(404);
  expect(await rawRequest('POST', `/./in/${escapedToken}`, '{}')).toBe(404);
  // API keys where they do not belong: in a query string, in a path, on the socket routes.
  expect((await call('GET', `/v1/whoami?api_key=${key}`, { key })).status).toBeLessThan(500);
  expect((await call('GET', `/v1/whoami?x=1&api_key=${WRONG_KEY}`)).status).toBe(401);
  expect((await call('GET', `/v1/endpoints/${WRONG_KEY}`, { key })).status).toBeLessThan(500);
  await expect(openStreamWithQueryKey(cli.json.data.id, key)).rejects.toThrow(/401/);
  await upgradeUntilClosed(`/v1/inbound-endpoints/${cli.json.data.id}/watch?api_key=${WRONG_KEY}`);
  expect((await call('GET', `/v1/inbound-endpoints/${cli.json.data.id}`, { key })).status).toBe(200);
  expect((await call('GET', `/v1/inbound-endpoints/${cli.json.data.id}/listen`, { key })).status).toBe(200);
  await openStream(cli.json.data.id, key);
  await expect(openStream(cli.json.data.id, WRONG_KEY)).rejects.toThrow(/401/);
  // A WebSocket upgrade aimed at an ingest URL: @fastify/websocket closes it and logs its path.
  await upgradeUntilClosed(`/in/${token}/ws?token=${STATIC_TOKEN}`);

  const signed = await call('POST', '/v1/inbound-endpoints', {
    key,
    body: { name: 'hmac', url: 'https://127.0.0.1:9/forward', verify_hmac: true, hmac_header_name: 'X-Signature', hmac_secret: HMAC_SECRET, signing_enabled: true },
  });
  expect(signed.status).toBe(201);
  secrets.set('forward ingest token', signed.json.data.secret_token);
  secrets.set('inbound signing secret', signed.json.data.signing_secret);
  expect((await call('POST', `/in/${signed.json.data.secret_token}`, { raw: '{}', headers: { 'x-signature': 'sha256=00' } })).status).toBe(401);
  const inboundRotated = await call('POST', `/v1/inbound-endpoints/${signed.json.data.id}/rotate-secret`, { key });
  expect(inboundRotated.status).toBe(200);
  secrets.set('rotated inbound signing secret', inboundRotated.json.data.signing_secret);

  const pull = await call('POST', '/v1/pull-endpoints', { key, body: { name: 'secrets' } });
  expect(pull.status).toBe(201);
  secrets.set('pull token', pull.json.data.secret_token);
  expect((await call('POST', `/pull/${pull.json.data.id}/${pull.json.data.secret_token}?x=1`, { raw: '{"b":2}', headers: { 'content-type': 'application/json' } })).status).toBe(200);
  expect((await call('POST', `/pull/${pull.json.data.id}/wrong${pull.json.data.secret_token}`, { raw: '{}' })).status).toBe(404);
  expect((await call('POST', `/in/${randomBytes(16).toString('hex')}`, { raw: '{}' })).status).toBe(404);

  // Long enough for the worker to attempt (and fail) the deliveries and log it.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await server.stop();
  stdout = server.stdout();
  stderr = server.stderr();
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const jsonLines = () => stdout.split('\n').filter((line) => line.startsWith('{'));

describe('logs at trace level', () => {
  it('were written: requests of every kind are in them, ingest paths redacted', () => {
    const lines = jsonLines().map((line) => JSON.parse(line) as { level: string; req?: { url: string } });
    expect(lines.length).toBeGreaterThan(20);
    const urls = lines.flatMap((l) => (l.req?.url ? [l.req.url] : []));
    expect(urls).toContain('/v1/whoami');
    expect(urls.some((u) => u.startsWith('/in/[redacted]/github/push'))).toBe(true);
    expect(urls.some((u) => u.startsWith('/pull/') && u.includes('[redacted]'))).toBe(true);
    expect(urls.some((u) => u.includes('/stream'))).toBe(true);
  });

  it.each(SECRET_NAMES)('never contain the %s', (name) => {
    const secret = secrets.get(name);
    expect(secret, name).toBeTruthy();
    expect(stderr.includes(secret!), `${name} in stderr`).toBe(false);
    for (const line of jsonLines()) expect(line.includes(secret!), `${name} in log line ${line}`).toBe(false);
    if (name === 'bootstrap API key') return;
    expect(stdout.includes(secret!), `${name} in stdout`).toBe(false);
  });

  it('print the generated bootstrap key once, on its own plain line before listening, never in a JSON line', () => {
    const lines = stdout.split('\n').filter((line) => line.includes(bootstrapKey));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^hookrelay-server bootstrap API key \(shown once; .*\): hr_[0-9a-f]{40}$/);
    expect(stdout.indexOf(lines[0]!)).toBeLessThan(stdout.indexOf('hookrelay-server listening on'));
  });
});
