import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { Receiver, settled, waitForMessage, type Received } from '../helpers/receiver.js';

/**
 * An event's fan-out delivered end to end: a worker in the test process delivers each message to
 * its endpoint on a local HTTPS receiver, signed with that endpoint's own secret over the same bytes.
 */
let receiver: Receiver;
let t: TestApp;

beforeAll(async () => {
  receiver = await Receiver.start();
  t = await createTestApp({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '0.3,0.3' },
    // Generous: on a loaded machine a first attempt must not time out into a second one.
    worker: { requestTimeoutMs: 10_000, pollIntervalMs: 1000, stopGraceMs: 5000 },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const headersOf = (r: Received) => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));

/** An endpoint on its own receiver path. Each test gives its endpoints an owner of its own, so that its events reach only them. */
async function endpoint(fields: Record<string, unknown> = {}) {
  const route = receiver.route();
  const res = await t.request('POST', '/v1/endpoints', { body: { url: route.url, ...fields } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id as string, secret: res.body.data.signing_secret as string, path: route.path };
}

describe('an event’s fan-out', () => {
  it('is delivered to each endpoint that takes it, signed with its own secret over the same bytes, with its own webhook-id', async () => {
    const direct = await endpoint({ owner_id: 'cus_1', event_types: ['invoice.*'] });
    // Rate-limited: not handed to the worker at insert, so it goes through a claim.
    const claimed = await endpoint({ owner_id: 'cus_1', rate_limit_rps: 100 });
    const otherOwner = await endpoint({ owner_id: 'cus_2' });
    const otherType = await endpoint({ owner_id: 'cus_1', event_types: ['customer.*'] });

    const res = await t.request('POST', '/v1/events', { body: { event_type: 'invoice.paid', owner_id: 'cus_1', payload: { invoice: 'in_1', total: 42 } } });
    expect(res.status, res.raw).toBe(202);
    const event = res.body.data;
    expect(event.messages).toHaveLength(2);
    for (const ep of [direct, claimed]) {
      const message = event.messages.find((m: { endpoint_id: string }) => m.endpoint_id === ep.id);
      expect(message, ep.id).toBeDefined();
      const settledMessage = await waitForMessage(t, message.message_id, settled);
      expect(settledMessage).toMatchObject({ status: 'succeeded', attempt_count: 1, event_id: event.event_id });
      const [request] = await receiver.waitFor(ep.path, 1);
      expect(request!.body.toString()).toBe('{"invoice":"in_1","total":42}');
      expect(request!.headers['webhook-id']).toBe(message.message_id);
      expect(request!.headers['hookrelay-event-type']).toBe('invoice.paid');
      expect(new Webhook(ep.secret).verify(request!.body, headersOf(request!))).toEqual({ invoice: 'in_1', total: 42 });
    }
    // Each receiver's signature is its endpoint's: another endpoint's secret does not verify it.
    const [toDirect] = receiver.received(direct.path);
    expect(() => new Webhook(claimed.secret).verify(toDirect!.body, headersOf(toDirect!))).toThrow();
    expect(receiver.received(otherOwner.path)).toHaveLength(0);
    expect(receiver.received(otherType.path)).toHaveLength(0);

    const got = (await t.request('GET', `/v1/events/${event.event_id}`)).body.data;
    expect(got.messages.map((m: { status: string }) => m.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('is held by a paused endpoint and delivered once it resumes', async () => {
    const live = await endpoint({ owner_id: 'held' });
    const paused = await endpoint({ owner_id: 'held' });
    expect((await t.request('POST', `/v1/endpoints/${paused.id}/pause`)).status).toBe(200);

    const res = await t.request('POST', '/v1/events', { body: { event_type: 'order.shipped', owner_id: 'held', body: 'order 7 shipped', content_type: 'text/plain' } });
    expect(res.status, res.raw).toBe(202);
    const byEndpoint = new Map<string, string>(res.body.data.messages.map((m: { endpoint_id: string; message_id: string }) => [m.endpoint_id, m.message_id]));
    await waitForMessage(t, byEndpoint.get(live.id)!, (m) => m.status === 'succeeded');
    // Parked by the claim: no attempt while paused.
    const deadline = Date.now() + 5000;
    while ((await t.db.sql`SELECT 1 FROM delivery_jobs WHERE message_id = ${byEndpoint.get(paused.id)!} AND run_at = 'infinity'`).length === 0) {
      expect(Date.now() < deadline, 'the paused endpoint’s job was not parked').toBe(true);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(receiver.received(paused.path)).toHaveLength(0);
    expect((await t.request('GET', `/v1/messages/${byEndpoint.get(paused.id)!}`)).body.data).toMatchObject({ status: 'queued', attempt_count: 0 });

    expect((await t.request('POST', `/v1/endpoints/${paused.id}/resume`)).status).toBe(200);
    const delivered = await waitForMessage(t, byEndpoint.get(paused.id)!, settled);
    expect(delivered).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const [request] = await receiver.waitFor(paused.path, 1);
    expect(request!.body.toString()).toBe('order 7 shipped');
    expect(request!.headers['content-type']).toBe('text/plain');
    expect(request!.headers['webhook-id']).toBe(byEndpoint.get(paused.id));
    expect(() => new Webhook(paused.secret).verify(request!.body, headersOf(request!), { jsonParse: false })).not.toThrow();
  });
});
