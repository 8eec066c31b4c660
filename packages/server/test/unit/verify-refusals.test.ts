import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileVerifier, validateCidr, validateHmacSecret, type InboundRequest, type VerificationResult, type VerificationSettings } from '../../src/ingest/verify.js';

/**
 * Which check refused a request and why, to the word: the reason is what the server logs, and each
 * case pins one rule of the verifier (a guard that could go missing unnoticed if a test only asked
 * whether the request failed).
 */
const NOW = new Date('2026-11-22T12:00:00.000Z');
const NOW_S = Math.floor(NOW.getTime() / 1000);
const NOW_MS = NOW.getTime();
const BODY = '{"event":"ping"}';
const SECRET = 'a s3cret';

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
    timestampToleranceSeconds: 300,
    verifyIpAllowlist: false,
    allowedCidrs: [],
    ...overrides,
  };
}

const hmac = (scheme: VerificationSettings['hmacScheme'], overrides: Partial<VerificationSettings> = {}) =>
  settings({ verifyHmac: true, hmacScheme: scheme, hmacSecret: SECRET, ...overrides });

function request(headers: InboundRequest['headers'] = {}, extra: Partial<Omit<InboundRequest, 'headers'>> = {}): InboundRequest {
  return { rawBody: Buffer.from(BODY), headers, query: new URLSearchParams(), remoteAddress: '203.0.113.10', now: NOW, ...extra };
}

const verify = (s: VerificationSettings, r: InboundRequest): VerificationResult => compileVerifier(s)(r);
// The code and the sentence shown to the endpoint's owner are pinned in verify-details.test.ts.
const refused = (check: string, reason: string) => expect.objectContaining({ ok: false, check, reason });
const OK = { ok: true };
const hex = (content: string | Buffer, key: string | Buffer = SECRET) => createHmac('sha256', key).update(content).digest('hex');

describe('stripe', () => {
  const s = hmac('stripe');
  const v1 = (t: number | string) => `v1=${hex(`${t}.${BODY}`)}`;
  const from = (header: string) => verify(s, request({ 'stripe-signature': header }));

  it('refuses two different t= values, even when the last one is signed', () => {
    expect(from(`t=${NOW_S - 1000},t=${NOW_S},${v1(NOW_S)}`)).toEqual(refused('timestamp', 'malformed signature header stripe-signature (several timestamps)'));
    expect(from(`t=${NOW_S},t=${NOW_S - 1000},${v1(NOW_S - 1000)}`)).toEqual(refused('timestamp', 'malformed signature header stripe-signature (several timestamps)'));
    expect(from(`t=${NOW_S},t=${NOW_S},${v1(NOW_S)}`)).toEqual(OK);
  });

  it('reads seconds only: a signed millisecond t= is malformed', () => {
    expect(from(`t=${NOW_MS},${v1(NOW_MS)}`)).toEqual(refused('timestamp', 'malformed signature header stripe-signature (bad t=)'));
    expect(from(`t=${NOW_S}x,${v1(`${NOW_S}x`)}`)).toEqual(refused('timestamp', 'malformed signature header stripe-signature (bad t=)'));
  });

  it('says which part is missing', () => {
    expect(from(v1(NOW_S))).toEqual(refused('timestamp', 'malformed signature header stripe-signature (no t=)'));
    expect(from(`t=${NOW_S}`)).toEqual(refused('hmac', 'malformed signature header stripe-signature (no v1=)'));
    // Only v1= carries a signature Stripe's way; the same digest under another name is not one.
    expect(from(`t=${NOW_S},${v1(NOW_S).replace('v1=', 'v0=')}`)).toEqual(refused('hmac', 'malformed signature header stripe-signature (no v1=)'));
    expect(verify(s, request())).toEqual(refused('hmac', 'missing signature header stripe-signature'));
  });

  it('compares a v1= that is not hex as a mismatch, and judges the time only once the signature holds', () => {
    expect(from(`t=${NOW_S},v1=zz`)).toEqual(refused('hmac', 'hmac signature mismatch'));
    expect(from(`t=${NOW_S - 305},${v1(NOW_S - 305)}`)).toEqual(refused('timestamp', 'timestamp outside tolerance (305 s)'));
  });

  it('trims its items and skips one without =', () => {
    expect(from(` t = ${NOW_S} , ${v1(NOW_S).replace('=', ' = ')} `)).toEqual(OK);
    expect(from(`t=${NOW_S},${v1(NOW_S)},tx`)).toEqual(OK);
  });
});

describe('slack', () => {
  const s = hmac('slack');
  const signed = (ts: string | number, extra: Record<string, string | string[]> = {}) => ({
    'x-slack-signature': `v0=${hex(`v0:${String(ts).trim()}:${BODY}`)}`,
    'x-slack-request-timestamp': String(ts),
    ...extra,
  });

  it('reads seconds only: a signed millisecond timestamp is malformed, as is one with other characters', () => {
    expect(verify(s, request(signed(NOW_MS)))).toEqual(refused('timestamp', 'malformed timestamp header x-slack-request-timestamp'));
    expect(verify(s, request(signed(`x${NOW_S}`)))).toEqual(refused('timestamp', 'malformed timestamp header x-slack-request-timestamp'));
    expect(verify(s, request(signed(`${NOW_S}x`)))).toEqual(refused('timestamp', 'malformed timestamp header x-slack-request-timestamp'));
  });

  it('tells a missing timestamp from a repeated one', () => {
    expect(verify(s, request(signed(NOW_S, { 'x-slack-request-timestamp': '' })))).toEqual(refused('timestamp', 'missing timestamp header x-slack-request-timestamp'));
    expect(verify(s, request(signed(NOW_S, { 'x-slack-request-timestamp': [String(NOW_S), String(NOW_S)] })))).toEqual(
      refused('timestamp', 'repeated timestamp header x-slack-request-timestamp'),
    );
  });

  it('tells a missing signature (absent, empty, an empty list) from a malformed one', () => {
    for (const value of [undefined, '', []]) {
      expect(verify(s, request(signed(NOW_S, { 'x-slack-signature': value as never })))).toEqual(refused('hmac', 'missing signature header x-slack-signature'));
    }
    const good = signed(NOW_S)['x-slack-signature'];
    for (const value of [good.slice(3), `v0=x${good.slice(3)}`, `${good}ff`, `v0=${good.slice(4)}`]) {
      expect(verify(s, request(signed(NOW_S, { 'x-slack-signature': value })))).toEqual(refused('hmac', 'malformed signature header x-slack-signature (expected v0=<hex>)'));
    }
  });

  it('trims both headers and reads the v0= prefix in any case', () => {
    const good = signed(NOW_S);
    expect(verify(s, request({ ...good, 'x-slack-signature': ` ${good['x-slack-signature']} ` }))).toEqual(OK);
    expect(verify(s, request(signed(` ${NOW_S} `)))).toEqual(OK);
    expect(verify(s, request({ ...good, 'x-slack-signature': good['x-slack-signature'].replace('v0=', 'V0=') }))).toEqual(OK);
  });

  it('reads the timestamp from timestamp_header_name when it is set', () => {
    const renamed = hmac('slack', { timestampHeaderName: 'X-Ts' });
    const { 'x-slack-request-timestamp': ts, ...rest } = signed(NOW_S);
    expect(verify(renamed, request({ ...rest, 'x-ts': ts }))).toEqual(OK);
    expect(verify(renamed, request(signed(NOW_S)))).toEqual(refused('timestamp', 'missing timestamp header x-ts'));
  });
});

describe('standard_webhooks', () => {
  const key = Buffer.from('0123456789abcdef0123456789abcdef');
  const s = hmac('standard_webhooks', { hmacSecret: `whsec_${key.toString('base64')}` });
  const sign = (id: string, ts: string | number) =>
    createHmac('sha256', key).update(Buffer.from(`${id}.${ts}.`, 'latin1')).update(BODY).digest('base64');
  const signed = (extra: Record<string, string | string[] | undefined> = {}, ts: string | number = NOW_S) => ({
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(ts),
    'webhook-signature': `v1,${sign('msg_1', ts)}`,
    ...extra,
  });

  it('accepts a correct signature, padded or not', () => {
    expect(verify(s, request(signed()))).toEqual(OK);
    expect(verify(s, request(signed({ 'webhook-signature': `v1,${sign('msg_1', NOW_S).replace(/=$/u, '')}` })))).toEqual(OK);
  });

  it('says which header is missing or repeated', () => {
    expect(verify(s, request(signed({ 'webhook-id': undefined })))).toEqual(refused('hmac', 'missing id header webhook-id'));
    expect(verify(s, request(signed({ 'webhook-id': '' })))).toEqual(refused('hmac', 'missing id header webhook-id'));
    expect(verify(s, request(signed({ 'webhook-id': ['msg_1', 'msg_2'] })))).toEqual(refused('hmac', 'repeated id header webhook-id'));
    expect(verify(s, request(signed({ 'webhook-signature': undefined })))).toEqual(refused('hmac', 'missing signature header webhook-signature'));
    expect(verify(s, request(signed({ 'webhook-timestamp': undefined })))).toEqual(refused('timestamp', 'missing timestamp header webhook-timestamp'));
    expect(verify(s, request(signed({ 'webhook-timestamp': ['1', '2'] })))).toEqual(refused('timestamp', 'repeated timestamp header webhook-timestamp'));
  });

  it('reads seconds only: a signed millisecond timestamp is malformed', () => {
    expect(verify(s, request(signed({}, NOW_MS)))).toEqual(refused('timestamp', 'malformed timestamp header webhook-timestamp'));
  });

  it('needs at least one v1,<signature>; other versions and parts without a comma are skipped', () => {
    const noV1 = refused('hmac', 'malformed signature header webhook-signature (no v1,<base64>)');
    for (const value of ['v1x', 'v1', `v1a,${sign('msg_1', NOW_S)}`, `v2,${sign('msg_1', NOW_S)}`]) {
      expect(verify(s, request(signed({ 'webhook-signature': value }))), value).toEqual(noV1);
    }
    expect(verify(s, request(signed({ 'webhook-signature': `v1x v1,${sign('msg_1', NOW_S)}` })))).toEqual(OK);
  });

  it('refuses a signature that is not exactly 32 bytes of base64, whatever it decodes to', () => {
    const good = sign('msg_1', NOW_S);
    const mismatch = refused('hmac', 'hmac signature mismatch');
    // Node's base64 decoder skips characters outside the alphabet: these would decode to the right digest.
    for (const value of [`${good.slice(0, 10)}.${good.slice(10)}`, `AAAA${good}`, `${good}AAAA`, `v1,${sign('msg_2', NOW_S)}`.slice(3)]) {
      expect(verify(s, request(signed({ 'webhook-signature': `v1,${value}` }))), value).toEqual(mismatch);
    }
  });

  it('signs the id header as the bytes that were sent', () => {
    // Node hands header bytes over as latin1: "é" here is the single byte 0xE9 on the wire.
    const id = 'msg_\u00e9';
    expect(verify(s, request(signed({ 'webhook-id': id, 'webhook-signature': `v1,${sign(id, NOW_S)}` })))).toEqual(OK);
  });
});

describe('hex, base64 and github', () => {
  const hexSettings = hmac('hex', { hmacHeaderName: 'X-Sig', timestampHeaderName: 'X-Ts' });
  const signed = (ts: string | number) => ({ 'x-sig': hex(`${ts}.${BODY}`), 'x-ts': String(ts) });

  it('need hmac_header_name', () => {
    for (const scheme of ['hex', 'base64'] as const) {
      expect(verify(hmac(scheme), request())).toEqual(refused('hmac', `hmac check misconfigured: hmac_header_name is required for scheme ${scheme}`));
    }
  });

  it('read an optional sha256= prefix in any case', () => {
    expect(verify(hexSettings, request({ ...signed(NOW_S), 'x-sig': `SHA256=${signed(NOW_S)['x-sig']}` }))).toEqual(OK);
    expect(verify(hexSettings, request({ ...signed(NOW_S), 'x-sig': `sha256=zz${signed(NOW_S)['x-sig'].slice(2)}` }))).toEqual(
      refused('hmac', 'malformed signature header x-sig'),
    );
  });

  it('say why a timestamp fails', () => {
    expect(verify(hexSettings, request({ ...signed(NOW_S), 'x-ts': '' }))).toEqual(refused('timestamp', 'missing timestamp header x-ts'));
    expect(verify(hexSettings, request(signed('12.5')))).toEqual(refused('timestamp', 'malformed timestamp header x-ts'));
    expect(verify(hexSettings, request(signed(NOW_S - 305)))).toEqual(refused('timestamp', 'timestamp outside tolerance (305 s)'));
    expect(verify(hexSettings, request(signed(NOW_MS - 305_000)))).toEqual(refused('timestamp', 'timestamp outside tolerance (305 s)'));
    expect(verify(hexSettings, request(signed(NOW_S), { now: new Date(Number.NaN) }))).toEqual(refused('timestamp', 'timestamp outside tolerance (? s)'));
  });

  it('github needs its sha256= prefix', () => {
    const github = hmac('github');
    const sig = hex(BODY);
    expect(verify(github, request({ 'x-hub-signature-256': `SHA256=${sig}` }))).toEqual(OK);
    expect(verify(github, request({ 'x-hub-signature-256': sig }))).toEqual(refused('hmac', 'malformed signature header x-hub-signature-256 (expected sha256=<hex>)'));
  });
});

describe('timestamp tolerance', () => {
  it('falls back to 300 s for a tolerance of 0, below 0, NaN or Infinity', () => {
    for (const tolerance of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const s = hmac('slack', { timestampToleranceSeconds: tolerance });
      const at = (ts: number) => ({ 'x-slack-signature': `v0=${hex(`v0:${ts}:${BODY}`)}`, 'x-slack-request-timestamp': String(ts) });
      expect(verify(s, request(at(NOW_S - 299))), String(tolerance)).toEqual(OK);
      expect(verify(s, request(at(NOW_S - 301))), String(tolerance)).toEqual(refused('timestamp', 'timestamp outside tolerance (301 s)'));
    }
  });

  it('takes any other positive tolerance as it is', () => {
    const s = hmac('slack', { timestampToleranceSeconds: 0.5 });
    const at = (ts: number) => ({ 'x-slack-signature': `v0=${hex(`v0:${ts}:${BODY}`)}`, 'x-slack-request-timestamp': String(ts) });
    expect(verify(s, request(at(NOW_S)))).toEqual(OK);
    expect(verify(s, request(at(NOW_S - 1)))).toEqual(refused('timestamp', 'timestamp outside tolerance (1 s)'));
  });
});

describe('settings that cannot work', () => {
  it('name what is wrong', () => {
    const cases: [VerificationSettings, string, string][] = [
      [hmac('github', { hmacSecret: null }), 'hmac', 'hmac check misconfigured: no secret'],
      [hmac('github', { hmacSecret: '' }), 'hmac', 'hmac check misconfigured: no secret'],
      [hmac('nope' as never), 'hmac', 'hmac check misconfigured: unknown hmac scheme nope'],
      [hmac('standard_webhooks', { hmacSecret: 'whsec_!abc' }), 'hmac', 'hmac check misconfigured: the secret must be whsec_ followed by base64'],
      // One base64 character is not a byte.
      [hmac('standard_webhooks', { hmacSecret: 'whsec_A' }), 'hmac', 'hmac check misconfigured: the secret must be whsec_ followed by base64'],
      [settings({ verifyStaticToken: true, staticTokenHash: 'a'.repeat(64) }), 'static_token', 'static_token check misconfigured: no header or query parameter'],
      [settings({ verifyStaticToken: true, staticTokenHeaderName: 'x-token' }), 'static_token', 'static_token check misconfigured: no valid token hash stored'],
      [settings({ verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: 'abc' }), 'static_token', 'static_token check misconfigured: no valid token hash stored'],
      [settings({ verifyIpAllowlist: true, allowedCidrs: ['bogus'] }), 'ip_allowlist', 'ip_allowlist check misconfigured: no valid CIDR block'],
      [settings({ verifyIpAllowlist: true, allowedCidrs: null as never }), 'ip_allowlist', 'ip_allowlist check misconfigured: no valid CIDR block'],
    ];
    for (const [s, check, reason] of cases) expect(verify(s, request()), reason).toEqual(refused(check, reason));
  });

  it('turn a setting that throws into a failure of its check', () => {
    const throwing = (base: VerificationSettings, field: keyof VerificationSettings): VerificationSettings =>
      Object.defineProperty({ ...base }, field, {
        get() {
          throw new Error('unreadable');
        },
      });
    expect(verify(throwing(settings({ verifyIpAllowlist: true }), 'allowedCidrs'), request())).toEqual(refused('ip_allowlist', 'ip_allowlist check misconfigured: unreadable'));
    expect(verify(throwing(settings({ verifyStaticToken: true }), 'staticTokenHeaderName'), request())).toEqual(refused('static_token', 'static_token check misconfigured: unreadable'));
    expect(verify(throwing(hmac('hex'), 'hmacHeaderName'), request())).toEqual(refused('hmac', 'hmac check misconfigured: unreadable'));
  });

  it('turn a request that throws into a failure of the check that read it', () => {
    const r = Object.defineProperty(request(), 'headers', {
      get() {
        throw new Error('unreadable');
      },
    });
    expect(verify(hmac('github'), r)).toEqual(refused('hmac', 'hmac check failed unexpectedly: unreadable'));
    const token = settings({ verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: 'a'.repeat(64) });
    expect(verify(token, r)).toEqual(refused('static_token', 'static_token check failed unexpectedly: unreadable'));
  });
});

describe('static token', () => {
  const token = 'the-token';
  const viaQuery = settings({ verifyStaticToken: true, staticTokenQueryParam: 'token', staticTokenHash: createHash('sha256').update(token).digest('hex') });

  it('tells an empty query parameter (missing) from a wrong one (mismatch)', () => {
    expect(verify(viaQuery, request({}, { query: new URLSearchParams('token=') }))).toEqual(refused('static_token', 'missing static token'));
    expect(verify(viaQuery, request({}, { query: new URLSearchParams('token=other') }))).toEqual(refused('static_token', 'static token mismatch'));
    expect(verify(viaQuery, request({}, { query: new URLSearchParams(`token=${token}`) }))).toEqual(OK);
  });

  it('reads the token only where the endpoint says', () => {
    const viaHeader = { ...viaQuery, staticTokenQueryParam: null, staticTokenHeaderName: 'x-token' };
    // Whatever name an unset place would have ("null" included) holds no token.
    expect(verify(viaQuery, request({ null: token, token, 'x-token': token }))).toEqual(refused('static_token', 'missing static token'));
    expect(verify(viaHeader, request({}, { query: new URLSearchParams(`null=${token}&x-token=${token}`) }))).toEqual(refused('static_token', 'missing static token'));
  });
});

describe('IP allowlist', () => {
  const from = (remoteAddress: string, cidrs: unknown[]) => verify(settings({ verifyIpAllowlist: true, allowedCidrs: cidrs as string[] }), request({}, { remoteAddress }));

  it('takes one-host blocks (/32, /128) and the whole IPv4-mapped block', () => {
    expect(from('203.0.113.7', ['203.0.113.7/32'])).toEqual(OK);
    expect(from('203.0.113.8', ['203.0.113.7/32'])).toEqual(refused('ip_allowlist', 'remote address 203.0.113.8 not in allowlist'));
    expect(from('2001:db8::7', ['2001:db8::7/128'])).toEqual(OK);
    expect(from('2001:db8::8', ['2001:db8::7/128'])).toEqual(refused('ip_allowlist', 'remote address 2001:db8::8 not in allowlist'));
    expect(from('198.51.100.1', ['::ffff:0.0.0.0/96'])).toEqual(OK);
  });

  it('matches families apart: an IPv6 block wider than the IPv4-mapped range takes no IPv4 sender', () => {
    expect(from('198.51.100.1', ['::ffff:0.0.0.0/95'])).toEqual(refused('ip_allowlist', 'remote address 198.51.100.1 not in allowlist'));
    expect(from('::fffe:0:1', ['::ffff:0.0.0.0/95'])).toEqual(OK);
  });

  it('drops a stored entry that is not a string', () => {
    expect(from('10.1.1.1', [42, null, '10.0.0.0/8'])).toEqual(OK);
  });
});

describe('validateCidr and validateHmacSecret', () => {
  it('say what is wrong', () => {
    expect(validateCidr('')).toBe('must be a CIDR block such as 203.0.113.0/24');
    expect(validateCidr('fe80::1%eth0')).toBe('"fe80::1%eth0" is not a CIDR block: "fe80::1%eth0" is not an IPv4 or IPv6 address');
    expect(validateCidr('10.1/16')).toBe('"10.1/16" is not a CIDR block: "10.1" is not an IPv4 or IPv6 address');
    expect(validateCidr('10.0.0.0/33')).toBe('"10.0.0.0/33" is not a CIDR block: the prefix length must be 0–32');
    expect(validateCidr('::/129')).toBe('"::/129" is not a CIDR block: the prefix length must be 0–128');
    expect(validateHmacSecret('hex', '')).toBe('the secret is empty');
    expect(validateHmacSecret('standard_webhooks', '')).toBe('the secret is empty');
    expect(validateHmacSecret('standard_webhooks', 'whsec_!abc')).toBe('the secret must be whsec_ followed by base64');
  });
});
