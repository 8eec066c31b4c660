import { createHash, randomBytes } from 'node:crypto';
import { signStripe } from '@hookrelay/shared';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { Receiver, settled, waitForMessage, type Received } from '../helpers/receiver.js';

/**
 * Late deliveries re-signed (docs/api.md, Late deliveries re-signed): a Stripe event signed ten
 * minutes before it leaves, accepted at ingest by an endpoint whose tolerance is widened to 15
 * minutes, goes to the listener (stream and listen pages) and to a forward-mode receiver with a
 * fresh Stripe-Signature that Stripe's own library accepts, the body byte for byte as it arrived,
 * and the stored message unchanged.
 */
const SECRET = 'whsec_resign_api_test';
const stripe = new Stripe('sk_test_unused');

let receiver: Receiver;
let t: TestApp;
let baseUrl: string;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '0.3', HOOKRELAY_STREAM_HEARTBEAT_SECONDS: '1' },
    worker: { requestTimeoutMs: 5000, pollIntervalMs: 200, stopGraceMs: 2000 },
  });
  baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

/** A Stripe event's bytes, spaced as Stripe sends them (the signature is over exactly these). */
const event = (n: number) => Buffer.from(`{\n  "id": "evt_${n}",\n  "object": "event",\n  "type": "invoice.paid",\n  "data": {"object": {"amount_paid": 1200}}\n}`);

const STRIPE = { verify_hmac: true, hmac_scheme: 'stripe', hmac_secret: SECRET, timestamp_tolerance_seconds: 900 };

async function endpoint(settings: Record<string, unknown>): Promise<{ id: string; token: string; path?: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'resign', mode: 'cli', ...settings } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

/** Posts `body` signed by Stripe's recipe `ageSeconds` ago; the stored message's id. */
async function sendSigned(token: string, body: Buffer, ageSeconds: number, secret = SECRET): Promise<{ id: string; signature: string }> {
  const signature = signStripe(secret, body, Math.floor(Date.now() / 1000) - ageSeconds);
  const res = await fetch(`${baseUrl}/in/${token}`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'stripe-signature': signature } });
  expect(res.status, await res.clone().text()).toBe(200);
  return { id: ((await res.json()) as { data: { message_id: string } }).data.message_id, signature };
}

interface CliMessage {
  message_id: string;
  headers: Record<string, string>;
  raw_headers: [string, string][];
  body?: unknown;
  body_url?: string;
  payload_sha256: string;
  signed_at?: string;
  resigned?: true;
  resign_skipped?: string;
}

const stripeSignature = (m: { raw_headers: [string, string][] }) => m.raw_headers.find(([name]) => name.toLowerCase() === 'stripe-signature')?.[1];
const bodyOf = (m: CliMessage) => Buffer.from(m.body as string, 'base64');

/** Stripe's own check, at the real clock with its default tolerance of 300 s: what an app does. */
function stripeAccepts(body: Buffer, signature: string | undefined): boolean {
  try {
    return stripe.webhooks.constructEvent(body, signature ?? '', SECRET).object === 'event';
  } catch {
    return false;
  }
}

/** A stream client collecting message frames (bounded waits); without `after`, from now on. */
async function openStream(endpointId: string, after?: string) {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v1/inbound-endpoints/${endpointId}/stream${after === undefined ? '' : `?after=${after}`}`, {
    headers: { authorization: `Bearer ${t.main.apiKey}` },
  });
  const frames: { type: string; replay?: boolean; message?: CliMessage }[] = [];
  socket.on('message', (data) => frames.push(JSON.parse(data.toString())));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const until = async (predicate: () => boolean, what: string) => {
    for (let i = 0; i < 200 && !predicate(); i++) await new Promise((r) => setTimeout(r, 25));
    if (!predicate()) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(frames)}`);
  };
  await until(() => frames.some((f) => f.type === 'ready'), 'ready');
  return { frames, until, messages: () => frames.filter((f) => f.type === 'message'), close: () => socket.close() };
}

const ZERO = '00000000-0000-7000-8000-000000000000';

describe('a cli-mode Stripe event signed ten minutes ago', () => {
  it('goes to a live stream re-signed (Stripe accepts it), its body exact; the stored message keeps what arrived', async () => {
    const ep = await endpoint(STRIPE);
    // From now on: the stream stands where the commit hands its messages over without a read.
    const stream = await openStream(ep.id);
    const body = event(1);
    const { id, signature } = await sendSigned(ep.token, body, 600);
    await stream.until(() => stream.messages().length === 1, 'the message frame');
    const message = stream.messages()[0]!.message!;
    stream.close();
    expect(message.message_id).toBe(id);
    expect(message.resigned).toBe(true);
    expect(Math.abs(Date.parse(message.signed_at!) / 1000 - (Math.floor(Date.now() / 1000) - 600))).toBeLessThan(5);
    expect(bodyOf(message)).toEqual(body);
    expect(message.payload_sha256).toBe(createHash('sha256').update(body).digest('hex'));
    expect(stripeSignature(message)).not.toBe(signature);
    expect(message.headers['stripe-signature']).toBe(stripeSignature(message));
    expect(stripeAccepts(body, signature)).toBe(false);
    expect(stripeAccepts(bodyOf(message), stripeSignature(message))).toBe(true);
    const stored = (await t.request('GET', `/v1/inbound-messages/${id}`)).body.data;
    expect(stripeSignature(stored)).toBe(signature);
  });

  it('goes re-signed in a listen page, a JSON body as JSON and with base64 the same bytes', async () => {
    const ep = await endpoint(STRIPE);
    const body = event(2);
    const { id } = await sendSigned(ep.token, body, 600);
    const page = (await t.request('GET', `/v1/inbound-endpoints/${ep.id}/listen?body_encoding=base64`)).body.data as CliMessage[];
    expect(page.map((m) => m.message_id)).toEqual([id]);
    expect(page[0]!.resigned).toBe(true);
    expect(stripeAccepts(bodyOf(page[0]!), stripeSignature(page[0]!))).toBe(true);
    const json = (await t.request('GET', `/v1/inbound-endpoints/${ep.id}/listen`)).body.data as CliMessage[];
    expect(json[0]!.body).toEqual(JSON.parse(body.toString()));
    expect(json[0]!.resigned).toBe(true);
  });

  it('goes re-signed again when replayed, with a newer timestamp', async () => {
    const ep = await endpoint(STRIPE);
    const body = event(3);
    const { id } = await sendSigned(ep.token, body, 600);
    const stream = await openStream(ep.id, ZERO);
    await stream.until(() => stream.messages().length === 1, 'the backlog frame');
    const first = stripeSignature(stream.messages()[0]!.message!)!;
    await new Promise((r) => setTimeout(r, 1100));
    expect((await t.request('POST', `/v1/inbound-messages/${id}/replay`)).status).toBe(200);
    await stream.until(() => stream.messages().length === 2, 'the replay frame');
    const replayed = stream.messages()[1]!;
    stream.close();
    expect(replayed.replay).toBe(true);
    expect(replayed.message!.resigned).toBe(true);
    expect(stripeAccepts(bodyOf(replayed.message!), stripeSignature(replayed.message!))).toBe(true);
    expect(Number(/t=(\d+)/u.exec(stripeSignature(replayed.message!)!)![1])).toBeGreaterThan(Number(/t=(\d+)/u.exec(first)![1]));
  });

  it('with a body sent by reference is re-signed over the stored bytes', async () => {
    const ep = await endpoint(STRIPE);
    const body = Buffer.from(JSON.stringify({ id: 'evt_big', object: 'event', filler: randomBytes(300 * 1024).toString('base64') }));
    await sendSigned(ep.token, body, 600);
    const [message] = (await t.request('GET', `/v1/inbound-endpoints/${ep.id}/listen`)).body.data as CliMessage[];
    expect(message!.body_url).toBeDefined();
    expect(message!.resigned).toBe(true);
    const download = await fetch(`${baseUrl}${message!.body_url!}`, { headers: { authorization: `Bearer ${t.main.apiKey}` } });
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes).toEqual(body);
    expect(stripeAccepts(bytes, stripeSignature(message!))).toBe(true);
  });

  it('records resigned with the listener’s answer and its attempt, as the report says', async () => {
    const ep = await endpoint(STRIPE);
    const { id } = await sendSigned(ep.token, event(4), 600);
    const report = await t.request('POST', `/v1/inbound-messages/${id}/result`, { body: { message_id: id, status: 200, latency_ms: 3, error: null, resigned: true } });
    expect(report.status, report.raw).toBe(200);
    expect(report.body.data.answers).toEqual([expect.objectContaining({ listener: 'default', status: 200, resigned: true })]);
    expect((await t.request('GET', `/v1/inbound-messages/${id}/attempts`)).body.data).toEqual([expect.objectContaining({ response_status: 200, resigned: true })]);
    const listed = (await t.request('GET', `/v1/inbound-endpoints/${ep.id}/messages`)).body.data;
    expect(listed[0].answers[0].resigned).toBe(true);
  });
});

describe('what is not re-signed', () => {
  it('a fresh event: the sender’s own signature, no late fields', async () => {
    const ep = await endpoint(STRIPE);
    const { signature } = await sendSigned(ep.token, event(5), 10);
    const [message] = (await t.request('GET', `/v1/inbound-endpoints/${ep.id}/listen?body_encoding=base64`)).body.data as CliMessage[];
    expect(stripeSignature(message!)).toBe(signature);
    expect(message).not.toHaveProperty('resigned');
    expect(message).not.toHaveProperty('signed_at');
    expect(message).not.toHaveProperty('resign_skipped');
  });

  it('with resign_late false (PATCH): as it arrived, and the listener is told why', async () => {
    const ep = await endpoint(STRIPE);
    expect((await t.request('PATCH', `/v1/inbound-endpoints/${ep.id}`, { body: { resign_late: false } })).status).toBe(200);
    expect((await t.request('GET', `/v1/inbound-endpoints/${ep.id}`)).body.data.resign_late).toBe(false);
    const stream = await openStream(ep.id);
    const { signature } = await sendSigned(ep.token, event(6), 600);
    await stream.until(() => stream.messages().length === 1, 'the message frame');
    const message = stream.messages()[0]!.message!;
    stream.close();
    expect(stripeSignature(message)).toBe(signature);
    expect(message.resigned).toBeUndefined();
    expect(message.resign_skipped).toBe('disabled');
    expect(message.signed_at).toBeDefined();
  });

  it('created with resign_late false, the record says so; by default it is true', async () => {
    const off = await endpoint({ ...STRIPE, resign_late: false });
    expect((await t.request('GET', `/v1/inbound-endpoints/${off.id}`)).body.data.resign_late).toBe(false);
    const on = await endpoint({ name: 'default' });
    expect((await t.request('GET', `/v1/inbound-endpoints/${on.id}`)).body.data.resign_late).toBe(true);
    expect((await t.request('PATCH', `/v1/inbound-endpoints/${on.id}`, { body: { resign_late: 'sometimes' } })).status).toBe(400);
  });

  it('without a Stripe secret: as it arrived, resign_skipped no_secret; unverified while the check was off', async () => {
    const none = await endpoint({});
    const { signature } = await sendSigned(none.token, event(7), 600);
    const [plain] = (await t.request('GET', `/v1/inbound-endpoints/${none.id}/listen?body_encoding=base64`)).body.data as CliMessage[];
    expect(stripeSignature(plain!)).toBe(signature);
    expect(plain!.resign_skipped).toBe('no_secret');

    const off = await endpoint({ ...STRIPE, verify_hmac: false });
    await sendSigned(off.token, event(8), 600, 'whsec_someone_else');
    const [unchecked] = (await t.request('GET', `/v1/inbound-endpoints/${off.id}/listen`)).body.data as CliMessage[];
    expect(unchecked!.resign_skipped).toBe('unverified');
    expect(unchecked!.resigned).toBeUndefined();
  });
});

describe('a forward-mode Stripe event signed ten minutes ago', () => {
  const stripeOf = (r: Received) => r.headers['stripe-signature'] as string;

  it('reaches the receiver re-signed, byte for byte, and so does its replay; the attempts say resigned', async () => {
    const route = receiver.route(() => ({ status: 200, body: 'ok' }));
    const ep = await endpoint({ ...STRIPE, mode: 'forward', url: route.url });
    const body = event(9);
    const { id, signature } = await sendSigned(ep.token, body, 600);
    expect((await waitForMessage(t, id, settled, { inbound: true })).status).toBe('succeeded');
    const [first] = receiver.received(route.path);
    expect(first!.body).toEqual(body);
    expect(stripeOf(first!)).not.toBe(signature);
    expect(stripeAccepts(first!.body, stripeOf(first!))).toBe(true);

    expect((await t.request('POST', `/v1/inbound-messages/${id}/replay`)).status).toBe(200);
    const requests = await receiver.waitFor(route.path, 2);
    expect(requests[1]!.body).toEqual(body);
    expect(stripeAccepts(requests[1]!.body, stripeOf(requests[1]!))).toBe(true);
    await waitForMessage(t, id, (m) => m.attempt_count === 2 && settled(m), { inbound: true });
    const attempts = (await t.request('GET', `/v1/inbound-messages/${id}/attempts`)).body.data;
    expect(attempts.map((a: { resigned?: boolean }) => a.resigned)).toEqual([true, true]);
    expect(stripeSignature((await t.request('GET', `/v1/inbound-messages/${id}`)).body.data)).toBe(signature);
  });

  it('fresh, or at an endpoint with resign_late false, goes with the sender’s signature', async () => {
    const route = receiver.route(() => ({ status: 200, body: 'ok' }));
    const fresh = await endpoint({ ...STRIPE, mode: 'forward', url: route.url });
    const sentFresh = await sendSigned(fresh.token, event(10), 10);
    expect((await waitForMessage(t, sentFresh.id, settled, { inbound: true })).status).toBe('succeeded');
    const off = await endpoint({ ...STRIPE, mode: 'forward', url: route.url.replace(/\/?$/u, '/off'), resign_late: false });
    const sentLate = await sendSigned(off.token, event(11), 600);
    expect((await waitForMessage(t, sentLate.id, settled, { inbound: true })).status).toBe('succeeded');
    const requests = await receiver.waitFor(route.path, 1);
    expect(stripeOf(requests[0]!)).toBe(sentFresh.signature);
    const [offRequest] = await receiver.waitFor(`${route.path}/off`, 1);
    expect(stripeOf(offRequest!)).toBe(sentLate.signature);
    for (const id of [sentFresh.id, sentLate.id]) {
      expect((await t.request('GET', `/v1/inbound-messages/${id}/attempts`)).body.data[0]).not.toHaveProperty('resigned');
    }
  });
});
