import { createHash, createHmac } from 'node:crypto';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { signStandardWebhook } from '@hookrelay/shared';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import {
  HMAC_PRESET_HEADERS,
  compileVerifier,
  validateCidr,
  validateHmacSecret,
  type InboundRequest,
  type VerificationResult,
  type VerificationSettings,
} from '../../src/ingest/verify.js';

const NOW = new Date('2026-11-22T12:00:00.000Z');
const NOW_S = Math.floor(NOW.getTime() / 1000);
const TOLERANCE = 300;
const STALE_S = NOW_S - TOLERANCE - 5;
const FUTURE_S = NOW_S + TOLERANCE + 5;

const BODY = '{"event":"ping","id":42}';
const SECRET = 'It\u2019s a s3cret: with UTF-8 & symbols';
const stripe = new Stripe('sk_test_x');

function settings(overrides: Partial<VerificationSettings> = {}): VerificationSettings {
  return {
    verifyStaticToken: false,
    staticTokenHeaderName: null,
    staticTokenQueryParam: null,
    staticTokenHash: null,
    verifyHmac: false,
    hmacScheme: 'hex',
    hmacHeaderName: null,
    hmacSecret: null,
    timestampHeaderName: null,
    timestampToleranceSeconds: TOLERANCE,
    verifyIpAllowlist: false,
    allowedCidrs: [],
    ...overrides,
  };
}

function hmacSettings(overrides: Partial<VerificationSettings>): VerificationSettings {
  return settings({ verifyHmac: true, hmacSecret: SECRET, ...overrides });
}

function request(overrides: {
  body?: string | Buffer;
  headers?: Record<string, string | string[] | undefined>;
  query?: string;
  remoteAddress?: string;
  now?: Date;
} = {}): InboundRequest {
  const body = overrides.body ?? BODY;
  return {
    rawBody: typeof body === 'string' ? Buffer.from(body, 'utf8') : body,
    headers: overrides.headers ?? {},
    query: new URLSearchParams(overrides.query ?? ''),
    remoteAddress: overrides.remoteAddress ?? '203.0.113.10',
    now: overrides.now ?? NOW,
  };
}

function verify(s: VerificationSettings, r: InboundRequest): VerificationResult {
  return compileVerifier(s)(r);
}

function expectFail(result: VerificationResult, check: string, reason?: RegExp): void {
  expect(result.ok).toBe(false);
  if (!result.ok) {
    expect(result.check).toBe(check);
    if (reason !== undefined) expect(result.reason).toMatch(reason);
  }
}

const hmacHex = (secret: string, content: string | Buffer): string =>
  createHmac('sha256', secret).update(content).digest('hex');
const hmacBase64 = (secret: string, content: string | Buffer): string =>
  createHmac('sha256', secret).update(content).digest('base64');

describe('no checks configured', () => {
  it('accepts anything', () => {
    expect(verify(settings(), request())).toEqual({ ok: true });
  });
});

describe('hmac scheme hex (default)', () => {
  const s = hmacSettings({ hmacScheme: 'hex', hmacHeaderName: 'X-Signature' });

  it('accepts a good signature, bare or with the sha256= prefix, in either case', () => {
    const sig = hmacHex(SECRET, BODY);
    expect(verify(s, request({ headers: { 'x-signature': sig } }))).toEqual({ ok: true });
    expect(verify(s, request({ headers: { 'x-signature': `sha256=${sig}` } }))).toEqual({ ok: true });
    expect(verify(s, request({ headers: { 'x-signature': sig.toUpperCase() } }))).toEqual({ ok: true });
  });

  it('rejects a wrong signature, another secret, a missing or malformed header', () => {
    expectFail(verify(s, request({ headers: { 'x-signature': hmacHex('other', BODY) } })), 'hmac', /mismatch/);
    expectFail(verify(s, request({ headers: { 'x-signature': hmacHex(SECRET, `${BODY} `) } })), 'hmac', /mismatch/);
    expectFail(verify(s, request()), 'hmac', /missing signature header x-signature/);
    expectFail(verify(s, request({ headers: { 'x-signature': 'zz' + hmacHex(SECRET, BODY).slice(2) } })), 'hmac', /malformed/);
    expectFail(verify(s, request({ headers: { 'x-signature': hmacHex(SECRET, BODY).slice(1) } })), 'hmac', /malformed/);
  });

  describe('with a timestamp header', () => {
    const st = { ...s, timestampHeaderName: 'X-Timestamp' };
    const signed = (ts: string, body = BODY) => ({
      'x-signature': hmacHex(SECRET, `${ts}.${body}`),
      'x-timestamp': ts,
    });

    it('accepts {timestamp}.{body} within tolerance, in seconds or milliseconds', () => {
      expect(verify(st, request({ headers: signed(String(NOW_S)) }))).toEqual({ ok: true });
      expect(verify(st, request({ headers: signed(String(NOW_S - 299)) }))).toEqual({ ok: true });
      expect(verify(st, request({ headers: signed(String(NOW.getTime() - 10_000)) }))).toEqual({ ok: true });
    });

    it('rejects a stale or future timestamp, a missing or malformed one, and a body-only signature', () => {
      expectFail(verify(st, request({ headers: signed(String(STALE_S)) })), 'timestamp', /outside tolerance \(305 s\)/);
      expectFail(verify(st, request({ headers: signed(String(FUTURE_S)) })), 'timestamp', /outside tolerance/);
      expectFail(
        verify(st, request({ headers: { 'x-signature': hmacHex(SECRET, `${NOW_S}.${BODY}`) } })),
        'timestamp',
        /missing timestamp header x-timestamp/,
      );
      expectFail(verify(st, request({ headers: signed('12.5') })), 'timestamp', /malformed/);
      expectFail(verify(st, request({ headers: signed('-1') })), 'timestamp', /malformed/);
      expectFail(
        verify(st, request({ headers: { 'x-signature': hmacHex(SECRET, BODY), 'x-timestamp': String(NOW_S) } })),
        'hmac',
        /mismatch/,
      );
    });

    it('rejects a timestamp changed after signing (it is part of the signed content)', () => {
      const headers = { ...signed(String(STALE_S)), 'x-timestamp': String(NOW_S) };
      expectFail(verify(st, request({ headers })), 'hmac', /mismatch/);
    });

    it('honours a custom tolerance', () => {
      const tight = { ...st, timestampToleranceSeconds: 10 };
      expect(verify(tight, request({ headers: signed(String(NOW_S - 10)) }))).toEqual({ ok: true });
      expectFail(verify(tight, request({ headers: signed(String(NOW_S - 11)) })), 'timestamp');
    });
  });
});

describe('hmac scheme base64 (Shopify style)', () => {
  const s = hmacSettings({ hmacScheme: 'base64', hmacHeaderName: 'X-Shopify-Hmac-Sha256' });

  it('accepts a good signature', () => {
    const headers = { 'x-shopify-hmac-sha256': hmacBase64(SECRET, BODY) };
    expect(verify(s, request({ headers }))).toEqual({ ok: true });
  });

  it('rejects a wrong signature, a hex one, a missing header', () => {
    expectFail(verify(s, request({ headers: { 'x-shopify-hmac-sha256': hmacBase64('other', BODY) } })), 'hmac', /mismatch/);
    expectFail(verify(s, request({ headers: { 'x-shopify-hmac-sha256': hmacHex(SECRET, BODY) } })), 'hmac', /malformed/);
    expectFail(verify(s, request()), 'hmac', /missing/);
  });

  it('with a timestamp header: good passes, stale fails', () => {
    const st = { ...s, timestampHeaderName: 'x-ts' };
    const headers = (ts: number) => ({ 'x-shopify-hmac-sha256': hmacBase64(SECRET, `${ts}.${BODY}`), 'x-ts': String(ts) });
    expect(verify(st, request({ headers: headers(NOW_S) }))).toEqual({ ok: true });
    expectFail(verify(st, request({ headers: headers(STALE_S) })), 'timestamp', /outside tolerance/);
  });
});

describe('hmac scheme github (@octokit/webhooks-methods)', () => {
  const s = hmacSettings({ hmacScheme: 'github' });

  it('reads the preset header', () => {
    expect(HMAC_PRESET_HEADERS.github.signature).toBe('x-hub-signature-256');
  });

  it('accepts a signature made by GitHub\u2019s own library', async () => {
    const headers = { 'x-hub-signature-256': await githubSign(SECRET, BODY) };
    expect(verify(s, request({ headers }))).toEqual({ ok: true });
  });

  it('rejects a wrong signature, a missing header, a hex without the sha256= prefix', async () => {
    expectFail(verify(s, request({ headers: { 'x-hub-signature-256': await githubSign('other', BODY) } })), 'hmac', /mismatch/);
    expectFail(verify(s, request({ headers: { 'x-hub-signature': await githubSign(SECRET, BODY) } })), 'hmac', /missing/);
    const bare = (await githubSign(SECRET, BODY)).slice('sha256='.length);
    expectFail(verify(s, request({ headers: { 'x-hub-signature-256': bare } })), 'hmac', /malformed/);
  });

  it('uses hmacHeaderName instead of the preset when set', async () => {
    const custom = { ...s, hmacHeaderName: 'X-Relay-Signature' };
    const sig = await githubSign(SECRET, BODY);
    expect(verify(custom, request({ headers: { 'x-relay-signature': sig } }))).toEqual({ ok: true });
    expectFail(verify(custom, request({ headers: { 'x-hub-signature-256': sig } })), 'hmac', /missing/);
  });

  it('has no timestamp: a configured timestamp header is ignored (GitHub signs none)', async () => {
    const st = { ...s, timestampHeaderName: 'x-ts' };
    expect(verify(st, request({ headers: { 'x-hub-signature-256': await githubSign(SECRET, BODY) } }))).toEqual({ ok: true });
  });
});

describe('hmac scheme stripe (stripe.webhooks.generateTestHeaderString)', () => {
  const stripeSecret = 'whsec_test_secret_for_stripe';
  const s = hmacSettings({ hmacScheme: 'stripe', hmacSecret: stripeSecret });
  const header = (timestamp: number, secret = stripeSecret, payload = BODY) =>
    stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });

  it('accepts a header made by Stripe\u2019s own library', () => {
    expect(verify(s, request({ headers: { 'stripe-signature': header(NOW_S) } }))).toEqual({ ok: true });
    expect(verify(s, request({ headers: { 'stripe-signature': header(NOW_S - 299) } }))).toEqual({ ok: true });
  });

  it('and Stripe\u2019s own library accepts what we accept', () => {
    const h = header(NOW_S);
    expect(stripe.webhooks.signature?.verifyHeader(BODY, h, stripeSecret, TOLERANCE, undefined, NOW_S)).toBe(true);
  });

  it('accepts any matching v1 among several (secret rotation)', () => {
    const good = header(NOW_S);
    const other = header(NOW_S, 'whsec_old');
    const goodV1 = good.split(',').find((p) => p.startsWith('v1='));
    expect(verify(s, request({ headers: { 'stripe-signature': `${other},v0=abc,${goodV1}` } }))).toEqual({ ok: true });
  });

  it('rejects a wrong signature, a stale or future t, a missing header', () => {
    expectFail(verify(s, request({ headers: { 'stripe-signature': header(NOW_S, 'whsec_other') } })), 'hmac', /mismatch/);
    expectFail(verify(s, request({ headers: { 'stripe-signature': header(STALE_S) } })), 'timestamp', /outside tolerance/);
    expectFail(verify(s, request({ headers: { 'stripe-signature': header(FUTURE_S) } })), 'timestamp', /outside tolerance/);
    expectFail(verify(s, request()), 'hmac', /missing signature header stripe-signature/);
  });

  it('rejects a t= changed after signing', () => {
    const forged = header(STALE_S).replace(`t=${STALE_S}`, `t=${NOW_S}`);
    expectFail(verify(s, request({ headers: { 'stripe-signature': forged } })), 'hmac', /mismatch/);
  });

  it('never throws on a malformed header', () => {
    const v = compileVerifier(s);
    const good = header(NOW_S);
    const malformed = [
      '',
      ',',
      '=',
      't=',
      'v1=',
      't=,v1=',
      'garbage',
      `t=${NOW_S}`,
      `t=${NOW_S},v1=`,
      `t=${NOW_S},v1=nothex`,
      `t=abc,${good.split(',')[1]}`,
      `t=${NOW_S},t=${NOW_S - 1},${good.split(',')[1]}`,
      good.split(',')[1] ?? '',
      `t=${NOW_S},v1=${'f'.repeat(63)}`,
      `t=${NOW_S},v1=${'g'.repeat(64)}`,
      't=1e9,v1=' + '0'.repeat(64),
      '\u0000\u00ff\uffff',
      'x'.repeat(20_000),
      ',,,,t=1,,,v1==,,',
    ];
    for (const value of malformed) {
      let result: VerificationResult | undefined;
      expect(() => {
        result = v(request({ headers: { 'stripe-signature': value } }));
      }).not.toThrow();
      expect(result?.ok).toBe(false);
    }
    expect(v(request({ headers: { 'stripe-signature': [good, good] } })).ok).toBe(false);
  });
});

describe('hmac scheme slack (documented v0 format)', () => {
  const s = hmacSettings({ hmacScheme: 'slack' });
  // https://api.slack.com/authentication/verifying-requests-from-slack
  const headers = (ts: number, secret = SECRET, body = BODY) => ({
    'x-slack-signature': `v0=${hmacHex(secret, `v0:${ts}:${body}`)}`,
    'x-slack-request-timestamp': String(ts),
  });

  it('accepts a good signature', () => {
    expect(verify(s, request({ headers: headers(NOW_S) }))).toEqual({ ok: true });
  });

  it('rejects a wrong signature, a stale timestamp, missing headers, a signature without v0=', () => {
    expectFail(verify(s, request({ headers: headers(NOW_S, 'other') })), 'hmac', /mismatch/);
    expectFail(verify(s, request({ headers: headers(STALE_S) })), 'timestamp', /outside tolerance/);
    expectFail(verify(s, request({ headers: { 'x-slack-request-timestamp': String(NOW_S) } })), 'hmac', /missing/);
    const { 'x-slack-request-timestamp': _ts, ...withoutTimestamp } = headers(NOW_S);
    expectFail(verify(s, request({ headers: withoutTimestamp })), 'timestamp', /missing timestamp header x-slack-request-timestamp/);
    const h = headers(NOW_S);
    expectFail(verify(s, request({ headers: { ...h, 'x-slack-signature': h['x-slack-signature'].slice(3) } })), 'hmac', /malformed/);
  });

  it('rejects a timestamp changed after signing', () => {
    const h = { ...headers(STALE_S), 'x-slack-request-timestamp': String(NOW_S) };
    expectFail(verify(s, request({ headers: h })), 'hmac', /mismatch/);
  });
});

describe('hmac scheme standard_webhooks (standardwebhooks package)', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const s = hmacSettings({ hmacScheme: 'standard_webhooks', hmacSecret: secret });
  const headers = (date: Date, id = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', key = secret, body = BODY) => ({
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(date.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign(id, date, body),
  });

  it('accepts a signature made by the standardwebhooks library', () => {
    expect(verify(s, request({ headers: headers(NOW) }))).toEqual({ ok: true });
  });

  it('accepts the secret without the whsec_ prefix (raw base64)', () => {
    const raw = { ...s, hmacSecret: secret.slice('whsec_'.length) };
    expect(verify(raw, request({ headers: headers(NOW) }))).toEqual({ ok: true });
  });

  it('accepts any v1 among several space-separated signatures, skipping other versions', () => {
    const h = headers(NOW);
    const other = new Webhook('whsec_' + Buffer.from('another key of some length').toString('base64')).sign(
      h['webhook-id'],
      NOW,
      BODY,
    );
    const combined = `v1a,c29tZXRoaW5nIGVsc2U= ${other} ${h['webhook-signature']}`;
    expect(verify(s, request({ headers: { ...h, 'webhook-signature': combined } }))).toEqual({ ok: true });
  });

  it('agrees with the shared signing helper used for deliveries', () => {
    const h = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(NOW_S),
      'webhook-signature': signStandardWebhook(secret, { id: 'msg_1', timestamp: NOW_S, body: BODY }),
    };
    expect(verify(s, request({ headers: h }))).toEqual({ ok: true });
  });

  it('rejects a wrong signature, a stale timestamp, each missing header', () => {
    const wrongKey = 'whsec_' + Buffer.from('a different secret key').toString('base64');
    expectFail(verify(s, request({ headers: headers(NOW, undefined, wrongKey) })), 'hmac', /mismatch/);
    expectFail(verify(s, request({ headers: headers(new Date(STALE_S * 1000)) })), 'timestamp', /outside tolerance/);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const) {
      const h: Record<string, string> = { ...headers(NOW) };
      delete h[name];
      const result = verify(s, request({ headers: h }));
      expect(result.ok, name).toBe(false);
    }
  });

  it('rejects an id or timestamp changed after signing', () => {
    const h = headers(NOW);
    expectFail(verify(s, request({ headers: { ...h, 'webhook-id': 'msg_other' } })), 'hmac', /mismatch/);
    expectFail(verify(s, request({ headers: { ...h, 'webhook-timestamp': String(NOW_S - 1) } })), 'hmac', /mismatch/);
  });

  it('rejects malformed signature headers without throwing', () => {
    const h = headers(NOW);
    for (const value of ['v1', 'v1,', 'v2,abc', 'v1,!!!!', ' ', 'v1,' + 'A'.repeat(200)]) {
      expect(verify(s, request({ headers: { ...h, 'webhook-signature': value } })).ok).toBe(false);
    }
  });
});

describe('static token', () => {
  const token = 'tok_0123456789abcdef';
  const hash = createHash('sha256').update(token).digest('hex');
  const viaHeader = settings({ verifyStaticToken: true, staticTokenHeaderName: 'X-Webhook-Token', staticTokenHash: hash });
  const viaQuery = settings({ verifyStaticToken: true, staticTokenQueryParam: 'token', staticTokenHash: hash });
  const both = { ...viaHeader, staticTokenQueryParam: 'token' };

  it('accepts the token in the header (name compared case-insensitively)', () => {
    expect(verify(viaHeader, request({ headers: { 'x-webhook-token': token } }))).toEqual({ ok: true });
  });

  it('accepts the token in the query parameter', () => {
    expect(verify(viaQuery, request({ query: `token=${token}&x=1` }))).toEqual({ ok: true });
  });

  it('with both configured, either place passes', () => {
    expect(verify(both, request({ headers: { 'x-webhook-token': token } }))).toEqual({ ok: true });
    expect(verify(both, request({ query: `token=${token}` }))).toEqual({ ok: true });
    expect(verify(both, request({ headers: { 'x-webhook-token': 'wrong' }, query: `token=${token}` }))).toEqual({ ok: true });
  });

  it('rejects a wrong or missing token', () => {
    expectFail(verify(viaHeader, request({ headers: { 'x-webhook-token': `${token}x` } })), 'static_token', /mismatch/);
    expectFail(verify(viaHeader, request({ headers: { 'x-webhook-token': '' } })), 'static_token', /missing/);
    expectFail(verify(viaHeader, request({ query: `token=${token}` })), 'static_token', /missing/);
    expectFail(verify(viaQuery, request({ query: 'token=nope' })), 'static_token', /mismatch/);
    expectFail(verify(viaQuery, request({ headers: { token } })), 'static_token', /missing/);
  });

  it('matches a non-ASCII token as Node hands it over (header bytes as latin1, query as UTF-8)', () => {
    const unicode = 'j\u00e9ton-\u2713';
    const h = createHash('sha256').update(unicode, 'utf8').digest('hex');
    const s = { ...both, staticTokenHash: h };
    const asNodeHeader = Buffer.from(unicode, 'utf8').toString('latin1');
    expect(verify(s, request({ headers: { 'x-webhook-token': asNodeHeader } }))).toEqual({ ok: true });
    expect(verify(s, request({ query: `token=${encodeURIComponent(unicode)}` }))).toEqual({ ok: true });
  });

  it('fails closed when misconfigured', () => {
    expectFail(verify({ ...viaHeader, staticTokenHash: null }, request({ headers: { 'x-webhook-token': token } })), 'static_token', /misconfigured/);
    expectFail(
      verify({ ...viaHeader, staticTokenHeaderName: null }, request({ headers: { 'x-webhook-token': token } })),
      'static_token',
      /misconfigured/,
    );
  });
});

describe('IP allowlist', () => {
  const s = (cidrs: string[]) => settings({ verifyIpAllowlist: true, allowedCidrs: cidrs });
  const from = (remoteAddress: string, cidrs: string[]) => verify(s(cidrs), request({ remoteAddress }));

  it('matches IPv4 CIDRs and bare addresses', () => {
    expect(from('10.1.2.3', ['10.0.0.0/8'])).toEqual({ ok: true });
    expect(from('192.168.1.1', ['192.168.1.1'])).toEqual({ ok: true });
    expectFail(from('192.168.1.2', ['192.168.1.1']), 'ip_allowlist', /not in allowlist/);
    expectFail(from('11.0.0.1', ['10.0.0.0/8']), 'ip_allowlist', /not in allowlist/);
  });

  it('matches IPv6 CIDRs', () => {
    expect(from('2001:db8:1::5', ['2001:db8::/32'])).toEqual({ ok: true });
    expectFail(from('2001:db9::1', ['2001:db8::/32']), 'ip_allowlist');
  });

  it('unwraps IPv4-mapped IPv6 remote addresses', () => {
    expect(from('::ffff:127.0.0.1', ['127.0.0.0/8'])).toEqual({ ok: true });
    expect(from('::ffff:10.9.8.7', ['2001:db8::/32', '10.0.0.0/8'])).toEqual({ ok: true });
    expectFail(from('::ffff:11.0.0.1', ['10.0.0.0/8']), 'ip_allowlist');
  });

  it('treats an IPv4-mapped CIDR as the IPv4 block it names', () => {
    expect(from('10.1.1.1', ['::ffff:10.0.0.0/104'])).toEqual({ ok: true });
    expect(from('::ffff:10.1.1.1', ['::ffff:10.0.0.0/104'])).toEqual({ ok: true });
  });

  it('never matches an IPv4 address against an IPv6 CIDR, nor the reverse', () => {
    expectFail(from('10.0.0.1', ['::/0']), 'ip_allowlist');
    expectFail(from('2001:db8::1', ['0.0.0.0/0']), 'ip_allowlist');
  });

  it('rejects an address outside every block, and a remote address that is not an IP', () => {
    expectFail(from('198.51.100.1', ['10.0.0.0/8', '2001:db8::/32']), 'ip_allowlist');
    expectFail(from('', ['10.0.0.0/8']), 'ip_allowlist', /not an IP address/);
    expectFail(from('not-an-ip', ['0.0.0.0/0']), 'ip_allowlist', /not an IP address/);
  });

  it('drops stored blocks that do not parse, and fails closed when none is left', () => {
    expect(from('10.1.2.3', ['bogus', '10.0.0.0/8'])).toEqual({ ok: true });
    expectFail(from('10.1.2.3', ['bogus']), 'ip_allowlist', /misconfigured/);
    expectFail(from('10.1.2.3', []), 'ip_allowlist', /misconfigured/);
  });
});

describe('combined checks', () => {
  const token = 'combined-token';
  const s = settings({
    verifyStaticToken: true,
    staticTokenHeaderName: 'x-token',
    staticTokenHash: createHash('sha256').update(token).digest('hex'),
    verifyHmac: true,
    hmacScheme: 'hex',
    hmacHeaderName: 'x-sig',
    hmacSecret: SECRET,
    verifyIpAllowlist: true,
    allowedCidrs: ['203.0.113.0/24'],
  });
  const good = { 'x-token': token, 'x-sig': hmacHex(SECRET, BODY) };

  it('passes only when every configured check passes', () => {
    expect(verify(s, request({ headers: good }))).toEqual({ ok: true });
  });

  it('fails as a whole when any one check fails', () => {
    expectFail(verify(s, request({ headers: good, remoteAddress: '198.51.100.7' })), 'ip_allowlist');
    expectFail(verify(s, request({ headers: { ...good, 'x-token': 'nope' } })), 'static_token');
    expectFail(verify(s, request({ headers: { ...good, 'x-sig': hmacHex('other', BODY) } })), 'hmac');
    expectFail(verify(s, request({ headers: { 'x-token': token } })), 'hmac');
  });
});

describe('byte-exactness', () => {
  const s = hmacSettings({ hmacScheme: 'hex', hmacHeaderName: 'x-sig' });

  it('verifies the exact bytes: re-serialised JSON fails', () => {
    const odd = '{ "b" : 2,\n\t"a":[1 , 2],   "c":"\u00e9"  }\r\n';
    const headers = { 'x-sig': hmacHex(SECRET, Buffer.from(odd, 'utf8')) };
    expect(verify(s, request({ body: Buffer.from(odd, 'utf8'), headers }))).toEqual({ ok: true });
    const reserialised = JSON.stringify(JSON.parse(odd));
    expectFail(verify(s, request({ body: reserialised, headers })), 'hmac', /mismatch/);
  });

  it('verifies binary bodies that are not valid UTF-8', () => {
    const binary = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x0a]);
    const headers = { 'x-sig': hmacHex(SECRET, binary) };
    expect(verify(s, request({ body: binary, headers }))).toEqual({ ok: true });
    expectFail(verify(s, request({ body: Buffer.from(binary.toString('utf8'), 'utf8'), headers })), 'hmac');
  });

  it('verifies an empty body', () => {
    const headers = { 'x-sig': hmacHex(SECRET, '') };
    expect(verify(s, request({ body: Buffer.alloc(0), headers }))).toEqual({ ok: true });
  });
});

describe('never throws', () => {
  it('fails closed on settings that cannot work', () => {
    expectFail(verify(hmacSettings({ hmacScheme: 'hex' }), request({ headers: { 'x-sig': 'a' } })), 'hmac', /misconfigured/);
    expectFail(verify(hmacSettings({ hmacScheme: 'github', hmacSecret: null }), request()), 'hmac', /misconfigured/);
    expectFail(
      verify(hmacSettings({ hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_not base64!' }), request()),
      'hmac',
      /misconfigured/,
    );
    expectFail(
      verify(hmacSettings({ hmacScheme: 'nope' as never, hmacHeaderName: 'x' }), request()),
      'hmac',
      /misconfigured/,
    );
  });

  it('refuses repeated headers as ambiguous', () => {
    const s = hmacSettings({ hmacScheme: 'hex', hmacHeaderName: 'x-sig' });
    const sig = hmacHex(SECRET, BODY);
    expect(verify(s, request({ headers: { 'x-sig': [sig] } }))).toEqual({ ok: true });
    expectFail(verify(s, request({ headers: { 'x-sig': [sig, sig] } })), 'hmac', /repeated/);
  });

  it('returns a failure for odd inputs in every scheme', () => {
    const odd: Array<Record<string, string | string[] | undefined>> = [
      {},
      { 'x-sig': '', 'x-ts': '' },
      { 'x-sig': 'sha256=', 'x-ts': 'NaN' },
      { 'x-sig': '\u00ff'.repeat(64), 'x-ts': '9'.repeat(40) },
      { 'x-sig': [], 'x-ts': [] },
    ];
    for (const scheme of ['hex', 'base64', 'github', 'stripe', 'slack', 'standard_webhooks'] as const) {
      const v = compileVerifier(
        hmacSettings({ hmacScheme: scheme, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts', hmacSecret: 'whsec_c2VjcmV0' }),
      );
      for (const headers of odd) {
        expect(() => v(request({ headers, now: new Date(Number.NaN) }))).not.toThrow();
        expect(v(request({ headers })).ok).toBe(false);
      }
    }
  });
});

describe('validateCidr', () => {
  it('accepts CIDR blocks and bare addresses', () => {
    for (const cidr of ['10.0.0.0/8', '2001:db8::/32', '192.168.1.1', '::1', '0.0.0.0/0', '::/0', '192.168.1.7/24', '::ffff:10.0.0.0/104']) {
      expect(validateCidr(cidr), cidr).toBeNull();
    }
  });

  it('rejects what is not a CIDR block', () => {
    for (const cidr of ['10.0.0.0/33', 'abc', '1.2.3.4/-1', '::/129', '', '10.0.0.0/', '10.0.0.0/8/8', '10.1/16', '0x0a.0.0.0/8', 'fe80::1%eth0/64', ' 10.0.0.0/8', '10.0.0.0/ 8', '10.0.0.0/+8']) {
      expect(typeof validateCidr(cidr), JSON.stringify(cidr)).toBe('string');
    }
  });
});

describe('validateHmacSecret', () => {
  it('accepts any non-empty secret for the UTF-8-keyed schemes', () => {
    for (const scheme of ['hex', 'base64', 'github', 'stripe', 'slack'] as const) {
      expect(validateHmacSecret(scheme, 'anything at all, whsec_ or not')).toBeNull();
      expect(typeof validateHmacSecret(scheme, '')).toBe('string');
    }
  });

  it('requires whsec_ + base64 (or bare base64) for standard_webhooks', () => {
    expect(validateHmacSecret('standard_webhooks', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBeNull();
    expect(validateHmacSecret('standard_webhooks', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBeNull();
    expect(typeof validateHmacSecret('standard_webhooks', 'whsec_')).toBe('string');
    expect(typeof validateHmacSecret('standard_webhooks', 'whsec_not base64!')).toBe('string');
  });
});
