import { describe, expect, it } from 'vitest';
import { detectProvider, isProvider, PROVIDERS } from '../src/providers.js';
import { SAMPLE_PROVIDERS } from '../src/samples.js';

describe('detectProvider', () => {
  it('names the provider whose header a webhook carries, whatever the case of its name', () => {
    expect(detectProvider([['X-GitHub-Event', 'push']])).toBe('github');
    expect(detectProvider([['x-hub-signature-256', 'sha256=00']])).toBe('github');
    expect(detectProvider([['Stripe-Signature', 't=1,v1=00']])).toBe('stripe');
    expect(detectProvider([['X-Slack-Request-Timestamp', '1']])).toBe('slack');
    expect(detectProvider([['X-Shopify-Topic', 'orders/create']])).toBe('shopify');
    expect(detectProvider([['webhook-id', 'msg_1'], ['webhook-signature', 'v1,AA==']])).toBe('standard_webhooks');
  });

  it('is null without any of them; the first provider in its order wins when several are there', () => {
    expect(detectProvider([['content-type', 'application/json'], ['x-signature', 'sha256=00']])).toBeNull();
    expect(detectProvider([])).toBeNull();
    // A Stripe event relayed with a Standard Webhooks signature of the relay's own is still Stripe's.
    expect(detectProvider([['webhook-signature', 'v1,AA=='], ['Stripe-Signature', 't=1,v1=00']])).toBe('stripe');
  });
});

describe('isProvider', () => {
  it('knows the samples\' providers by their exact names, and nothing else', () => {
    expect(PROVIDERS).toEqual(SAMPLE_PROVIDERS);
    for (const provider of SAMPLE_PROVIDERS) expect(isProvider(provider)).toBe(true);
    for (const name of ['GitHub', 'gitlab', '', 'constructor', '__proto__', 'standard-webhooks']) expect(isProvider(name)).toBe(false);
  });
});
