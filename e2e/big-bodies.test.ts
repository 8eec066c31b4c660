import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testResources } from './helpers/fixture.js';
import { startHttpsReceiver, type HttpsReceiver } from './helpers/https-receiver.js';
import { api, createCliEndpoint, type ListenProcess } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * A webhook of the default ingest limit (25 MiB, what GitHub sends at most) reaches the app byte for
 * byte: through `hookrelay listen` over the WebSocket stream and over polling, and through a
 * forward-mode delivery. One large webhook per path keeps the file quick; the embedded database
 * still takes seconds to store one, so each test has room for it.
 */

const LIMIT = 25 * 1024 * 1024;
const LARGE_TEST_MS = 240_000;

let server: RunningServer;
let receiver: HttpsReceiver;
let env: Record<string, string>;
const { configDir, localApp, listen: listenWith } = testResources();

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  server = await startServer({ env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile } });
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});
afterAll(async () => {
  await server?.stop();
  await receiver?.stop();
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Bytes that differ from their neighbours, so a shifted, cut or re-encoded copy cannot match. */
function patterned(size: number): Buffer {
  const body = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) body[i] = (i * 31 + (i >> 8) + (i >> 16)) & 0xff;
  return body;
}

/** Posts like a provider, with a deadline long enough for the embedded database's store. */
async function post(token: string, body: Buffer): Promise<{ status: number; json: { data?: { message_id: string }; error?: { code: string; message: string } } }> {
  const res = await fetch(`${server.url}/in/${token}/github`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'x-github-event': 'push' },
    body,
    signal: AbortSignal.timeout(180_000),
  });
  return { status: res.status, json: (await res.json()) as never };
}

/** Waits (bounded) until the inbound message has `status`. */
async function messageBecomes(id: string, status: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    last = (await api<{ status: string }>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${id}`)).status;
    if (last === status) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`inbound message ${id} stayed ${last}, never ${status}`);
}

function listen(args: string[], dir: string): ListenProcess {
  return listenWith(args, dir, env);
}

describe('a 25 MiB webhook through hookrelay listen', () => {
  it.each([
    ['ws', 'websocket'],
    ['poll', 'polling'],
  ])('over --transport %s reaches the app byte for byte', async (transport, shown) => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '--forward-to', `${app.url}/hooks`, '--transport', transport], await configDir());
    await cli.waitForStderr(new RegExp(`connected \\(${shown}\\)`, 'u'), 60_000);

    const body = patterned(LIMIT);
    const sent = await post(endpoint.token, body);
    expect(sent.status, JSON.stringify(sent.json)).toBe(200);
    await app.waitFor(1, 180_000);
    const [received] = app.requests;
    expect(received!.url).toBe('/hooks/github');
    expect(received!.body.length).toBe(LIMIT);
    expect(sha256(received!.body)).toBe(sha256(body));
    // The listener's report of the app's 200 is recorded against the message.
    await messageBecomes(sent.json.data!.message_id, 'succeeded');
  }, LARGE_TEST_MS);
});

describe('a 25 MiB webhook in forward mode', () => {
  it('is delivered byte for byte by the delivery worker', async () => {
    const created = await api<{ id: string; secret_token: string }>(server.url, server.apiKey, 'POST', '/v1/inbound-endpoints', {
      name: 'big forward',
      url: `${receiver.url}/ok-big`,
    });
    const body = patterned(LIMIT);
    const sent = await post(created.secret_token, body);
    expect(sent.status, JSON.stringify(sent.json)).toBe(200);
    await messageBecomes(sent.json.data!.message_id, 'succeeded');
    const delivered = receiver.received.filter((r) => r.path === '/ok-big/github');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.body.length).toBe(LIMIT);
    expect(sha256(delivered[0]!.body)).toBe(sha256(body));
  }, LARGE_TEST_MS);
});

/** Posts from `localAddress`: a provider's senders are many addresses, each with its share of the ingest budget. */
function postFrom(localAddress: string, token: string, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${server.url}/in/${token}/github`,
      { method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/octet-stream', 'content-length': body.length, 'x-github-event': 'push' }, timeout: 180_000 },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('ten 25 MiB webhooks at once in forward mode', () => {
  it('are all answered 200 and delivered byte for byte', async () => {
    const created = await api<{ id: string; secret_token: string }>(server.url, server.apiKey, 'POST', '/v1/inbound-endpoints', {
      name: 'ten big forward',
      url: `${receiver.url}/ten-big`,
    });
    const bodies = Array.from({ length: 10 }, (_, n) => {
      const body = patterned(LIMIT);
      body.writeUInt32BE(n, 0);
      return body;
    });
    const answers = await Promise.all(bodies.map((body, n) => postFrom(`127.0.0.${2 + n}`, created.secret_token, body)));
    expect(answers.map((a) => a.status), answers.map((a) => a.text).join('\n')).toEqual(Array(10).fill(200));
    const deadline = Date.now() + 180_000;
    const delivered = () => receiver.received.filter((r) => r.path === '/ten-big/github');
    while (delivered().length < 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(delivered().map((r) => sha256(r.body)).sort()).toEqual(bodies.map(sha256).sort());
  }, LARGE_TEST_MS);
});

describe('the ingest limit', () => {
  it('refuses one byte more than 25 MiB with 413 naming the limit and the size', async () => {
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const refused = await post(endpoint.token, Buffer.alloc(LIMIT + 1, 1));
    expect(refused.status).toBe(413);
    expect(refused.json.error).toEqual({
      code: 'PAYLOAD_TOO_LARGE',
      message: `request body of ${LIMIT + 1} bytes is larger than the limit of ${LIMIT} bytes`,
    });
  });
});
