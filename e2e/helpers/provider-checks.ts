import { createHmac, timingSafeEqual } from 'node:crypto';
import { verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import type { ReceivedRequest } from './listen.js';

export function headerOf(request: Pick<ReceivedRequest, 'headers'>, name: string): string {
  return request.headers.find(([key]) => key.toLowerCase() === name)?.[1] ?? '';
}

function safeEqual(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** Slack's documented bound on a request's age: a timestamp more than five minutes away may be a replay. */
const SLACK_MAX_AGE_SECONDS = 300;

/**
 * How a local app checks each provider's signature: the provider's library (GitHub, Stripe,
 * Standard Webhooks; each refuses a stale timestamp where it signs one), or the scheme its
 * provider documents (Slack, its five minutes included; Shopify). Resolves to whether it passed,
 * or rejects with the library's reason.
 */
export const PROVIDER_CHECKS: Record<string, (request: Pick<ReceivedRequest, 'headers' | 'body'>, secret: string) => Promise<boolean>> = {
  github: (request, secret) => githubVerify(secret, request.body.toString('utf8'), headerOf(request, 'x-hub-signature-256')),
  stripe: async (request, secret) => {
    const event = new Stripe('sk_test_unused').webhooks.constructEvent(request.body, headerOf(request, 'stripe-signature'), secret);
    return typeof event.id === 'string';
  },
  slack: async (request, secret) => {
    const timestamp = headerOf(request, 'x-slack-request-timestamp');
    if (!(Math.abs(Date.now() / 1000 - Number(timestamp)) <= SLACK_MAX_AGE_SECONDS)) throw new Error(`the request timestamp ${timestamp} is more than five minutes away`);
    const expected = `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:`).update(request.body).digest('hex')}`;
    return safeEqual(expected, headerOf(request, 'x-slack-signature'));
  },
  shopify: async (request, secret) => safeEqual(createHmac('sha256', secret).update(request.body).digest('base64'), headerOf(request, 'x-shopify-hmac-sha256')),
  standard_webhooks: async (request, secret) => {
    const headers = Object.fromEntries(request.headers.map(([name, value]) => [name.toLowerCase(), value]));
    new Webhook(secret).verify(request.body.toString('utf8'), headers);
    return true;
  },
};
