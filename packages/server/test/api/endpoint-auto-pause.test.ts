import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { validateEventPayload } from '../../src/events/payload-validation.js';
import { EventTypeReads } from '../../src/events/type-reads.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { Receiver, type Received } from '../helpers/receiver.js';

/**
 * Endpoints whose deliveries keep failing, end to end with a worker in the test process and a local
 * HTTPS receiver: hookrelay pauses one after HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS (1 s here) of
 * nothing but failures with five messages failed for good, holds what comes meanwhile, delivers it
 * in order once resumed, and tells the operator's own endpoints subscribed to `hookrelay.*` —
 * signed as every delivery is — and nobody else; a failing announcement is not announced.
 * The worker sends one request at a time, so that the order requests arrive in is the order sent.
 */
let receiver: Receiver;
let t: TestApp;

const PAUSE_AFTER_MS = 1000;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: {
      ...receiver.deliveryEnv(),
      // Two attempts per message.
      HOOKRELAY_RETRY_SCHEDULE: '0.2',
      HOOKRELAY_ENDPOINT_PAUSE_AFTER_SECONDS: String(PAUSE_AFTER_MS / 1000),
    },
    worker: { concurrency: 1, requestTimeoutMs: 10_000, pollIntervalMs: 1000, stopGraceMs: 5000 },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const headersOf = (r: Received) => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const failed = (m: { status: string }) => m.status === 'failed_permanent';

/** A project of its own, with helpers bound to its key. */
async function project() {
  const { apiKey, projectId } = await t.createProject();
  const request = (method: string, url: string, body?: unknown) => t.request(method, url, { apiKey, ...(body !== undefined ? { body } : {}) });
  /** An endpoint on a receiver path of its own; `answer` gives the status of each request. */
  const endpoint = async (fields: Record<string, unknown>, answer: () => number = () => 200) => {
    const route = receiver.route(() => ({ status: answer(), body: 'answer' }));
    const res = await request('POST', '/v1/endpoints', { url: route.url, ...fields });
    expect(res.status, res.raw).toBe(201);
    return { id: res.body.data.id as string, secret: res.body.data.signing_secret as string, path: route.path };
  };
  const message = async (endpointId: string, n: number) => {
    const res = await request('POST', '/v1/messages', { endpoint_id: endpointId, event_type: 'order.created', payload: { n } });
    expect(res.status, res.raw).toBe(202);
    return res.body.data.message_id as string;
  };
  /** Polls the project's message until `done` holds; returns the record. */
  const settle = async (id: string, done: (m: any) => boolean): Promise<any> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await request('GET', `/v1/messages/${id}`);
      if (res.status === 200 && done(res.body.data)) return res.body.data;
      if (Date.now() > deadline) throw new Error(`message ${id} did not settle: ${res.raw}`);
      await sleep(25);
    }
  };
  const getEndpoint = async (id: string) => (await request('GET', `/v1/endpoints/${id}`)).body.data;
  /** The project's events of a type, oldest first. */
  const events = async (type: string) => ((await request('GET', `/v1/events?event_type=${type}&limit=200`)).body.data as { event_id: string }[]).reverse();
  return { apiKey, projectId, request, endpoint, message, settle, getEndpoint, events };
}

/** What the receiver on `path` got, verified with `secret` by the standardwebhooks library, by event type. */
function verified(path: string, secret: string): { type: string; webhookId: string; payload: any }[] {
  return receiver.received(path).map((r) => ({
    type: String(r.headers['hookrelay-event-type']),
    webhookId: String(r.headers['webhook-id']),
    payload: new Webhook(secret).verify(r.body, headersOf(r)),
  }));
}

describe('an endpoint whose deliveries keep failing', () => {
  it('is paused by hookrelay, announced to the operator, holds new messages, and delivers them in order once resumed', async () => {
    const p = await project();
    let failing = true;
    const target = await p.endpoint({ owner_id: 'cus_1' }, () => (failing ? 500 : 200));
    const operator = await p.endpoint({ event_types: ['hookrelay.*'] });
    const operatorEverything = await p.endpoint({});
    const customerOps = await p.endpoint({ owner_id: 'cus_1', event_types: ['hookrelay.*'] });

    // Four messages failed for good (two attempts each): not enough, whatever the time.
    const ended = [];
    for (let n = 1; n <= 4; n++) ended.push(await p.settle(await p.message(target.id, n), failed));
    const failingSince = ended[0].first_attempt_at as string;
    const wait = Date.parse(failingSince) + PAUSE_AFTER_MS + 100 - Date.now();
    if (wait > 0) await sleep(wait);
    expect(await p.getEndpoint(target.id)).toMatchObject({ paused: false, paused_reason: null, paused_at: null });

    // The fifth, an event's message, fails for good past the time: the endpoint is paused.
    const sent = await p.request('POST', '/v1/events', { event_type: 'order.created', owner_id: 'cus_1', payload: { n: 5 } });
    expect(sent.status, sent.raw).toBe(202);
    expect(sent.body.data.messages.map((m: { endpoint_id: string }) => m.endpoint_id)).toEqual([target.id]);
    const eventId = sent.body.data.event_id as string;
    ended.push(await p.settle(sent.body.data.messages[0].message_id, failed));
    const paused = await p.getEndpoint(target.id);
    expect(paused).toMatchObject({ paused: true, paused_reason: 'failing', paused_at: expect.any(String) });
    expect(Date.parse(paused.paused_at)).toBeGreaterThan(Date.parse(failingSince) + PAUSE_AFTER_MS - 1000);

    // The operator's endpoint hears of each message and of the pause, signed with its own secret.
    await receiver.waitFor(operator.path, 6);
    const heard = verified(operator.path, operator.secret);
    const failures = heard.filter((h) => h.type === 'hookrelay.message.failed');
    expect(failures.map((h) => h.payload)).toEqual(
      ended.map((m, i) => ({
        message_id: m.message_id,
        event_id: i === 4 ? eventId : null,
        endpoint_id: target.id,
        owner_id: 'cus_1',
        event_type: 'order.created',
        attempts: 2,
        last_error: 'HTTP 500',
      })),
    );
    const pauses = heard.filter((h) => h.type === 'hookrelay.endpoint.paused');
    expect(pauses.map((h) => h.payload)).toEqual([{ endpoint_id: target.id, owner_id: 'cus_1', reason: 'failing', last_error: 'HTTP 500', failing_since: failingSince }]);
    expect(heard).toHaveLength(6);
    // Each payload is exactly what the built-in type's schema says.
    for (const h of heard) {
      expect(await validateEventPayload({ types: new EventTypeReads(t.db.sql), eventSchemas: t.app.services.eventSchemas }, p.projectId, h.type, h.payload)).toEqual({ ok: true });
    }
    // They are events of the project, each fanned out to the operator's subscribed endpoint only.
    const announced = [...(await p.events('hookrelay.message.failed')), ...(await p.events('hookrelay.endpoint.paused'))];
    expect(announced).toHaveLength(6);
    for (const event of announced) {
      const got = (await p.request('GET', `/v1/events/${event.event_id}`)).body.data;
      expect(got).toMatchObject({ owner_id: null, channels: [], content_type: 'application/json' });
      expect(got.messages.map((m: { endpoint_id: string }) => m.endpoint_id)).toEqual([operator.id]);
      expect(heard.map((h) => h.webhookId)).toContain(got.messages[0].message_id);
    }
    expect(receiver.received(operatorEverything.path)).toHaveLength(0);
    expect(receiver.received(customerOps.path)).toHaveLength(0);

    // Paused: new messages are taken and held, no attempt made.
    failing = false;
    const attemptsBefore = receiver.received(target.path).length;
    const held = [await p.message(target.id, 6), await p.message(target.id, 7), await p.message(target.id, 8)];
    const deadline = Date.now() + 5000;
    while ((await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ANY(${held}::uuid[]) AND run_at = 'infinity'`).length < held.length) {
      expect(Date.now() < deadline, 'the held messages were not parked').toBe(true);
      await sleep(25);
    }
    for (const id of held) expect((await p.request('GET', `/v1/messages/${id}`)).body.data).toMatchObject({ status: 'queued', attempt_count: 0 });
    expect(receiver.received(target.path)).toHaveLength(attemptsBefore);

    const resumed = await p.request('POST', `/v1/endpoints/${target.id}/resume`);
    expect(resumed.body.data).toEqual({ id: target.id, paused: false });
    expect(await p.getEndpoint(target.id)).toMatchObject({ paused: false, paused_reason: null, paused_at: null });
    for (const id of held) expect(await p.settle(id, (m) => m.status === 'succeeded')).toMatchObject({ attempt_count: 1 });
    const delivered = receiver.received(target.path).slice(attemptsBefore);
    expect(delivered.map((r) => r.headers['webhook-id'])).toEqual(held);
    expect(delivered.map((r) => JSON.parse(r.body.toString()))).toEqual([{ n: 6 }, { n: 7 }, { n: 8 }]);
    for (const r of delivered) expect(() => new Webhook(target.secret).verify(r.body, headersOf(r))).not.toThrow();
    // Nothing more for the operator: a resume is not announced, and the held messages succeeded.
    expect(receiver.received(operator.path)).toHaveLength(6);
  });

  it('a manual pause is the reason `manual`, and is not announced', async () => {
    const p = await project();
    const target = await p.endpoint({});
    await p.endpoint({ event_types: ['hookrelay.*'] });
    await p.request('POST', `/v1/endpoints/${target.id}/pause`);
    expect(await p.getEndpoint(target.id)).toMatchObject({ paused: true, paused_reason: 'manual', paused_at: expect.any(String) });
    await p.request('POST', `/v1/endpoints/${target.id}/resume`);
    expect(await p.getEndpoint(target.id)).toMatchObject({ paused: false, paused_reason: null, paused_at: null });
    expect(await p.events('hookrelay.endpoint.paused')).toEqual([]);
  });
});

describe('hookrelay’s own events', () => {
  it('are not announced when they fail: a message of a hookrelay.* type that fails for good makes no event', async () => {
    const p = await project();
    const broken = await p.endpoint({ event_types: ['hookrelay.*'] }, () => 500);
    const customer = await p.endpoint({ owner_id: 'cus_2' }, () => 500);
    await p.settle(await p.message(customer.id, 1), failed);
    const [announcement] = await p.events('hookrelay.message.failed');
    expect(announcement).toBeDefined();
    const event = (await p.request('GET', `/v1/events/${announcement!.event_id}`)).body.data;
    expect(event.messages.map((m: { endpoint_id: string }) => m.endpoint_id)).toEqual([broken.id]);
    // The announcement itself fails for good at the operator's endpoint, which is not told of it.
    const own = await p.settle(event.messages[0].message_id, failed);
    expect(own).toMatchObject({ event_type: 'hookrelay.message.failed', attempt_count: 2 });
    // The statement that recorded that result would have made the event: none is there.
    expect(await p.events('hookrelay.message.failed')).toHaveLength(1);
    expect(await p.events('hookrelay.endpoint.paused')).toHaveLength(0);
    expect(receiver.received(broken.path)).toHaveLength(2);
  });

  it('are not made about a message sent directly under a hookrelay.* type', async () => {
    const p = await project();
    await p.endpoint({ event_types: ['hookrelay.*'] });
    const target = await p.endpoint({}, () => 500);
    const res = await p.request('POST', '/v1/messages', { endpoint_id: target.id, event_type: 'hookrelay.message.failed', payload: {} });
    expect(res.status, res.raw).toBe(202);
    await p.settle(res.body.data.message_id, failed);
    expect(await p.events('hookrelay.message.failed')).toEqual([]);
  });
});
