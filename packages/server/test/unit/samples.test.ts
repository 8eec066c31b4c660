import { createHmac } from 'node:crypto';
import { verify as githubVerify } from '@octokit/webhooks-methods';
import {
  applySampleEdits,
  parseSampleEdit,
  randomSampleContext,
  SAMPLE_EVENTS,
  SAMPLE_PROVIDERS,
  sampleBody,
  sampleRequest,
  signShopify,
  signSlack,
  type SampleProvider,
} from '@hookrelay/shared';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { compileVerifier, type VerificationSettings } from '../../src/ingest/verify.js';

/** Sample events as `hookrelay trigger` and the samples route send them, checked by the providers' own code. */
const NOW = new Date();
const STANDARD_SECRET = `whsec_${Buffer.from('a-standard-webhooks-secret-32byte').toString('base64')}`;

function headerMap(headers: [string, string][]): Record<string, string> {
  return Object.fromEntries(headers.map(([name, value]) => [name.toLowerCase(), value]));
}

function settings(overrides: Partial<VerificationSettings>): VerificationSettings {
  return {
    verifyStaticToken: false,
    staticTokenHeaderName: null,
    staticTokenQueryParam: null,
    staticTokenHash: null,
    verifyHmac: true,
    hmacScheme: 'hex',
    hmacHeaderName: null,
    hmacSecret: null,
    timestampHeaderName: null,
    timestampToleranceSeconds: 300,
    verifyIpAllowlist: false,
    allowedCidrs: [],
    ...overrides,
  };
}

describe('sample bodies', () => {
  it.each(SAMPLE_PROVIDERS.flatMap((provider) => SAMPLE_EVENTS[provider].map((event) => [provider, event] as const)))(
    '%s %s: JSON where the provider puts its event type, fresh ids every time',
    (provider, event) => {
      const one = sampleBody(provider, event, randomSampleContext(NOW));
      const two = sampleBody(provider, event, randomSampleContext(NOW));
      expect(JSON.stringify(one)).not.toBe(JSON.stringify(two));
      if (provider === 'stripe' || provider === 'standard_webhooks' || provider === 'slack') expect(one.type).toBe(event);
      const request = sampleRequest(provider, event, one, null, randomSampleContext(NOW));
      const headers = headerMap(request.headers);
      expect(headers['content-type']).toMatch(/^application\/json/);
      if (provider === 'github') expect(headers['x-github-event']).toBe(event);
      if (provider === 'shopify') expect(headers['x-shopify-topic']).toBe(event);
    },
  );

  it('refuses an event it has no sample of', () => {
    expect(() => sampleBody('github', 'deployment', randomSampleContext())).toThrow(/no sample for github deployment; there are: ping, push, pull_request, issues/);
  });
});

describe('--set edits', () => {
  it('reads JSON scalars, else text', () => {
    expect(parseSampleEdit('a.b=5000')).toEqual({ path: 'a.b', value: 5000 });
    expect(parseSampleEdit('a=true')).toEqual({ path: 'a', value: true });
    expect(parseSampleEdit('a=null')).toEqual({ path: 'a', value: null });
    expect(parseSampleEdit('a="42"')).toEqual({ path: 'a', value: '42' });
    expect(parseSampleEdit('a=hello=world')).toEqual({ path: 'a', value: 'hello=world' });
    expect(parseSampleEdit('a={"x":1}')).toEqual({ path: 'a', value: '{"x":1}' });
    expect(() => parseSampleEdit('=1')).toThrow(/not PATH=VALUE/);
    expect(() => parseSampleEdit('abc')).toThrow(/not PATH=VALUE/);
  });

  it('sets nested values, creates missing objects, indexes arrays', () => {
    const body = applySampleEdits({ a: { b: 1 }, list: [{ x: 1 }], n: null }, [
      { path: 'a.b', value: 2 },
      { path: 'c.d.e', value: 'new' },
      { path: 'list.0.x', value: 9 },
      { path: 'list.1', value: 'appended' },
      { path: 'n.m', value: true },
    ]);
    expect(body).toEqual({ a: { b: 2 }, c: { d: { e: 'new' } }, list: [{ x: 9 }, 'appended'], n: { m: true } });
    expect(() => applySampleEdits({ a: 'text' }, [{ path: 'a.b', value: 1 }])).toThrow(/a is a string, not an object/);
    expect(() => applySampleEdits({ list: [] }, [{ path: 'list.5', value: 1 }])).toThrow(/list has no item 5/);
    expect(() => applySampleEdits({}, [{ path: 'a..b', value: 1 }])).toThrow(/not a path/);
  });

  it('refuses __proto__, constructor and prototype anywhere in a path, leaving every prototype as it was', () => {
    for (const path of ['__proto__.polluted', 'constructor.prototype.polluted', 'a.__proto__', 'list.0.constructor', 'prototype']) {
      const segment = path.split('.').find((key) => ['__proto__', 'constructor', 'prototype'].includes(key));
      expect(() => applySampleEdits({ list: [{}] }, [{ path, value: 'yes' }]), path).toThrow(`"${path}" names "${segment}", which is refused`);
      expect(() => parseSampleEdit(`${path}=yes`), path).toThrow(`names "${segment}"`);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads and writes own properties only: inherited names are new fields, array items keep their place', () => {
    const body = applySampleEdits({ list: [1, null] }, [
      { path: 'toString.x', value: 1 },
      { path: 'hasOwnProperty', value: 'h' },
      { path: 'list.1.valueOf', value: true },
      { path: 'list.2', value: 'appended' },
    ]);
    expect(JSON.parse(JSON.stringify(body))).toEqual({ list: [1, { valueOf: true }, 'appended'], toString: { x: 1 }, hasOwnProperty: 'h' });
    expect(() => applySampleEdits({ list: [1] }, [{ path: 'list.0.x', value: 1 }])).toThrow(/list.0 is a number, not an object/);
    expect(() => applySampleEdits({ list: [1] }, [{ path: 'list.x', value: 1 }])).toThrow(/list has no item x/);
  });
});

describe('sample signatures, checked by the providers\' libraries', () => {
  const sign = (provider: SampleProvider, event: string, secret: string) => {
    const ctx = randomSampleContext(NOW);
    return sampleRequest(provider, event, sampleBody(provider, event, ctx), secret, ctx);
  };

  it('GitHub: @octokit/webhooks-methods', async () => {
    const request = sign('github', 'pull_request', 'gh secret');
    const headers = headerMap(request.headers);
    expect(await githubVerify('gh secret', request.body.toString('utf8'), headers['x-hub-signature-256']!)).toBe(true);
    expect(headers['x-github-delivery']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
  });

  it('Stripe: stripe.webhooks.constructEvent', () => {
    const request = sign('stripe', 'checkout.session.completed', 'whsec_test_123');
    const event = new Stripe('sk_test_unused').webhooks.constructEvent(request.body, headerMap(request.headers)['stripe-signature']!, 'whsec_test_123');
    expect(event.type).toBe('checkout.session.completed');
    expect(event.id).toMatch(/^evt_/);
  });

  it('Standard Webhooks: standardwebhooks', () => {
    const request = sign('standard_webhooks', 'user.created', STANDARD_SECRET);
    expect(new Webhook(STANDARD_SECRET).verify(request.body.toString('utf8'), headerMap(request.headers))).toMatchObject({ type: 'user.created' });
  });

  it("Slack: the documented example of Slack's request signing", () => {
    // https://api.slack.com/authentication/verifying-requests-from-slack
    const body =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    expect(signSlack('8f742231b10e8888abcd99yyyzzz85a5', Buffer.from(body), 1531420618)).toBe('v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503');
    const request = sign('slack', 'event_callback', '8f742231b10e8888abcd99yyyzzz85a5');
    const verify = compileVerifier(settings({ hmacScheme: 'slack', hmacSecret: '8f742231b10e8888abcd99yyyzzz85a5' }));
    expect(verify({ rawBody: request.body, headers: headerMap(request.headers), query: new URLSearchParams(), remoteAddress: '127.0.0.1', now: NOW })).toEqual({ ok: true });
  });

  it("Shopify: base64 HMAC-SHA256 of the raw body, as Shopify's documentation computes it", () => {
    const request = sign('shopify', 'orders/create', 'shpss_example');
    const documented = createHmac('sha256', 'shpss_example').update(request.body).digest('base64');
    expect(headerMap(request.headers)['x-shopify-hmac-sha256']).toBe(documented);
    expect(signShopify('hush', Buffer.from('{"id":1}'))).toBe(createHmac('sha256', 'hush').update('{"id":1}').digest('base64'));
    const verify = compileVerifier(settings({ hmacScheme: 'base64', hmacHeaderName: 'X-Shopify-Hmac-Sha256', hmacSecret: 'shpss_example' }));
    expect(verify({ rawBody: request.body, headers: headerMap(request.headers), query: new URLSearchParams(), remoteAddress: '127.0.0.1', now: NOW })).toEqual({ ok: true });
  });
});
