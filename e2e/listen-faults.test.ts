import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testResources } from './helpers/fixture.js';
import { api, createCliEndpoint, delay, sendWebhook, until, type LocalApp, type ListenProcess } from './helpers/listen.js';
import { TcpRelay, TestProxy } from './helpers/proxy.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * `hookrelay listen` when things break: no WebSocket (polling, a proxy that refuses upgrades), a
 * connection that goes silent without closing, the local app down for 10 s, a stop in the middle
 * of a delivery, a server that stays away, and a laptop that sleeps: the process stopped (SIGSTOP)
 * for 20 s while webhooks keep arriving, and the network silently dropping everything on the
 * connection (a TCP relay that stops forwarding without closing). Timing-dependent: in the serial
 * e2e group.
 */

let server: RunningServer;
let env: Record<string, string>;
const { configDir, localApp, defer, cleanup, listen: listenWith } = testResources();

beforeAll(async () => {
  // Pings every second, so that a dead connection is noticed within the test's time.
  server = await startServer({ env: { HOOKRELAY_STREAM_HEARTBEAT_SECONDS: '1' } });
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await cleanup();
  await server?.stop();
});

async function proxy(): Promise<TestProxy> {
  const p = await TestProxy.start(server.url);
  defer(() => p.stop());
  return p;
}

function listen(args: string[], dir: string, extraEnv: Record<string, string> = {}): ListenProcess {
  return listenWith(args, dir, { ...env, ...extraEnv });
}

async function send(token: string, n: number): Promise<string> {
  return (await sendWebhook(server.url, token, { body: `{"n":${n}}`, headers: [['Content-Type', 'application/json']] })).messageId;
}

const bodies = (app: LocalApp): number[] => app.requests.map((r) => (JSON.parse(r.body.toString()) as { n: number }).n);
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

/** The stderr lines that sum up a gap. */
const gapLines = (cli: ListenProcess): string[] => cli.stderr.split('\n').filter((line) => /reconnected after/u.test(line));

/** The smallest heartbeat the CLI takes (--heartbeat-timeout is at least 1 s; 3 s stays clear of the server's 1 s pings). */
const HEARTBEAT_TIMEOUT_MS = 3_000;
const ARRIVING = 41;

describe('without a WebSocket', () => {
  it('--transport poll: a first run starts from now; polling delivers everything, in order, and resumes after a stop', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    await send(endpoint.token, -1); // before the first run: not delivered
    const dir = await configDir();
    const cli = listen([endpoint.id, '-f', app.url, '--transport', 'poll'], dir);
    await cli.waitForStderr(/connected \(polling\)/u);
    for (let n = 0; n < 60; n++) await send(endpoint.token, n);
    await app.waitFor(60, 30_000);
    expect(await cli.stop()).toBe(0);
    expect(cli.stderr).not.toMatch(/websocket/iu);

    for (let n = 60; n < 65; n++) await send(endpoint.token, n);
    const again = listen([endpoint.id, '-f', app.url, '--transport', 'poll'], dir);
    await app.waitFor(65, 30_000);
    await delay(1500);
    expect(bodies(app)).toEqual(Array.from({ length: 65 }, (_, n) => n));
    expect(await again.stop()).toBe(0);
  });

  it('auto through a proxy that refuses WebSocket upgrades: falls back to polling and delivers everything', async () => {
    const p = await proxy();
    p.upgrades = 'refuse';
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '-f', app.url], await configDir(), { HOOKRELAY_API_URL: p.url });
    await cli.waitForStderr(/connected \(polling\)/u);
    expect(cli.stderr).toMatch(/the WebSocket upgrade was refused \(HTTP 502\): falling back to polling/u);
    expect(p.refusedUpgrades).toBeGreaterThanOrEqual(1);
    for (let n = 0; n < 10; n++) await send(endpoint.token, n);
    await app.waitFor(10, 30_000);
    await delay(1000);
    expect(bodies(app)).toEqual(Array.from({ length: 10 }, (_, n) => n));
    expect(await cli.stop()).toBe(0);
  });
});

describe('a broken connection', () => {
  it('a WebSocket gone silent without closing is detected by heartbeat and replaced; nothing sent meanwhile is lost', async () => {
    const p = await proxy();
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '-f', app.url, '--heartbeat-timeout', '3s'], await configDir(), { HOOKRELAY_API_URL: p.url });
    await cli.waitForStderr(/connected \(websocket\)/u);
    await send(endpoint.token, 0);
    await app.waitFor(1);

    p.blackhole();
    for (let n = 1; n <= 3; n++) await send(endpoint.token, n);
    await cli.waitForStderr(/no heartbeat from the server for \d/u, 15_000);
    await app.waitFor(4, 30_000);
    await delay(500);
    expect(bodies(app)).toEqual([0, 1, 2, 3]);
    expect(cli.stderr).toMatch(/disconnected \(websocket\)/u);
    expect(p.passedUpgrades).toBeGreaterThanOrEqual(2);
    expect(await cli.stop()).toBe(0);
  });

  it('--exit-on-disconnect: exits 7 when the server has been unreachable that long', async () => {
    const p = await proxy();
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '-f', app.url, '--exit-on-disconnect', '2s', '--json'], await configDir(), { HOOKRELAY_API_URL: p.url });
    await until(() => p.passedUpgrades === 1, 'the WebSocket through the proxy', 20_000, () => cli.explain());
    await delay(500);
    const stoppedAt = Date.now();
    await p.stop();
    expect(await cli.waitForExit(20_000)).toBe(7);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(1900);
    const lines = cli.stderr.trim().split('\n');
    expect(JSON.parse(lines[lines.length - 1]!)).toMatchObject({ error: { code: 'NETWORK_ERROR' } });
    expect(cli.stdout).toBe('');
  });
});

describe('the local app', () => {
  it('stopped for 10 s while 5 webhooks arrive: all 5 are delivered in order once it is back on its port', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    // --since: what is sent before the listener is up is delivered too (no "connected" line under --json).
    const cli = listen([endpoint.id, '-f', app.url, '--json', '--since', '1m'], await configDir());
    await send(endpoint.token, 0);
    await app.waitFor(1, 30_000);
    await until(() => cli.records().length === 1, 'the first delivery', 20_000, () => cli.explain());
    const warmup = app.requests.length;

    await app.stop();
    const downAt = Date.now();
    const ids: string[] = [];
    for (let n = 1; n <= 5; n++) {
      ids.push(await send(endpoint.token, n));
      await delay(1500);
    }
    await delay(Math.max(0, 10_000 - (Date.now() - downAt)));
    expect(app.requests.length).toBe(warmup);
    await cli.waitForStderr(/warning: the local app at .* is not answering \(.*ECONNREFUSED.*\): holding/u, 1000);
    await app.restart();
    await app.waitFor(warmup + 5, 30_000);
    await delay(500);
    expect(bodies(app).slice(warmup)).toEqual([1, 2, 3, 4, 5]);
    const records = cli.records<{ message_id: string; status: number; attempt: number }>().slice(warmup);
    expect(records.map((r) => r.message_id)).toEqual(ids);
    expect(records.every((r) => r.status === 200)).toBe(true);
    // The first one was held and retried; the others waited behind it.
    expect(records[0]!.attempt).toBeGreaterThan(3);
    expect(await cli.stop()).toBe(0);
  });

  it('--max-wait: a message held that long is reported as failed and the next one goes', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    await app.stop();
    const cli = listen([endpoint.id, '-f', app.url, '--json', '--since', '1m', '--max-wait', '1s'], await configDir());
    const ids = [await send(endpoint.token, 1), await send(endpoint.token, 2)];
    await until(() => cli.records().length === 2, 'two failures', 30_000, () => cli.explain());
    const records = cli.records<{ message_id: string; status: number | null; error: string | null }>();
    expect(records.map((r) => r.message_id)).toEqual(ids);
    for (const record of records) {
      expect(record.status).toBeNull();
      expect(record.error).toMatch(/ECONNREFUSED.*gave up after/u);
    }
    let message = await api<{ status: string; last_error: string | null; attempt_count: number }>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${ids[0]}`);
    for (let tries = 0; tries < 100 && message.attempt_count === 0; tries++) {
      await delay(50);
      message = await api(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${ids[0]}`);
    }
    expect(message.status).toBe('failed_permanent');
    expect(message.last_error).toMatch(/ECONNREFUSED/u);
    expect(await cli.stop()).toBe(0);
  });

  it('SIGTERM during a slow delivery: finishes it, saves the cursor, exits 0', async () => {
    let release: (() => void) | undefined;
    const app = await localApp((_request, res) => {
      release = () => res.writeHead(202).end();
    });
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const dir = await configDir();
    const cli = listen([endpoint.id, '-f', app.url], dir);
    await cli.waitForStderr(/connected \(websocket\)/u);
    const id = await send(endpoint.token, 1);
    await send(endpoint.token, 2);
    await app.waitFor(1);
    cli.child.kill('SIGTERM');
    await cli.waitForStderr(/stopping after the delivery in flight/u);
    await delay(500);
    expect(cli.running).toBe(true);
    release!();
    expect(await cli.waitForExit()).toBe(0);
    // The one in flight was finished and recorded; the next one waits for the next start.
    expect(app.requests).toHaveLength(1);
    expect(cli.stderr).toMatch(new RegExp(`POST /  202  \\d+ ms  ${id}`, 'u'));
    const cursor = JSON.parse(await readFile(join(dir, 'cursors', 'default', `${endpoint.id}.json`), 'utf8')) as { cursor: string };
    expect(cursor.cursor).toBe(id);
  });
});

describe('listen on a laptop that sleeps', () => {
  it('stopped with SIGSTOP for 20 s while 41 webhooks arrive: after SIGCONT it reconnects, forwards them once, in order, and prints one line for the gap', async () => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '-f', app.url, '--heartbeat-timeout', `${HEARTBEAT_TIMEOUT_MS}ms`], await configDir());
    await cli.waitForStderr(/connected \(websocket\)/u);
    for (const n of [-3, -2, -1]) await send(endpoint.token, n);
    await app.waitFor(3);

    const pid = cli.child.pid!;
    process.kill(pid, 'SIGSTOP');
    const stoppedAt = Date.now();
    // Continued at the end of the test whatever happened, so that the kill of the cleanup ends it.
    defer(() => {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Gone already.
      }
    });
    // They keep arriving over the whole stop, the first ones while the server still holds the stream.
    for (let n = 0; n < ARRIVING; n++) {
      await send(endpoint.token, n);
      await delay(450);
    }
    await delay(Math.max(0, 20_000 - (Date.now() - stoppedAt)));
    expect(app.requests).toHaveLength(3);
    process.kill(pid, 'SIGCONT');
    const continuedAt = Date.now();

    await until(() => gapLines(cli).length > 0, 'the gap line', 15_000, () => cli.explain());
    const noticedWithin = Date.now() - continuedAt;
    await app.waitFor(3 + ARRIVING, 10_000);
    await delay(1_000);
    expect(bodies(app)).toEqual([-3, -2, -1, ...range(0, ARRIVING)]);
    const lines = gapLines(cli);
    expect(lines, cli.explain()).toHaveLength(1);
    const [, seconds, arrived] = /reconnected after (\d+)s; (\d+) webhooks? arrived meanwhile$/u.exec(lines[0]!) ?? [];
    expect(seconds, lines[0]).toBeDefined();
    // The 41, less those the server pushed before it gave up on the silent stream when the woken
    // process forwards them from its socket's buffer before it notices the loss (docs/cli.md): how
    // many depends on when the server gave up, a few seconds into the 20.
    expect(Number(arrived), lines[0]).toBeGreaterThan(ARRIVING / 2);
    expect(Number(arrived), lines[0]).toBeLessThanOrEqual(ARRIVING);
    // Away from the stop (less the last second it heard a ping) to the reconnection.
    expect(Number(seconds)).toBeGreaterThanOrEqual(19);
    expect(Number(seconds)).toBeLessThanOrEqual(Math.ceil((Date.now() - stoppedAt) / 1000) + 1);
    // Back within a heartbeat timeout of the continue, the first reconnection's backoff and the forwarding of 41.
    expect(noticedWithin).toBeLessThan(HEARTBEAT_TIMEOUT_MS + 5_000);
    // The reconnection has the gap's line instead of a connected line of its own.
    expect(cli.stderr.split('\n').filter((line) => /^\S+ {2}connected \(/u.test(line))).toHaveLength(1);
    expect(await cli.stop()).toBe(0);
  }, 90_000);

  it('the network silently dropping the connection (a relay that stops forwarding, closing nothing): noticed by heartbeat, one NDJSON object for the gap with --json', async () => {
    const relay = await TcpRelay.start(server.url);
    defer(() => relay.stop());
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '-f', app.url, '--json', '--heartbeat-timeout', `${HEARTBEAT_TIMEOUT_MS}ms`], await configDir(), { HOOKRELAY_API_URL: relay.url });
    // With --json no connected line: the server counts the stream.
    for (let i = 0; i < 200 && (await api<{ connected_listeners: number }>(server.url, server.apiKey, 'GET', `/v1/inbound-endpoints/${endpoint.id}`)).connected_listeners < 1; i++) await delay(100);
    await send(endpoint.token, -1);
    await app.waitFor(1);
    // The start's HTTP connection has closed by now (idle): the stream is what the relay holds.
    await delay(5_000);

    expect(relay.silence()).toBeGreaterThanOrEqual(1);
    const silencedAt = Date.now();
    for (let n = 0; n < ARRIVING; n++) await send(endpoint.token, n);

    await cli.waitForStderr(/warning: disconnected \(websocket\): no heartbeat from the server for 3s: the connection is dead/u, 15_000);
    const noticedAfter = Date.now() - silencedAt;
    await until(() => cli.records().some((r) => r.type === 'reconnected'), 'the gap object', 15_000, () => cli.explain());
    await app.waitFor(1 + ARRIVING, 10_000);
    await delay(1_000);
    expect(bodies(app)).toEqual([-1, ...range(0, ARRIVING)]);

    const records = cli.records<{ type?: string; down_ms?: number; arrived?: number | null; message_id?: string }>();
    const gaps = records.filter((r) => r.type === 'reconnected');
    expect(gaps).toHaveLength(1);
    expect(gaps[0]).toEqual({ type: 'reconnected', down_ms: expect.any(Number), arrived: ARRIVING });
    // From the last ping heard (at most a second before the silence) to the reconnection.
    expect(gaps[0]!.down_ms).toBeGreaterThanOrEqual(HEARTBEAT_TIMEOUT_MS);
    expect(gaps[0]!.down_ms).toBeLessThan(noticedAfter + 1_000 + 5_000);
    // Noticed within the heartbeat timeout (and the watch's tick) of the last ping heard.
    expect(noticedAfter).toBeLessThan(HEARTBEAT_TIMEOUT_MS + 1_500);
    // The gap's object comes after the deliveries it counts, each of them once.
    const deliveries = records.filter((r) => r.type === undefined);
    expect(deliveries).toHaveLength(1 + ARRIVING);
    expect(records.indexOf(gaps[0]!)).toBe(records.length - 1);
    expect(await cli.stop()).toBe(0);
  }, 60_000);
});
