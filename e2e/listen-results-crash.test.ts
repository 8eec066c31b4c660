import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPgCluster, type PgCluster } from '@hookrelay/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testResources } from './helpers/fixture.js';
import { api, createCliEndpoint, delay, sendWebhook, until, type LocalApp, type ListenProcess } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * The app's answers survive a crash of the server: `hookrelay listen` forwards to an app that
 * answers after 60 ms, and the server its stream goes to is killed (SIGKILL) right after the CLI
 * has printed a delivery, while that delivery's result is on its way, then started again on the
 * same port. Every message the app answered ends with that answer recorded, once: none stays
 * `queued`, none counts two attempts. On PostgreSQL (webhooks ingested by a second process that
 * stays up) and on the embedded database (a restart on the same data dir).
 */

const apiKey = `hr_${randomBytes(20).toString('hex')}`;
const encryptionKey = randomBytes(32).toString('hex');
const { configDir, localApp, defer, cleanup, listen } = testResources();

afterAll(async () => {
  await cleanup();
});

interface DeliveryLine {
  message_id: string;
  status: number | null;
}

interface StoredMessage {
  status: string;
  attempt_count: number;
  answers: { listener: string; status: number | null }[];
}

/** An app that answers 200 after 60 ms. */
function slowApp(): Promise<LocalApp> {
  return localApp((_request, res) => {
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'), 60);
  });
}

/**
 * Sends numbered webhooks to `ingest()` every 15 ms (failures, while a server is down, are
 * skipped) until `stop` is called.
 */
function sendContinuously(ingest: () => string, token: string): { acknowledged: number[]; stop: () => Promise<void> } {
  const acknowledged: number[] = [];
  let sending = true;
  let n = 0;
  const loop = (async () => {
    while (sending) {
      const current = n++;
      await sendWebhook(ingest(), token, { body: `{"n":${current}}` }).then(
        () => acknowledged.push(current),
        () => {},
      );
      await delay(15);
    }
  })();
  return {
    acknowledged,
    stop: async () => {
      sending = false;
      await loop;
    },
  };
}

/** Kills `server` the moment the CLI prints its `after`-th delivery: that delivery's result is in flight. */
function killOnDelivery(cli: ListenProcess, server: RunningServer, after: number): Promise<void> {
  return new Promise((resolve) => {
    const onData = (): void => {
      if (cli.stdout.split('\n').filter((line) => line !== '').length < after) return;
      cli.child.stdout!.off('data', onData);
      resolve(server.kill());
    };
    // Registered after the ListenProcess's own collector, so the line is already in `cli.stdout`.
    cli.child.stdout!.on('data', onData);
  });
}

/** Waits (bounded) until the endpoint counts a connected stream (with --json the CLI prints no `connected` line). */
async function waitConnected(serverUrl: string, endpointId: string, cli: ListenProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await api<{ connected_listeners: number }>(serverUrl, apiKey, 'GET', `/v1/inbound-endpoints/${endpointId}`)).connected_listeners < 1) {
    if (Date.now() > deadline) throw new Error(`the listener did not connect\n${cli.explain()}`);
    await delay(100);
  }
}

/** Waits (bounded) until every delivery the app answered 200 has that answer recorded, then checks each. */
async function expectAnswersRecorded(serverUrl: string, cli: ListenProcess): Promise<void> {
  const answered = cli.records<DeliveryLine>().filter((r) => r.status === 200);
  expect(answered.length).toBeGreaterThan(20);
  const stored = new Map<string, StoredMessage>();
  const deadline = Date.now() + 30_000;
  for (;;) {
    for (const { message_id } of answered) {
      if (stored.get(message_id)?.status === 'succeeded') continue;
      stored.set(message_id, await api<StoredMessage>(serverUrl, apiKey, 'GET', `/v1/inbound-messages/${message_id}`));
    }
    if (answered.every((r) => stored.get(r.message_id)?.status === 'succeeded') || Date.now() > deadline) break;
    await delay(200);
  }
  const notRecorded = answered.filter((r) => stored.get(r.message_id)?.status !== 'succeeded').map((r) => `${r.message_id}: ${stored.get(r.message_id)?.status}`);
  expect(notRecorded, cli.stderr).toEqual([]);
  for (const { message_id } of answered) {
    expect(stored.get(message_id), message_id).toMatchObject({ attempt_count: 1, answers: [{ listener: 'default', status: 200 }] });
  }
}

describe('answers across a crash of the server (PostgreSQL, two processes)', () => {
  let cluster: PgCluster;
  let ingest: RunningServer;
  let streamServer: RunningServer;
  let streamPort: number;
  let streamDataDir: string;

  const serverEnv = (port: number): Record<string, string> => ({
    DATABASE_URL: cluster.url,
    HOOKRELAY_ENCRYPTION_KEY: encryptionKey,
    HOOKRELAY_PORT: String(port),
    HOOKRELAY_STREAM_HEARTBEAT_SECONDS: '1',
    HOOKRELAY_LOG_LEVEL: 'warn',
  });
  const startStreamServer = (): Promise<RunningServer> => startServer({ apiKey, dataDir: streamDataDir, env: serverEnv(streamPort) });

  beforeAll(async () => {
    cluster = await startPgCluster(process.env);
    ingest = await startServer({ apiKey, env: serverEnv(0) });
    streamPort = await freePort();
    streamDataDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-crash-'));
    streamServer = await startStreamServer();
  });

  afterAll(async () => {
    await cleanup();
    await Promise.all([ingest?.stop(), streamServer?.stop()]);
    if (streamDataDir !== undefined) await rm(streamDataDir, { recursive: true, force: true });
    cluster?.stop();
  });

  it('kill -9 of the stream\'s server right after a delivery: every answered message is recorded once', async () => {
    const app = await slowApp();
    const endpoint = await createCliEndpoint(ingest.url, apiKey);
    const cli = listen([endpoint.id, '-f', app.url, '--json'], await configDir(), { HOOKRELAY_API_URL: streamServer.url, HOOKRELAY_API_KEY: apiKey });
    await waitConnected(ingest.url, endpoint.id, cli);
    await delay(300);
    // Webhooks go through the process that stays up.
    const sender = sendContinuously(() => ingest.url, endpoint.token);
    defer(() => sender.stop());
    try {
      await killOnDelivery(cli, streamServer, 15);
      await delay(1000);
      streamServer = await startStreamServer();
      const restartedAt = sender.acknowledged.length;
      await until(() => sender.acknowledged.length >= restartedAt + 20, 'more webhooks after the restart', 60_000);
    } finally {
      await sender.stop();
    }
    await until(() => cli.records().length >= sender.acknowledged.length, `all ${sender.acknowledged.length} acknowledged webhooks`, 60_000, () => cli.explain());
    await expectAnswersRecorded(ingest.url, cli);
    expect(await cli.stop()).toBe(0);
  }, 180_000);
});

describe('answers across a crash of the server (PGlite)', () => {
  let dataDir: string;
  let server: RunningServer | undefined;

  afterAll(async () => {
    await server?.stop();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  it('kill -9 right after a delivery, restart on the same data dir: every answered message is recorded once', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-crash-pglite-'));
    const port = await freePort();
    const start = (): Promise<RunningServer> =>
      startServer({ apiKey, dataDir, env: { HOOKRELAY_PORT: String(port), HOOKRELAY_STREAM_HEARTBEAT_SECONDS: '1', HOOKRELAY_LOG_LEVEL: 'warn' } });
    server = await start();
    const app = await slowApp();
    const endpoint = await createCliEndpoint(server.url, apiKey);
    const url = server.url;
    const cli = listen([endpoint.id, '-f', app.url, '--json'], await configDir(), { HOOKRELAY_API_URL: url, HOOKRELAY_API_KEY: apiKey });
    await waitConnected(url, endpoint.id, cli);
    await delay(300);
    const sender = sendContinuously(() => url, endpoint.token);
    defer(() => sender.stop());
    try {
      await killOnDelivery(cli, server, 15);
      // kill() has waited for the process to exit, so the data dir is free.
      server = await start();
      const restartedAt = sender.acknowledged.length;
      await until(() => sender.acknowledged.length >= restartedAt + 20, 'more webhooks after the restart', 60_000);
    } finally {
      await sender.stop();
    }
    await until(() => cli.records().length >= sender.acknowledged.length, `all ${sender.acknowledged.length} acknowledged webhooks`, 60_000, () => cli.explain());
    await expectAnswersRecorded(url, cli);
    expect(await cli.stop()).toBe(0);
  }, 180_000);
});
