import { createHash } from 'node:crypto';
import { verify as githubVerify } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** POST /v1/inbound-endpoints/{id}/samples: signed with the stored secret, ingested for real. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const STANDARD_SECRET = `whsec_${Buffer.from('standard-webhooks-secret-32bytes').toString('base64')}`;

async function endpoint(settings: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'samples', mode: 'cli', ...settings } });
  expect(res.status, res.raw).toBe(201);
  return res.body.data.id as string;
}

interface StoredMessage {
  path: string;
  raw_headers: [string, string][];
  body: string;
  payload_sha256: string;
}

async function storedMessage(id: string): Promise<StoredMessage> {
  const res = await t.request('GET', `/v1/inbound-messages/${id}?body_encoding=base64`);
  expect(res.status, res.raw).toBe(200);
  return res.body.data as StoredMessage;
}

function header(message: StoredMessage, name: string): string {
  const found = message.raw_headers.find(([key]) => key.toLowerCase() === name);
  if (found === undefined) throw new Error(`no ${name} header`);
  return found[1];
}

describe('POST /v1/inbound-endpoints/{id}/samples', () => {
  it('GitHub: passes the endpoint verification; stored bytes verify with @octokit/webhooks-methods', async () => {
    const secret = 'gh-sample-secret';
    const id = await endpoint({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: secret });
    const res = await t.request('POST', `/v1/inbound-endpoints/${id}/samples`, {
      body: { provider: 'github', event: 'push', path: '/github', set: [{ path: 'ref', value: 'refs/heads/release' }, { path: 'repository.private', value: true }] },
    });
    expect(res.status, res.raw).toBe(201);
    const data = res.body.data;
    expect(data).toMatchObject({ inbound_endpoint_id: id, provider: 'github', event: 'push', path: '/github', ingest_status: 200, duplicate: false });
    expect(JSON.stringify(res.body)).not.toContain(secret);
    const message = await storedMessage(data.message_id);
    const bytes = Buffer.from(message.body, 'base64');
    expect(message.path).toBe('/github');
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(data.payload_sha256);
    expect(bytes.length).toBe(data.size_bytes);
    expect(header(message, 'x-github-event')).toBe('push');
    expect(header(message, 'x-github-delivery')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await githubVerify(secret, bytes.toString('utf8'), header(message, 'x-hub-signature-256'))).toBe(true);
    const json = JSON.parse(bytes.toString('utf8'));
    expect(json.ref).toBe('refs/heads/release');
    expect(json.repository.private).toBe(true);
  });

  it('Stripe and Standard Webhooks: verified by the providers\' own libraries', async () => {
    const stripeSecret = 'whsec_stripe_sample';
    const stripeId = await endpoint({ verify_hmac: true, hmac_scheme: 'stripe', hmac_secret: stripeSecret });
    const res = await t.request('POST', `/v1/inbound-endpoints/${stripeId}/samples`, { body: { provider: 'stripe', event: 'invoice.paid' } });
    expect(res.status, res.raw).toBe(201);
    const message = await storedMessage(res.body.data.message_id);
    const event = new Stripe('sk_test_unused').webhooks.constructEvent(Buffer.from(message.body, 'base64'), header(message, 'stripe-signature'), stripeSecret);
    expect(event.type).toBe('invoice.paid');

    const standardId = await endpoint({ verify_hmac: true, hmac_scheme: 'standard_webhooks', hmac_secret: STANDARD_SECRET });
    const standard = await t.request('POST', `/v1/inbound-endpoints/${standardId}/samples`, { body: { provider: 'standard_webhooks', event: 'user.created' } });
    expect(standard.status, standard.raw).toBe(201);
    const stored = await storedMessage(standard.body.data.message_id);
    const headers = Object.fromEntries(stored.raw_headers.map(([name, value]) => [name.toLowerCase(), value]));
    expect(new Webhook(STANDARD_SECRET).verify(Buffer.from(stored.body, 'base64').toString('utf8'), headers)).toMatchObject({ type: 'user.created' });
  });

  it('Shopify on a base64 endpoint reading X-Shopify-Hmac-Sha256; Slack on a slack endpoint', async () => {
    const shopify = await endpoint({ verify_hmac: true, hmac_scheme: 'base64', hmac_header_name: 'X-Shopify-Hmac-Sha256', hmac_secret: 'shpss_secret' });
    const one = await t.request('POST', `/v1/inbound-endpoints/${shopify}/samples`, { body: { provider: 'shopify', event: 'orders/create' } });
    expect(one.status, one.raw).toBe(201);
    expect(header(await storedMessage(one.body.data.message_id), 'x-shopify-topic')).toBe('orders/create');
    const slack = await endpoint({ verify_hmac: true, hmac_scheme: 'slack', hmac_secret: '8f742231b10e8888abcd99yyyzzz85a5' });
    const two = await t.request('POST', `/v1/inbound-endpoints/${slack}/samples`, { body: { provider: 'slack', event: 'url_verification' } });
    expect(two.status, two.raw).toBe(201);
  });

  it('an endpoint that verifies nothing gets the sample unsigned, and the answer says so', async () => {
    const open = await endpoint({});
    const res = await t.request('POST', `/v1/inbound-endpoints/${open}/samples`, { body: { provider: 'github', event: 'push' } });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.data).toMatchObject({ inbound_endpoint_id: open, provider: 'github', event: 'push', ingest_status: 200, signed: false });
    const stored = await storedMessage(res.body.data.message_id);
    expect(header(stored, 'x-github-event')).toBe('push');
    expect(stored.raw_headers.some(([name]) => name.toLowerCase() === 'x-hub-signature-256')).toBe(false);

    // Verifying nothing but holding a secret of the provider's scheme: signed, for the app behind it.
    const keeps = await endpoint({ verify_hmac: false, hmac_scheme: 'github', hmac_secret: 'kept-secret' });
    const signed = await t.request('POST', `/v1/inbound-endpoints/${keeps}/samples`, { body: { provider: 'github', event: 'ping' } });
    expect(signed.status, signed.raw).toBe(201);
    expect(signed.body.data.signed).toBe(true);
    const message = await storedMessage(signed.body.data.message_id);
    expect(await githubVerify('kept-secret', Buffer.from(message.body, 'base64').toString('utf8'), header(message, 'x-hub-signature-256'))).toBe(true);
    // Another provider's sample on that endpoint goes unsigned rather than signed in the wrong scheme.
    const stripe = await t.request('POST', `/v1/inbound-endpoints/${keeps}/samples`, { body: { provider: 'stripe', event: 'invoice.paid' } });
    expect(stripe.status, stripe.raw).toBe(201);
    expect(stripe.body.data.signed).toBe(false);
  });

  it('refuses what it cannot sign, naming the field', async () => {
    const none = await endpoint({ verify_ip_allowlist: true, allowed_cidrs: ['127.0.0.1/32'] });
    const noSecret = await t.request('POST', `/v1/inbound-endpoints/${none}/samples`, { body: { provider: 'github', event: 'ping' } });
    expect(noSecret.status).toBe(400);
    expect(noSecret.body.error).toMatchObject({ code: 'INVALID_REQUEST', details: [{ path: 'body.provider' }] });
    expect(noSecret.body.error.message).toMatch(/no HMAC secret/);

    const github = await endpoint({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 's' });
    const wrongProvider = await t.request('POST', `/v1/inbound-endpoints/${github}/samples`, { body: { provider: 'stripe', event: 'invoice.paid' } });
    expect(wrongProvider.status).toBe(400);
    expect(wrongProvider.body.error.message).toMatch(/verifies hmac_scheme github in x-hub-signature-256, but stripe signs with stripe/);

    const withToken = await endpoint({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 's', verify_static_token: true, static_token_header_name: 'X-Token', static_token: 'tok' });
    const tokenRes = await t.request('POST', `/v1/inbound-endpoints/${withToken}/samples`, { body: { provider: 'github', event: 'ping' } });
    expect(tokenRes.status).toBe(400);
    expect(tokenRes.body.error.message).toMatch(/static token/);

    const badEvent = await t.request('POST', `/v1/inbound-endpoints/${github}/samples`, { body: { provider: 'github', event: 'deployment' } });
    expect(badEvent.status).toBe(400);
    expect(badEvent.body.error.details).toContainEqual({ path: 'body.event', message: 'must be one of ping, push, pull_request, issues for github' });

    const badSet = await t.request('POST', `/v1/inbound-endpoints/${github}/samples`, { body: { provider: 'github', event: 'ping', set: [{ path: 'zen.x', value: 1 }] } });
    expect(badSet.status).toBe(400);
    expect(badSet.body.error.message).toMatch(/body.set: "zen.x": zen is a string, not an object/);

    const badPath = await t.request('POST', `/v1/inbound-endpoints/${github}/samples`, { body: { provider: 'github', event: 'ping', path: 'no-slash' } });
    expect(badPath.status).toBe(400);
    expect(badPath.body.error.details[0].path).toBe('body.path');

    const unknown = await t.request('POST', '/v1/inbound-endpoints/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70/samples', { body: { provider: 'github', event: 'ping' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('ENDPOINT_NOT_FOUND');
  });

  it('a paused endpoint answers as its ingest does', async () => {
    const id = await endpoint({ verify_hmac: true, hmac_scheme: 'github', hmac_secret: 's' });
    expect((await t.request('POST', `/v1/inbound-endpoints/${id}/pause`)).status).toBe(200);
    const res = await t.request('POST', `/v1/inbound-endpoints/${id}/samples`, { body: { provider: 'github', event: 'ping' } });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('ENDPOINT_PAUSED');
  });

  it('needs the API key', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/inbound-endpoints/0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70/samples', payload: { provider: 'github', event: 'ping' } });
    expect(res.statusCode).toBe(401);
  });
});
