import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** End to end through the ingest URL, signed with the providers' own libraries. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

async function endpoint(settings: Record<string, unknown>): Promise<{ id: string; token: string }> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'signed', mode: 'cli', verify_hmac: true, ...settings } });
  expect(res.status, res.raw).toBe(201);
  return { id: res.body.data.id, token: res.body.data.secret_token };
}

async function post(token: string, body: string, headers: Record<string, string>) {
  return t.app.inject({ method: 'POST', url: `/in/${token}`, payload: body, headers: { 'content-type': 'application/json', ...headers } });
}

async function stored(id: string): Promise<number> {
  const [row] = await t.db.sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_messages WHERE inbound_endpoint_id = ${id}`;
  return row!.n;
}

const body = '{"action":"opened",  "number": 7 }';

describe('provider signatures at the ingest URL', () => {
  it('GitHub (X-Hub-Signature-256)', async () => {
    const secret = 'gh-secret';
    const { id, token } = await endpoint({ hmac_scheme: 'github', hmac_secret: secret });
    expect((await post(token, body, { 'x-hub-signature-256': await githubSign(secret, body) })).statusCode).toBe(200);
    expect((await post(token, body, { 'x-hub-signature-256': await githubSign('wrong', body) })).statusCode).toBe(401);
    expect((await post(token, body, {})).statusCode).toBe(401);
    expect(await stored(id)).toBe(1);
  });

  it('Stripe (Stripe-Signature with a timestamp)', async () => {
    const secret = 'whsec_stripe_test_secret';
    const { id, token } = await endpoint({ hmac_scheme: 'stripe', hmac_secret: secret });
    const stripe = new Stripe('sk_test_unused');
    const good = stripe.webhooks.generateTestHeaderString({ payload: body, secret });
    const stale = stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Math.floor(Date.now() / 1000) - 3600 });
    expect((await post(token, body, { 'stripe-signature': good })).statusCode).toBe(200);
    expect((await post(token, body, { 'stripe-signature': stale })).statusCode).toBe(401);
    expect((await post(token, `${body} `, { 'stripe-signature': good })).statusCode).toBe(401);
    expect(await stored(id)).toBe(1);
  });

  it('Standard Webhooks', async () => {
    const secret = `whsec_${Buffer.from('standard-webhooks-secret-32bytes').toString('base64')}`;
    const { id, token } = await endpoint({ hmac_scheme: 'standard_webhooks', hmac_secret: secret });
    const wh = new Webhook(secret);
    const msgId = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
    const now = new Date();
    const signature = wh.sign(msgId, now, body);
    const headers = { 'webhook-id': msgId, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': signature };
    expect((await post(token, body, headers)).statusCode).toBe(200);
    expect((await post(token, body, { ...headers, 'webhook-id': 'msg_other' })).statusCode).toBe(401);
    const old = new Date(Date.now() - 3600_000);
    const oldHeaders = { 'webhook-id': msgId, 'webhook-timestamp': String(Math.floor(old.getTime() / 1000)), 'webhook-signature': wh.sign(msgId, old, body) };
    expect((await post(token, body, oldHeaders)).statusCode).toBe(401);
    expect(await stored(id)).toBe(1);
  });
});
