import { createHash, randomBytes } from 'node:crypto';
import { INLINE_BODY_MAX_BYTES } from '@hookrelay/shared';
import { startPgCluster, type PgCluster } from '@hookrelay/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testResources } from './helpers/fixture.js';
import { api, createCliEndpoint, delay } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * A webhook above INLINE_BODY_MAX_BYTES travels to `hookrelay listen` by reference: the listen
 * page and the stream frame name its body, the CLI downloads it with its key and streams it to the
 * app. It arrives byte for byte over both transports, with the server on PGlite and on PostgreSQL.
 */

const SIZE = 5 * 1024 * 1024;
const LARGE_TEST_MS = 120_000;

let cluster: PgCluster;
const servers: Record<'pglite' | 'postgres', RunningServer | undefined> = { pglite: undefined, postgres: undefined };
const { configDir, localApp, listen } = testResources();

beforeAll(async () => {
  cluster = await startPgCluster(process.env);
  [servers.pglite, servers.postgres] = await Promise.all([
    startServer(),
    startServer({ env: { DATABASE_URL: cluster.url, HOOKRELAY_ENCRYPTION_KEY: randomBytes(32).toString('hex') } }),
  ]);
});

afterAll(async () => {
  await Promise.all([servers.pglite?.stop(), servers.postgres?.stop()]);
  cluster?.stop();
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Bytes that differ from their neighbours, so a shifted, cut or re-encoded copy cannot match. */
function patterned(size: number, seed: number): Buffer {
  const body = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) body[i] = (i * 31 + (i >> 8) + seed) & 0xff;
  return body;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(100);
  }
}

describe.each(['pglite', 'postgres'] as const)('a 5 MiB webhook through hookrelay listen, server on %s', (database) => {
  it.each([
    ['ws', 'websocket'],
    ['poll', 'polling'],
  ])('over --transport %s reaches the app byte for byte', async (transport, shown) => {
    const server = servers[database]!;
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '--forward-to', `${app.url}/hooks`, '--transport', transport], await configDir(), {
      HOOKRELAY_API_URL: server.url,
      HOOKRELAY_API_KEY: server.apiKey,
    });
    await cli.waitForStderr(new RegExp(`connected \\(${shown}\\)`, 'u'), 60_000);

    const body = patterned(SIZE, transport.length);
    const res = await fetch(`${server.url}/in/${endpoint.token}/github?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'x-github-event': 'push' },
      body,
      signal: AbortSignal.timeout(60_000),
    });
    expect(res.status).toBe(200);
    const messageId = ((await res.json()) as { data: { message_id: string } }).data.message_id;

    await app.waitFor(1, 60_000);
    const [received] = app.requests;
    expect(received!.url).toBe('/hooks/github?x=1');
    expect(received!.headers).toContainEqual(['content-length', String(SIZE)]);
    expect(received!.body.length).toBe(SIZE);
    expect(sha256(received!.body)).toBe(sha256(body));
    // The listener reports the app's answer: the message is settled on the server.
    await until(
      async () => (await api<{ status: string }>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${messageId}`)).status === 'succeeded',
      'the message to be succeeded',
    );

    // It went by reference: the listen page names its body instead of carrying it.
    const page = await api<{ message_id: string; body?: unknown; body_url?: string }[]>(
      server.url,
      server.apiKey,
      'GET',
      `/v1/inbound-endpoints/${endpoint.id}/listen?after=00000000-0000-7000-8000-000000000000`,
    );
    expect(SIZE).toBeGreaterThan(INLINE_BODY_MAX_BYTES);
    expect(page.find((m) => m.message_id === messageId)).toMatchObject({ body_url: `/v1/inbound-messages/${messageId}/body` });
    expect(page.find((m) => m.message_id === messageId)?.body).toBeUndefined();
  }, LARGE_TEST_MS);
});
