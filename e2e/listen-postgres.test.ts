import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startPgCluster, type PgCluster } from '@hookrelay/server/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testResources } from './helpers/fixture.js';
import { createCliEndpoint, delay, sendWebhook, until, type LocalApp, type ListenProcess } from './helpers/listen.js';
import { launchBrowser } from './helpers/browser.js';
import { SERVER_MAIN } from './helpers/paths.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * Two server processes on one PostgreSQL, with `hookrelay listen` connected to one of them: what
 * is ingested on either reaches it, and killing its server mid-stream loses nothing.
 */

const apiKey = `hr_${randomBytes(20).toString('hex')}`;
const encryptionKey = randomBytes(32).toString('hex');
let cluster: PgCluster;
let a: RunningServer;
let b: RunningServer;
let bPort: number;
let bDataDir: string;
const { configDir, localApp, cleanup, listen } = testResources();

function serverEnv(port: number): Record<string, string> {
  return {
    DATABASE_URL: cluster.url,
    HOOKRELAY_ENCRYPTION_KEY: encryptionKey,
    HOOKRELAY_PORT: String(port),
    HOOKRELAY_STREAM_HEARTBEAT_SECONDS: '1',
    HOOKRELAY_LOG_LEVEL: 'warn',
  };
}

const startB = (): Promise<RunningServer> => startServer({ apiKey, dataDir: bDataDir, env: serverEnv(bPort) });

beforeAll(async () => {
  cluster = await startPgCluster(process.env);
  a = await startServer({ apiKey, env: serverEnv(0) });
  bPort = await freePort();
  bDataDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-b-'));
  b = await startB();
});

afterAll(async () => {
  await cleanup();
  await Promise.all([a?.stop(), b?.stop()]);
  if (bDataDir !== undefined) await rm(bDataDir, { recursive: true, force: true });
  cluster?.stop();
});

async function setup(): Promise<{ app: LocalApp; endpoint: { id: string; token: string }; cli: ListenProcess }> {
  const app = await localApp();
  const endpoint = await createCliEndpoint(a.url, apiKey);
  // The listener talks to B only.
  const cli = listen([endpoint.id, '-f', app.url], await configDir(), { HOOKRELAY_API_URL: b.url, HOOKRELAY_API_KEY: apiKey });
  await cli.waitForStderr(/connected \(websocket\)/u, 30_000);
  return { app, endpoint, cli };
}

/** An admin command of the server (`keys create`, `keys revoke`) against the cluster, as an operator runs it. */
async function admin<T>(...args: string[]): Promise<T> {
  const dataDir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-admin-'));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [SERVER_MAIN, ...args, '--json'], {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: cluster.url, HOOKRELAY_DATA_DIR: dataDir },
      timeout: 60_000,
    });
    return JSON.parse(stdout) as T;
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

const numbers = (app: LocalApp): number[] => app.requests.map((r) => (JSON.parse(r.body.toString()) as { n: number }).n);

describe('listen across server processes (PostgreSQL)', () => {
  it('a message ingested on either process reaches a listener connected to the other', async () => {
    const { app, endpoint, cli } = await setup();
    for (let n = 0; n < 10; n++) {
      const via = n % 2 === 0 ? a : b;
      await sendWebhook(via.url, endpoint.token, { body: `{"n":${n}}` });
    }
    await app.waitFor(10, 30_000);
    await delay(300);
    expect(numbers(app)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await cli.stop()).toBe(0);
  });

  it("its server killed (SIGKILL) mid-stream and restarted: every acknowledged webhook arrives once, in order", async () => {
    const { app, endpoint, cli } = await setup();
    const acknowledged: number[] = [];
    let sending = true;
    let n = 0;
    const sender = (async () => {
      while (sending) {
        const current = n++;
        // Through A, which stays up: the stream's server is the one that dies.
        await sendWebhook(a.url, endpoint.token, { body: `{"n":${current}}` }).then(
          () => acknowledged.push(current),
          () => {},
        );
        await delay(15);
      }
    })();
    try {
      await until(() => app.requests.length >= 20, 'a first stretch of the stream', 30_000, () => cli.explain());
      await b.kill();
      await delay(1000);
      const killedAt = acknowledged.length;
      b = await startB();
      await until(() => acknowledged.length >= killedAt + 40, 'more webhooks after the restart', 60_000);
    } finally {
      sending = false;
      await sender;
    }
    await until(() => app.requests.length >= acknowledged.length, `all ${acknowledged.length} acknowledged webhooks`, 60_000, () => cli.explain());
    await delay(500);
    const got = numbers(app);
    // In order and never twice…
    expect(got).toEqual([...got].sort((x, y) => x - y));
    expect(new Set(got).size).toBe(got.length);
    // …and nothing acknowledged is missing.
    const seen = new Set(got);
    expect(acknowledged.filter((k) => !seen.has(k))).toEqual([]);
    expect(cli.stderr).toMatch(/disconnected \(websocket\)/u);
    expect(await cli.stop()).toBe(0);
  });

  it('its API key revoked with `keys revoke` while it listens: it exits 3 at once with the reason, without reconnecting or polling', async () => {
    const {
      data: [project],
    } = await admin<{ data: { id: string }[] }>('projects', 'list');
    const created = await admin<{ id: string; key: string }>('keys', 'create', '--project', project!.id, '--name', 'revoked while listening');
    const app = await localApp();
    const endpoint = await createCliEndpoint(a.url, created.key);
    const cli = listen([endpoint.id, '-f', app.url], await configDir(), { HOOKRELAY_API_URL: b.url, HOOKRELAY_API_KEY: created.key });
    await cli.waitForStderr(/connected \(websocket\)/u, 30_000);
    await sendWebhook(a.url, endpoint.token, { body: '{"n":0}' });
    await app.waitFor(1, 30_000);

    await admin('keys', 'revoke', created.id);
    expect(await cli.waitForExit(10_000)).toBe(3);
    expect(cli.stderr).toContain('the API key was revoked while listening: the server closed the stream (4401 api key revoked)');
    expect(cli.stderr).not.toMatch(/reconnecting|falling back to polling/u);
    await sendWebhook(a.url, endpoint.token, { body: '{"n":1}' });
    await delay(300);
    expect(numbers(app)).toEqual([0]);
  });

  it("the inspector's live view, its key revoked: the page signs out at once, saying why, and opens no socket again", async () => {
    const {
      data: [project],
    } = await admin<{ data: { id: string }[] }>('projects', 'list');
    const created = await admin<{ id: string; key: string }>('keys', 'create', '--project', project!.id, '--name', 'inspector');
    const endpoint = await createCliEndpoint(a.url, created.key);
    const browser = await launchBrowser();
    try {
      const page = await (await browser.context()).newPage();
      const tickets: string[] = [];
      page.on('request', (request) => request.url().includes('/v1/stream-tickets') && tickets.push(request.url()));
      await page.goto(`${a.url}/#key=${created.key}`);
      await page.getByRole('heading', { name: 'Inbound endpoints' }).waitFor();
      await page.goto(`${a.url}/#/inbound/${endpoint.id}`);
      // A filter stops the page's periodic reload of its first page, whose 401 would sign out too.
      await page.getByLabel('Event type').fill('nothing.matches');
      await page.getByRole('button', { name: 'Apply' }).click();
      await expect.poll(() => page.getByTestId('live-state').textContent()).toBe('live');
      expect(tickets).toHaveLength(1);

      await admin('keys', 'revoke', created.id);
      await page.getByRole('alert').filter({ hasText: 'the API key was revoked: the server closed the live view' }).waitFor({ timeout: 5000 });
      await page.getByLabel('API key').waitFor();
      await delay(2500);
      expect(tickets).toHaveLength(1);
    } finally {
      await browser.close();
    }
  });
});
