import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonError, parseJsonOutput, runCli } from './helpers/cli.js';
import { testResources } from './helpers/fixture.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { headerOf, PROVIDER_CHECKS } from './helpers/provider-checks.js';
import { api, createCliEndpoint, delay, sendWebhook, until, type ListenProcess, type ReceivedRequest } from './helpers/listen.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * `hookrelay listen` beyond one target: routes to several local apps, an https:// app with a
 * self-signed certificate, no time limit, and `hookrelay trigger`'s signed samples at the app.
 */

let server: RunningServer;
let env: Record<string, string>;
const { configDir, localApp, cleanup, defer, listen: listenWith } = testResources();

beforeAll(async () => {
  server = await startServer();
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await cleanup();
  await server?.stop();
});

function listen(args: string[], dir: string, cwd?: string): ListenProcess {
  return listenWith(args, dir, env, cwd);
}

/** The cursor a listener saved (listener "default", any profile). */
function savedCursor(dir: string, endpointId: string): string | null {
  const root = join(dir, 'cursors');
  if (!existsSync(root)) return null;
  for (const profile of readdirSync(root)) {
    const file = join(root, profile, `${endpointId}.json`);
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { cursor: string | null }).cursor;
  }
  return null;
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hookrelay-e2e-routes-'));
  defer(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('routes', () => {
  it('hookrelay.json sends each path to its app: in order, byte for byte, prefix removed', async () => {
    const github = await localApp();
    const stripe = await localApp();
    const cwd = await tempDir();
    await writeFile(
      join(cwd, 'hookrelay.json'),
      JSON.stringify({ routes: [{ path: '/github', forward_to: `${github.url}/gh` }, { path: '/stripe', forward_to: String(stripe.port) }] }),
    );
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    // --since: what is sent while it connects is forwarded too.
    const cli = listen([endpoint.id, '--json', '--since', '1m'], await configDir(), cwd);
    const sent: { app: 'github' | 'stripe' | 'none'; body: Buffer; path: string }[] = [];
    for (let i = 0; i < 21; i++) {
      const app = i === 20 ? 'none' : i % 3 === 0 ? 'stripe' : 'github';
      const body = Buffer.concat([Buffer.from(`{"n":${i}}`), randomBytes(64)]);
      const path = app === 'none' ? '/other' : `/${app}/event/${i}`;
      await sendWebhook(server.url, endpoint.token, { pathAndQuery: `${path}?i=${i}`, headers: [['Content-Type', 'application/octet-stream']], body });
      sent.push({ app, body, path });
    }
    await github.waitFor(sent.filter((s) => s.app === 'github').length);
    await stripe.waitFor(sent.filter((s) => s.app === 'stripe').length);
    await until(() => cli.records().length === 21, 'a line per message, the unrouted one included', 20_000, () => cli.explain());
    const expectAt = (app: 'github' | 'stripe', received: ReceivedRequest[], base: string): void => {
      const mine = sent.filter((s) => s.app === app);
      expect(received.map((r) => r.url)).toEqual(mine.map((s) => `${base}${s.path.slice(app.length + 1)}?i=${sent.indexOf(s)}`));
      expect(received.map((r) => r.body.toString('hex'))).toEqual(mine.map((s) => s.body.toString('hex')));
    };
    expectAt('github', github.requests, '/gh');
    expectAt('stripe', stripe.requests, '');
    const last = cli.records<{ target: string | null; error: string | null; path: string }>()[20]!;
    expect(last).toMatchObject({ path: '/other', target: null, error: 'no route takes this message (path /other): skipped' });
    expect(await cli.stop()).toBe(0);
  });
});

describe('filters', () => {
  it('a filtered listener restarted after 20 webhooks (10 matching) delivers exactly the 10, once; event routes pick the app', async () => {
    const pushes = await localApp();
    const pulls = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const dir = await configDir();
    const routes = ['--forward-to', `event:push=${pushes.url}`, '--forward-to', `event:pull_*=${pulls.url}`, '--events', 'push,pull_request'];

    // A first run saves the cursor, then the listener is stopped.
    const first = listen([endpoint.id, ...routes], dir);
    await first.waitForStderr(/connected \(websocket\)/u);
    expect(first.stderr).toContain('only events push,pull_request (the server skips the rest)');
    expect(await first.stop()).toBe(0);

    const sent: { event: string; id: string; body: Buffer }[] = [];
    for (let i = 0; i < 20; i++) {
      // Even: matching (push, pull_request alternately); odd: skipped (issues, star). The last one is skipped.
      const event = i % 2 === 1 ? (i % 4 === 1 ? 'issues' : 'star') : i % 4 === 0 ? 'push' : 'pull_request';
      const body = Buffer.concat([Buffer.from(`{"i":${i}}`), randomBytes(32)]);
      const { messageId } = await sendWebhook(server.url, endpoint.token, { headers: [['X-GitHub-Event', event], ['Content-Type', 'application/json']], body });
      sent.push({ event, id: messageId, body });
    }
    const matching = sent.filter((s) => s.event === 'push' || s.event === 'pull_request');
    expect(matching).toHaveLength(10);

    const second = listen([endpoint.id, ...routes, '--json'], dir);
    await until(() => second.records().length === 10, 'the 10 matching messages', 30_000, () => second.explain());
    await until(() => pushes.requests.length + pulls.requests.length === 10, 'both apps');
    // The cursor moves past the skipped tail too: the next run starts after the 20th webhook.
    await until(() => savedCursor(dir, endpoint.id) === sent[19]!.id, 'the cursor at the 20th (skipped) webhook', 20_000, () => second.explain());
    expect(await second.stop()).toBe(0);
    expect(second.records<{ message_id: string }>().map((r) => r.message_id)).toEqual(matching.map((m) => m.id));
    expect(pushes.requests.map((r) => r.body.toString('hex'))).toEqual(matching.filter((m) => m.event === 'push').map((m) => m.body.toString('hex')));
    expect(pulls.requests.map((r) => r.body.toString('hex'))).toEqual(matching.filter((m) => m.event === 'pull_request').map((m) => m.body.toString('hex')));

    // Once: a third run (polling this time) delivers only what came after.
    const { messageId: later } = await sendWebhook(server.url, endpoint.token, { headers: [['X-GitHub-Event', 'push']], body: 'later' });
    const third = listen([endpoint.id, ...routes, '--json', '--transport', 'poll'], dir);
    await until(() => third.records().length === 1, 'the one new message', 30_000, () => third.explain());
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await third.stop()).toBe(0);
    expect(third.records<{ message_id: string }>().map((r) => r.message_id)).toEqual([later]);
    expect(pushes.requests.length + pulls.requests.length).toBe(11);
  });
});

describe('an https:// app with a self-signed certificate', () => {
  it('receives with --ca-file and with --insecure; --insecure to a non-loopback target exits 2', async () => {
    const receiver = await startHttpsReceiver();
    defer(() => receiver.stop());
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const dir = await configDir();

    const trusted = listen([endpoint.id, '--forward-to', `${receiver.url}/ok`, '--ca-file', receiver.caFile], dir);
    await trusted.waitForStderr(/connected \(websocket\)/u);
    await sendWebhook(server.url, endpoint.token, { pathAndQuery: '/one', body: 'first' });
    await until(() => receiver.received.length === 1, 'the first message over https');
    expect(await trusted.stop()).toBe(0);

    const insecure = listen([endpoint.id, '--forward-to', `https://localhost:${new URL(receiver.url).port}/ok`, '--insecure'], dir);
    await insecure.waitForStderr(/connected \(websocket\)/u);
    expect(insecure.stderr).toMatch(/warning:.*--insecure/u);
    await sendWebhook(server.url, endpoint.token, { pathAndQuery: '/two', body: 'second' });
    await until(() => receiver.received.length === 2, 'the second message over https');
    expect(await insecure.stop()).toBe(0);
    expect(receiver.received.map((r) => [r.path, r.body.toString()])).toEqual([
      ['/ok/one', 'first'],
      ['/ok/two', 'second'],
    ]);

    const refused = await runCli(['listen', endpoint.id, '--forward-to', 'https://example.com/hooks', '--insecure', '--json'], { env });
    expect(refused.code).toBe(2);
    expect(parseJsonError(refused).error.message).toMatch(/--insecure is only accepted for loopback targets/);
  });
});

describe('--timeout 0', () => {
  it('holds a message for as long as the app takes (60 s), then delivers and reports it', { timeout: 120_000 }, async () => {
    const app = await localApp((_request, res) => {
      setTimeout(() => res.writeHead(201, { 'X-Debug': 'breakpoint' }).end('took its time'), 60_000);
    });
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '--forward-to', String(app.port), '--timeout', '0', '--json', '--since', '1m'], await configDir());
    const { messageId } = await sendWebhook(server.url, endpoint.token, { body: 'breakpoint' });
    await app.waitFor(1);
    await until(() => cli.records().length === 1, 'the delivery after 60 s', 90_000, () => cli.explain());
    const [record] = cli.records<{ message_id: string; status: number; latency_ms: number; response_body: string }>();
    expect(record).toMatchObject({ message_id: messageId, status: 201 });
    expect(record!.latency_ms).toBeGreaterThanOrEqual(59_000);
    expect(Buffer.from(record!.response_body, 'base64').toString()).toBe('took its time');
    expect(await cli.stop()).toBe(0);
    // The answer reached the server too, under the listener's name (the server records a stream's
    // reports within its linger, RESULT_LINGER_MS).
    type Stored = { answers: { listener: string; status: number; response_body: string; response_headers: [string, string][] }[] };
    const storedAnswer = () => api<Stored>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${messageId}`);
    let stored = await storedAnswer();
    for (let tries = 0; tries < 100 && stored.answers.length === 0; tries++) {
      await delay(50);
      stored = await storedAnswer();
    }
    expect(stored.answers).toHaveLength(1);
    expect(stored.answers[0]).toMatchObject({ listener: 'default', status: 201, response_body: Buffer.from('took its time').toString('base64') });
    expect(stored.answers[0]!.response_headers).toContainEqual(['x-debug', 'breakpoint']);
  });
});

describe('hookrelay trigger', () => {
  const providers = [
    { provider: 'github', settings: { hmac_scheme: 'github' }, secret: 'gh-e2e-secret' },
    { provider: 'stripe', settings: { hmac_scheme: 'stripe' }, secret: 'whsec_e2e_stripe' },
    { provider: 'slack', settings: { hmac_scheme: 'slack' }, secret: 'slack-e2e-signing-secret' },
    { provider: 'shopify', settings: { hmac_scheme: 'base64', hmac_header_name: 'X-Shopify-Hmac-Sha256' }, secret: 'shpss_e2e' },
    { provider: 'standard_webhooks', settings: { hmac_scheme: 'standard_webhooks' }, secret: `whsec_${randomBytes(32).toString('base64')}` },
  ];

  let list: { provider: string; event: string }[] = [];
  beforeAll(async () => {
    list = parseJsonOutput<{ provider: string; event: string }[]>(await runCli(['trigger', '--list', '--json']));
  });

  it('--list names the 11 samples', () => {
    expect(list).toHaveLength(11);
    expect(new Set(list.map((row) => row.provider))).toEqual(new Set(providers.map((p) => p.provider)));
  });

  it.each(providers)('$provider: every sample passes the endpoint verification and the provider check at the local app', { timeout: 90_000 }, async ({ provider, settings, secret }) => {
    const app = await localApp();
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_secret: secret, ...settings });
    const cli = listen([endpoint.id, '--forward-to', String(app.port)], await configDir());
    await cli.waitForStderr(/connected \(websocket\)/u);
    const events = list.filter((row) => row.provider === provider).map((row) => row.event);
    // Server-signed for every event; the first event also signed by the CLI with --secret.
    const runs = [...events.map((event) => ({ event, extra: [] as string[] })), { event: events[0]!, extra: ['--secret', secret] }];
    const results = await Promise.all(
      runs.map(({ event, extra }) => runCli(['trigger', endpoint.id, provider, event, '--set', 'hookrelay_e2e=true', '--json', ...extra], { env })),
    );
    for (const [index, result] of results.entries()) {
      expect(result.code, result.stderr).toBe(0);
      expect(parseJsonOutput(result)).toMatchObject({ ingest_status: 200, signed_by: runs[index]!.extra.length === 0 ? 'server' : 'cli' });
    }
    await app.waitFor(runs.length);
    for (const request of app.requests) {
      expect(await PROVIDER_CHECKS[provider]!(request, secret), `${provider} ${request.url}`).toBe(true);
      expect(JSON.parse(request.body.toString('utf8')).hookrelay_e2e).toBe(true);
    }
    if (provider === 'github') expect(app.requests.map((request) => headerOf(request, 'x-github-event')).sort()).toEqual([...events, events[0]!].sort());
    expect(await cli.stop()).toBe(0);
  });

  it('a wrong --secret is refused by the endpoint: exit 1, INGEST_REFUSED', async () => {
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'right' });
    const result = await runCli(['trigger', endpoint.id, 'github', 'ping', '--secret', 'wrong', '--json'], { env });
    expect(result.code).toBe(1);
    expect(parseJsonError(result).error.code).toBe('INGEST_REFUSED');
  });

  it('a --set path through __proto__ or constructor is a usage error (exit 2), for the CLI and for the server alike', async () => {
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_scheme: 'github', hmac_secret: 'proto' });
    for (const [set, extra] of [['__proto__.polluted=yes', []], ['constructor.prototype.polluted=yes', ['--secret', 'proto']]] as const) {
      const result = await runCli(['trigger', endpoint.id, 'github', 'ping', '--set', set, '--json', ...extra], { env });
      expect(result.code, result.stderr).toBe(2);
      const { error } = parseJsonError(result);
      expect(error.code).toBe('INVALID_ARGUMENTS');
      expect(error.message).toMatch(/--set: ".+" names "(__proto__|constructor)", which is refused/u);
    }
    const direct = await fetch(`${server.url}/v1/inbound-endpoints/${endpoint.id}/samples`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'github', event: 'ping', set: [{ path: '__proto__.polluted', value: 'yes' }] }),
    });
    expect(direct.status).toBe(400);
    expect(((await direct.json()) as { error: { details: unknown } }).error.details).toEqual([{ path: 'body.set.0.path', message: expect.stringContaining('__proto__') }]);
    // The server still answers every route (a polluted prototype made strict schemas refuse all of them).
    expect(await api(server.url, server.apiKey, 'GET', `/v1/inbound-endpoints/${endpoint.id}/messages`)).toEqual([]);
  });
});
