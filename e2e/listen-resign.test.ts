import { createHmac, randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonOutput, runCli } from './helpers/cli.js';
import { testResources } from './helpers/fixture.js';
import { startHttpsReceiver, type HttpsReceiver } from './helpers/https-receiver.js';
import { api, createCliEndpoint, sendWebhook, until, type ListenProcess, type ReceivedRequest } from './helpers/listen.js';
import { headerOf, PROVIDER_CHECKS } from './helpers/provider-checks.js';
import { startServer, type RunningServer } from './helpers/server.js';

/**
 * "Nothing lost" reaches the app's own signature check: an event its provider signed ten minutes
 * before it is delivered (a backlog, a replay; the endpoint's tolerance widened so that ingest took
 * it) is re-signed by the server with the endpoint's secret, and the provider's own library at the
 * app accepts it — through the built CLI's `listen`, a replay, and forward mode. The listen lines
 * say what arrived and what became of its signature. An edited replay's copy reaches the running
 * listener too, signed by the server (`--resign`) or without the original's signature.
 */

let server: RunningServer;
let receiver: HttpsReceiver;
let env: Record<string, string>;
const { configDir, localApp, cleanup, listen: listenWith } = testResources();

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  server = await startServer({ env: { HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true' } });
  env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
});

afterAll(async () => {
  await cleanup();
  await server?.stop();
  await receiver?.stop();
});

/** Seconds before now that the sender signed: ten minutes and a little, so that every line says "10 min late". */
const AGE_SECONDS = 605;
const TOLERANCE = { timestamp_tolerance_seconds: 900 };
const signedAt = () => Math.floor(Date.now() / 1000) - AGE_SECONDS;

interface Provider {
  provider: 'stripe' | 'slack' | 'standard_webhooks';
  secret: string;
  event: string;
  body: Buffer;
  /** The provider's headers for `body`, signed `AGE_SECONDS` ago with `secret`. */
  headers(body: Buffer, secret: string): [string, string][];
}

const PROVIDERS: Provider[] = [
  {
    provider: 'stripe',
    secret: 'whsec_e2e_resign_stripe',
    event: 'invoice.paid',
    body: Buffer.from('{\n  "id": "evt_1Resign",\n  "object": "event",\n  "type": "invoice.paid"\n}'),
    headers: (body, secret) => [
      ['Content-Type', 'application/json; charset=utf-8'],
      ['Stripe-Signature', new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret, timestamp: signedAt() })],
    ],
  },
  {
    provider: 'slack',
    secret: 'slack-e2e-resign-signing-secret',
    event: 'app_mention',
    body: Buffer.from('{"type":"event_callback","event":{"type":"app_mention","text":"héllo"}}'),
    headers: (body, secret) => {
      const timestamp = String(signedAt());
      return [
        ['Content-Type', 'application/json'],
        ['X-Slack-Request-Timestamp', timestamp],
        ['X-Slack-Signature', `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(body).digest('hex')}`],
      ];
    },
  },
  {
    provider: 'standard_webhooks',
    secret: `whsec_${randomBytes(32).toString('base64')}`,
    event: 'user.created',
    body: Buffer.from('{"type":"user.created","data":{"id":"u_1"}}'),
    headers: (body, secret) => {
      const at = new Date(signedAt() * 1000);
      return [
        ['Content-Type', 'application/json'],
        ['webhook-id', 'msg_e2e_resign'],
        ['webhook-timestamp', String(signedAt())],
        ['webhook-signature', new Webhook(secret).sign('msg_e2e_resign', at, body.toString('utf8'))],
      ];
    },
  },
];

/** A local app that checks the provider's signature as its own code would: 200, or 400 with the library's reason. */
async function checkingApp(provider: string, secret: string) {
  return localApp((request: ReceivedRequest, res: ServerResponse) => {
    PROVIDER_CHECKS[provider]!(request, secret).then(
      (ok) => (ok ? res.writeHead(200).end('verified') : res.writeHead(400).end('signature mismatch')),
      (error: unknown) => res.writeHead(400, { 'content-type': 'text/plain' }).end((error as Error).message),
    );
  });
}

function listen(args: string[], dir: string): ListenProcess {
  return listenWith(args, dir, env);
}

/** Reads `get` again (bounded) until `done` holds; the last value read. */
async function poll<T>(get: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  for (let tries = 0; tries < 200; tries++) {
    const value = await get();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('listen: a late event reaches the app re-signed', () => {
  it.each(PROVIDERS)('$provider: the app’s check takes it, byte for byte; the line says re-signed; its replay too', { timeout: 60_000 }, async ({ provider, secret, event, body, headers }) => {
    const app = await checkingApp(provider, secret);
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_scheme: provider, hmac_secret: secret, ...TOLERANCE });
    const cli = listen([endpoint.id, '--forward-to', String(app.port)], await configDir());
    await cli.waitForStderr(/connected \(websocket\)/u);
    const sent = headers(body, secret);
    const { messageId } = await sendWebhook(server.url, endpoint.token, { body, headers: sent });
    await app.waitFor(1);
    expect(app.requests[0]!.body).toEqual(body);
    expect(await PROVIDER_CHECKS[provider]!(app.requests[0]!, secret)).toBe(true);
    const line = new RegExp(`POST /  ${provider} ${event.replace('.', '\\.')}  200  \\d+ ms  ${messageId} \\(re-signed, 10 min late\\)$`, 'mu');
    await cli.waitForStderr(line);

    // A replay leaves later still, and is signed anew.
    await api(server.url, server.apiKey, 'POST', `/v1/inbound-messages/${messageId}/replay`);
    await app.waitFor(2);
    expect(await PROVIDER_CHECKS[provider]!(app.requests[1]!, secret)).toBe(true);
    await cli.waitForStderr(new RegExp(`${messageId} \\(replay, re-signed, 10 min late\\)$`, 'mu'));
    expect(await cli.stop()).toBe(0);

    // The listener reported that what it forwarded was re-signed; the stored message kept what arrived.
    type Stored = { raw_headers: [string, string][]; answers: { listener: string; status: number; resigned: boolean }[] };
    const stored = await poll(() => api<Stored>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${messageId}`), (m) => m.answers.length === 1, 'the answer');
    expect(stored.answers[0]).toMatchObject({ listener: 'default', status: 200, resigned: true });
    for (const [name, value] of sent.slice(1)) expect(headerOf({ headers: stored.raw_headers }, name.toLowerCase())).toBe(value);
  });

  it('--json: provider, event_type and resigned on each line', async () => {
    const { secret, body, headers } = PROVIDERS[0]!;
    const app = await checkingApp('stripe', secret);
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_scheme: 'stripe', hmac_secret: secret, ...TOLERANCE });
    await sendWebhook(server.url, endpoint.token, { body, headers: headers(body, secret) });
    const fresh = Buffer.from('{"id":"evt_fresh","object":"event","type":"invoice.created"}');
    await sendWebhook(server.url, endpoint.token, {
      body: fresh,
      headers: [['Stripe-Signature', new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload: fresh.toString('utf8'), secret })]],
    });
    const cli = listen([endpoint.id, '--forward-to', String(app.port), '--json', '--from-start'], await configDir());
    await until(() => cli.records().length === 2, 'two delivery lines', 20_000, () => cli.explain());
    expect(cli.records().map(({ provider, event_type, resigned, status }) => ({ provider, event_type, resigned, status }))).toEqual([
      { provider: 'stripe', event_type: 'invoice.paid', resigned: true, status: 200 },
      { provider: 'stripe', event_type: 'invoice.created', resigned: false, status: 200 },
    ]);
    expect(await cli.stop()).toBe(0);
  });
});

describe('listen: a late event the server cannot re-sign', () => {
  it('is refused by the app: its answer under the line, and a warning that says how to have it re-signed', async () => {
    const { secret, body, headers } = PROVIDERS[0]!;
    const app = await checkingApp('stripe', secret);
    // The endpoint verifies nothing and holds no Stripe secret.
    const endpoint = await createCliEndpoint(server.url, server.apiKey);
    const cli = listen([endpoint.id, '--forward-to', String(app.port)], await configDir());
    await cli.waitForStderr(/connected \(websocket\)/u);
    const { messageId } = await sendWebhook(server.url, endpoint.token, { body, headers: headers(body, secret) });
    await cli.waitForStderr(/hmac-secret …$/mu);
    const lines = cli.stderr.split('\n');
    const at = lines.findIndex((line) => line.includes(messageId));
    expect(lines[at]).toMatch(new RegExp(`POST /  stripe invoice\\.paid  400  \\d+ ms  ${messageId} \\(10 min late, not re-signed\\)$`, 'u'));
    expect(lines[at + 1]).toBe('    ↳ Timestamp outside the tolerance zone');
    expect(lines[at + 2]).toBe(
      `    signed 10 min before this delivery: the app's stripe signature check will likely refuse it; to have hookrelay re-sign late deliveries, give the endpoint the sender's signing secret: hookrelay inbound update ${endpoint.id} --hmac-scheme stripe --hmac-secret …`,
    );
    expect(app.requests[0]!.body).toEqual(body);
    expect(await cli.stop()).toBe(0);
  });
});

describe('forward mode: a late event reaches the receiver re-signed', () => {
  it('Stripe’s library takes what the worker sends, and what its replay sends; the attempts say resigned', { timeout: 60_000 }, async () => {
    const { secret, body, headers } = PROVIDERS[0]!;
    const path = `/ok/resign-${randomBytes(4).toString('hex')}`;
    const endpoint = await api<{ id: string; secret_token: string }>(server.url, server.apiKey, 'POST', '/v1/inbound-endpoints', {
      name: 'resign forward',
      url: `${receiver.url}${path}`,
      verify_hmac: true,
      hmac_scheme: 'stripe',
      hmac_secret: secret,
      ...TOLERANCE,
    });
    const sent = headers(body, secret);
    const { messageId } = await sendWebhook(server.url, endpoint.secret_token, { body, headers: sent });
    const at = () => receiver.received.filter((r) => r.path === path);
    await until(() => at().length === 1, 'the delivery', 20_000);
    const check = (r: (typeof receiver.received)[number]) =>
      PROVIDER_CHECKS.stripe!({ body: r.body, headers: [['Stripe-Signature', String(r.headers['stripe-signature'])]] }, secret);
    expect(at()[0]!.body).toEqual(body);
    expect(await check(at()[0]!)).toBe(true);

    await api(server.url, server.apiKey, 'POST', `/v1/inbound-messages/${messageId}/replay`);
    await until(() => at().length === 2, 'the replay', 20_000);
    expect(await check(at()[1]!)).toBe(true);
    type Attempt = { response_status: number; resigned?: boolean };
    const attempts = await poll(() => api<Attempt[]>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${messageId}/attempts`), (list) => list.length === 2, 'two attempts');
    expect(attempts).toEqual([expect.objectContaining({ response_status: 200, resigned: true }), expect.objectContaining({ response_status: 200, resigned: true })]);
    const stored = await api<{ raw_headers: [string, string][] }>(server.url, server.apiKey, 'GET', `/v1/inbound-messages/${messageId}`);
    expect(headerOf({ headers: stored.raw_headers }, 'stripe-signature')).toBe(sent[1]![1]);
  });
});

describe('listen: an edited replay', () => {
  it('reaches the running listener: re-signed, the app’s Stripe check takes the edited body; unsigned, the line says so', { timeout: 60_000 }, async () => {
    const { secret } = PROVIDERS[0]!;
    const app = await checkingApp('stripe', secret);
    const endpoint = await createCliEndpoint(server.url, server.apiKey, { verify_hmac: true, hmac_scheme: 'stripe', hmac_secret: secret });
    const cli = listen([endpoint.id, '--forward-to', String(app.port)], await configDir());
    await cli.waitForStderr(/connected \(websocket\)/u);
    const body = Buffer.from('{"id":"evt_edit","object":"event","type":"invoice.paid","data":{"object":{"amount_paid":100}}}');
    const { messageId } = await sendWebhook(server.url, endpoint.token, {
      body,
      headers: [
        ['Content-Type', 'application/json'],
        ['Stripe-Signature', new Stripe('sk_test_unused').webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret })],
      ],
    });
    await app.waitFor(1);

    type Copy = { message_id: string; replay_of: string; edited: boolean; signed: boolean };
    const signed = await runCli(['inbound', 'messages', 'replay', messageId, '--set', 'data.object.amount_paid=5000', '--resign', '--json'], { env });
    expect(signed.code, signed.stderr).toBe(0);
    const copy = parseJsonOutput<Copy>(signed);
    expect(copy).toMatchObject({ replay_of: messageId, edited: true, signed: true });
    await app.waitFor(2);
    expect(JSON.parse(app.requests[1]!.body.toString('utf8')).data.object.amount_paid).toBe(5000);
    expect(await PROVIDER_CHECKS.stripe!(app.requests[1]!, secret)).toBe(true);
    await cli.waitForStderr(new RegExp(`POST /  stripe invoice\\.paid  200  \\d+ ms  ${copy.message_id} \\(edited\\)$`, 'mu'));

    const unsigned = await runCli(['inbound', 'messages', 'replay', messageId, '--header', 'X-Edited: yes', '--json'], { env });
    expect(unsigned.code, unsigned.stderr).toBe(0);
    const bare = parseJsonOutput<Copy>(unsigned);
    await app.waitFor(3);
    expect(headerOf(app.requests[2]!, 'x-edited')).toBe('yes');
    expect(headerOf(app.requests[2]!, 'stripe-signature')).toBe('');
    // Without its signature the app refuses it, as it should.
    await cli.waitForStderr(new RegExp(`POST /  invoice\\.paid  400  \\d+ ms  ${bare.message_id} \\(edited, unsigned\\)$`, 'mu'));
    expect(await cli.stop()).toBe(0);
  });
});
