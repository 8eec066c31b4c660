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
// The code and the sentence shown to the endpoint's owner are pinned by the table at the end of this file.
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

/**
 * What a refused request's owner is told (docs/api.md, Refused requests): each failure's check, the
 * reason the server logs, the reason code and the sentence, to the word. The sentence names what to
 * check (the header looked for, the scheme, the form expected, what was signed, the tolerance and
 * the skew, the allowlist), never the secret or the expected signature.
 */
const tokenHash = createHash('sha256').update('tok').digest('hex');
const failing = (): never => {
  throw new Error('boom');
};

type Case = [settings: Partial<Omit<VerificationSettings, 'hmacScheme' | 'allowedCidrs'>> & { hmacScheme?: string; allowedCidrs?: unknown }, request: InboundRequest, told: { check: string; reason: string; code: string; detail: string }];
const CASES: Record<string, Case> = {
  'a missing static token names the header it is looked for in': [
    { verifyStaticToken: true, staticTokenHeaderName: 'X-Token', staticTokenHash: tokenHash },
    request(),
    { check: 'static_token', reason: 'missing static token', code: 'token_missing', detail: "no static token: the endpoint expects it in the x-token header; check the sender's configuration" },
  ],
  'a missing static token names the query parameter it is looked for in': [
    { verifyStaticToken: true, staticTokenQueryParam: 'token', staticTokenHash: tokenHash },
    request(),
    { check: 'static_token', reason: 'missing static token', code: 'token_missing', detail: "no static token: the endpoint expects it in the ?token= query parameter; check the sender's configuration" },
  ],
  'a wrong static token names both places it may come from': [
    { verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenQueryParam: 'token', staticTokenHash: tokenHash },
    request({ 'x-token': 'nope' }),
    { check: 'static_token', reason: 'static token mismatch', code: 'token_mismatch', detail: "the static token sent in the x-token header or the ?token= query parameter does not match the endpoint's: check the token configured at the sender" },
  ],
  'a static token check with nowhere to look is misconfigured': [
    { verifyStaticToken: true, staticTokenHash: tokenHash },
    request(),
    { check: 'static_token', reason: 'static_token check misconfigured: no header or query parameter', code: 'verification_misconfigured', detail: "the endpoint's static_token check cannot work as configured (no header or query parameter): every request is refused until the endpoint's settings are fixed" },
  ],
  'a static token check without a valid stored hash is misconfigured': [
    { verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: 'zz' },
    request(),
    { check: 'static_token', reason: 'static_token check misconfigured: no valid token hash stored', code: 'verification_misconfigured', detail: "the endpoint's static_token check cannot work as configured (no valid token hash stored): every request is refused until the endpoint's settings are fixed" },
  ],
  'an hmac check without a secret is misconfigured': [
    { verifyHmac: true, hmacScheme: 'github', hmacSecret: '' },
    request(),
    { check: 'hmac', reason: 'hmac check misconfigured: no secret', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (no secret): every request is refused until the endpoint's settings are fixed" },
  ],
  'an unknown hmac scheme is misconfigured': [
    { verifyHmac: true, hmacScheme: 'md5', hmacSecret: SECRET },
    request(),
    { check: 'hmac', reason: 'hmac check misconfigured: unknown hmac scheme md5', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (unknown hmac scheme md5): every request is refused until the endpoint's settings are fixed" },
  ],
  'hex without hmac_header_name is misconfigured': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET },
    request(),
    { check: 'hmac', reason: 'hmac check misconfigured: hmac_header_name is required for scheme hex', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (hmac_header_name is required for scheme hex): every request is refused until the endpoint's settings are fixed" },
  ],
  'a standard_webhooks secret that is not whsec_ + base64 is misconfigured': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_!!' },
    request(),
    { check: 'hmac', reason: 'hmac check misconfigured: the secret must be whsec_ followed by base64', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (the secret must be whsec_ followed by base64): every request is refused until the endpoint's settings are fixed" },
  ],
  'a missing signature names its header and scheme': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'X-Sig' },
    request(),
    { check: 'hmac', reason: 'missing signature header x-sig', code: 'signature_missing', detail: 'no x-sig header: the endpoint checks a hex HMAC signature sent in it; check that the sender signs its requests (a secret is set there) and that no proxy drops the header' },
  ],
  'a repeated signature header is ambiguous': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    request({ 'x-sig': ['a', 'b'] }),
    { check: 'hmac', reason: 'repeated signature header x-sig', code: 'signature_malformed', detail: 'the x-sig header is sent more than once, so which signature to check is ambiguous' },
  ],
  'a hex signature that is not one says the form expected': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    request({ 'x-sig': 'zz' }),
    { check: 'hmac', reason: 'malformed signature header x-sig', code: 'signature_malformed', detail: "the x-sig header is present but is not a hex signature (expected 64 hex digits, optionally after sha256=): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'a base64 signature that is not one says the form expected': [
    { verifyHmac: true, hmacScheme: 'base64', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    request({ 'x-sig': 'zz' }),
    { check: 'hmac', reason: 'malformed signature header x-sig', code: 'signature_malformed', detail: "the x-sig header is present but is not a base64 signature (expected a base64 SHA-256 digest, optionally after sha256=): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'a mismatch says what was signed: the body': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    request({ 'x-sig': hex('other') }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: "the x-sig header does not match the HMAC-SHA256 of the body under the endpoint's secret (hmac_scheme hex): check that the sender's signing secret is the endpoint's, and that nothing between them rewrites the body" },
  ],
  'a missing timestamp header names it': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'X-Ts' },
    request({ 'x-sig': hex('other') }),
    { check: 'timestamp', reason: 'missing timestamp header x-ts', code: 'timestamp_missing', detail: 'no x-ts header: the signature covers the timestamp sent in it, so it cannot be checked without it; check that the sender sends it and that no proxy drops it' },
  ],
  'a repeated timestamp header is ambiguous': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    request({ 'x-sig': hex('other'), 'x-ts': ['1', '2'] }),
    { check: 'timestamp', reason: 'repeated timestamp header x-ts', code: 'timestamp_malformed', detail: 'the x-ts header is sent more than once, so which timestamp was signed is ambiguous' },
  ],
  'a malformed timestamp shows it trimmed, and that milliseconds are read too': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    request({ 'x-sig': hex('other'), 'x-ts': ' soon ' }),
    { check: 'timestamp', reason: 'malformed timestamp header x-ts', code: 'timestamp_malformed', detail: 'the x-ts header ("soon") is not a unix time in seconds or milliseconds' },
  ],
  'a mismatch with a timestamp header says the timestamp was signed': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    request({ 'x-sig': hex('other'), 'x-ts': String(NOW_S) }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the x-sig header does not match the HMAC-SHA256 of the x-ts value, ".", and the body under the endpoint\'s secret (hmac_scheme hex): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'a timestamp out of tolerance gives the timestamp, the skew and the tolerance': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    request({ 'x-sig': hex(`${NOW_S - 400}.${BODY}`), 'x-ts': String(NOW_S - 400) }),
    { check: 'timestamp', reason: 'timestamp outside tolerance (400 s)', code: 'timestamp_out_of_tolerance', detail: "the signature is valid, but its timestamp (1795348400) is 400 s away from the server's clock, beyond the endpoint's tolerance of 300 s: check the sender's clock and the server's, or whether this request is an old one sent again" },
  ],
  '1e12 exactly is read as seconds (only above it as milliseconds)': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    request({ 'x-sig': hex(`1000000000000.${BODY}`), 'x-ts': '1000000000000' }),
    { check: 'timestamp', reason: 'timestamp outside tolerance (998204651200 s)', code: 'timestamp_out_of_tolerance', detail: "the signature is valid, but its timestamp (1000000000000) is 998204651200 s away from the server's clock, beyond the endpoint's tolerance of 300 s: check the sender's clock and the server's, or whether this request is an old one sent again" },
  ],
  'slack: a malformed timestamp is not read as milliseconds': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    request({ 'x-slack-signature': `v0=${hex('x')}`, 'x-slack-request-timestamp': 'soon' }),
    { check: 'timestamp', reason: 'malformed timestamp header x-slack-request-timestamp', code: 'timestamp_malformed', detail: 'the x-slack-request-timestamp header ("soon") is not a unix time in seconds' },
  ],
  'a malformed timestamp is shown up to its first 40 characters': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    request({ 'x-sig': hex('other'), 'x-ts': `${'1'.repeat(45)}x` }),
    { check: 'timestamp', reason: 'malformed timestamp header x-ts', code: 'timestamp_malformed', detail: 'the x-ts header ("1111111111111111111111111111111111111111") is not a unix time in seconds or milliseconds' },
  ],
  'github: a signature without sha256= is malformed': [
    { verifyHmac: true, hmacScheme: 'github', hmacSecret: SECRET },
    request({ 'x-hub-signature-256': hex(BODY) }),
    { check: 'hmac', reason: 'malformed signature header x-hub-signature-256 (expected sha256=<hex>)', code: 'signature_malformed', detail: "the x-hub-signature-256 header is present but is not a github signature (expected sha256= followed by 64 hex digits): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'github: a mismatch names its header and scheme': [
    { verifyHmac: true, hmacScheme: 'github', hmacSecret: SECRET },
    request({ 'x-hub-signature-256': `sha256=${hex('x')}` }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: "the x-hub-signature-256 header does not match the HMAC-SHA256 of the body under the endpoint's secret (hmac_scheme github): check that the sender's signing secret is the endpoint's, and that nothing between them rewrites the body" },
  ],
  'stripe: two different t= are ambiguous': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    request({ 'stripe-signature': `t=1,t=2,v1=${hex('x')}` }),
    { check: 'timestamp', reason: 'malformed signature header stripe-signature (several timestamps)', code: 'timestamp_malformed', detail: 'the stripe-signature header holds two different t= timestamps, so which one was signed is ambiguous' },
  ],
  'stripe: no t=': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    request({ 'stripe-signature': `v1=${hex('x')}` }),
    { check: 'timestamp', reason: 'malformed signature header stripe-signature (no t=)', code: 'timestamp_missing', detail: 'the stripe-signature header has no t= timestamp, which Stripe signatures cover' },
  ],
  'stripe: no v1=': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    request({ 'stripe-signature': `t=${NOW_S}` }),
    { check: 'hmac', reason: 'malformed signature header stripe-signature (no v1=)', code: 'signature_malformed', detail: "the stripe-signature header is present but is not a stripe signature (expected t=<timestamp>,v1=<64 hex digits>): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'stripe: a t= that is not seconds': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    request({ 'stripe-signature': `t=x,v1=${hex('x')}` }),
    { check: 'timestamp', reason: 'malformed signature header stripe-signature (bad t=)', code: 'timestamp_malformed', detail: 'the t= value of the stripe-signature header is not a unix time in seconds' },
  ],
  'stripe: a mismatch says t= was signed': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    request({ 'stripe-signature': `t=${NOW_S},v1=${hex('x')}` }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the stripe-signature header does not match the HMAC-SHA256 of the t= timestamp, ".", and the body under the endpoint\'s secret (hmac_scheme stripe): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'slack: a signature without v0= is malformed': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    request({ 'x-slack-signature': hex('x') }),
    { check: 'hmac', reason: 'malformed signature header x-slack-signature (expected v0=<hex>)', code: 'signature_malformed', detail: "the x-slack-signature header is present but is not a slack signature (expected v0= followed by 64 hex digits): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'slack: a missing timestamp names its preset header': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    request({ 'x-slack-signature': `v0=${hex('x')}` }),
    { check: 'timestamp', reason: 'missing timestamp header x-slack-request-timestamp', code: 'timestamp_missing', detail: 'no x-slack-request-timestamp header: the signature covers the timestamp sent in it, so it cannot be checked without it; check that the sender sends it and that no proxy drops it' },
  ],
  'slack: a mismatch says what slack signs': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    request({ 'x-slack-signature': `v0=${hex('x')}`, 'x-slack-request-timestamp': String(NOW_S) }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the x-slack-signature header does not match the HMAC-SHA256 of "v0:", the x-slack-request-timestamp value, ":", and the body under the endpoint\'s secret (hmac_scheme slack): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'standard_webhooks: a missing id header': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    request({ 'webhook-signature': 'v1,abc' }),
    { check: 'hmac', reason: 'missing id header webhook-id', code: 'signature_missing', detail: 'no webhook-id header: Standard Webhooks signatures cover it, so the signature cannot be checked without it' },
  ],
  'standard_webhooks: a repeated id header': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    request({ 'webhook-signature': 'v1,abc', 'webhook-id': ['a', 'b'] }),
    { check: 'hmac', reason: 'repeated id header webhook-id', code: 'signature_malformed', detail: 'the webhook-id header is sent more than once, so which id was signed is ambiguous' },
  ],
  'standard_webhooks: no v1 signature among the versions sent': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    request({ 'webhook-signature': 'v1a,abc', 'webhook-id': 'msg_1', 'webhook-timestamp': String(NOW_S) }),
    { check: 'hmac', reason: 'malformed signature header webhook-signature (no v1,<base64>)', code: 'signature_malformed', detail: "the webhook-signature header is present but is not a standard_webhooks signature (expected v1,<base64>, several separated by spaces): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'standard_webhooks: a mismatch says what is signed': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    request({ 'webhook-signature': 'v1,abc', 'webhook-id': 'msg_1', 'webhook-timestamp': String(NOW_S) }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the webhook-signature header does not match the HMAC-SHA256 of the webhook-id value, the webhook-timestamp value and the body, joined by "." under the endpoint\'s secret (hmac_scheme standard_webhooks): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'a source that is not an IP address': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8'] },
    request({}, { remoteAddress: 'nowhere' }),
    { check: 'ip_allowlist', reason: 'remote address "nowhere" is not an IP address', code: 'ip_not_allowed', detail: 'the source address "nowhere" is not an IP address, so the allowlist cannot admit it' },
  ],
  'an address outside the allowlist lists the blocks (strings only)': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8', 42, '192.168.0.0/16'] },
    request(),
    { check: 'ip_allowlist', reason: 'remote address 203.0.113.10 not in allowlist', code: 'ip_not_allowed', detail: "the request came from 203.0.113.10, which is not in the endpoint's IP allowlist (10.0.0.0/8, 192.168.0.0/16): check the sender's published address ranges, and whether a proxy in front of hookrelay hides the sender's address (HOOKRELAY_TRUSTED_PROXIES)" },
  ],
  'an allowlist longer than five shows five and how many more': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8', '10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16', '10.4.0.0/16', '10.5.0.0/16', '10.6.0.0/16'] },
    request(),
    { check: 'ip_allowlist', reason: 'remote address 203.0.113.10 not in allowlist', code: 'ip_not_allowed', detail: "the request came from 203.0.113.10, which is not in the endpoint's IP allowlist (10.0.0.0/8, 10.1.0.0/16, 10.2.0.0/16, 10.3.0.0/16, 10.4.0.0/16 and 2 more): check the sender's published address ranges, and whether a proxy in front of hookrelay hides the sender's address (HOOKRELAY_TRUSTED_PROXIES)" },
  ],
  'an allowlist of five shows all five': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8', '10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16', '10.4.0.0/16'] },
    request(),
    { check: 'ip_allowlist', reason: 'remote address 203.0.113.10 not in allowlist', code: 'ip_not_allowed', detail: "the request came from 203.0.113.10, which is not in the endpoint's IP allowlist (10.0.0.0/8, 10.1.0.0/16, 10.2.0.0/16, 10.3.0.0/16, 10.4.0.0/16): check the sender's published address ranges, and whether a proxy in front of hookrelay hides the sender's address (HOOKRELAY_TRUSTED_PROXIES)" },
  ],
  'an allowlist without a valid block is misconfigured': [
    { verifyIpAllowlist: true, allowedCidrs: ['nonsense'] },
    request(),
    { check: 'ip_allowlist', reason: 'ip_allowlist check misconfigured: no valid CIDR block', code: 'verification_misconfigured', detail: "the endpoint's ip_allowlist check cannot work as configured (no valid CIDR block): every request is refused until the endpoint's settings are fixed" },
  ],
  'an allowlist that is not there is misconfigured': [
    { verifyIpAllowlist: true, allowedCidrs: undefined },
    request(),
    { check: 'ip_allowlist', reason: 'ip_allowlist check misconfigured: no valid CIDR block', code: 'verification_misconfigured', detail: "the endpoint's ip_allowlist check cannot work as configured (no valid CIDR block): every request is refused until the endpoint's settings are fixed" },
  ],
  'a check that throws is refused as misconfigured, the error left to the log': [
    { verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: tokenHash },
    request(new Proxy({}, { get: failing })),
    { check: 'static_token', reason: 'static_token check failed unexpectedly: boom', code: 'verification_misconfigured', detail: "the endpoint's static_token check failed unexpectedly; the server's log has the error" },
  ],
};

describe("what a refusal tells the endpoint's owner", () => {
  for (const [title, [overrides, inbound, told]] of Object.entries(CASES)) {
    it(title, () => {
      expect(verify(settings(overrides as Partial<VerificationSettings>), inbound)).toEqual({ ok: false, ...told });
    });
  }

  it('validateHmacSecret refuses an empty secret for every scheme', () => {
    for (const scheme of ['hex', 'base64', 'github', 'stripe', 'slack', 'standard_webhooks'] as const) expect(validateHmacSecret(scheme, '')).toBe('the secret is empty');
  });

  it('a static token check with no stored hash at all is misconfigured the same way', () => {
    const result = verify(settings({ verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: null }), request({ 'x-token': 'tok' }));
    expect(result).toMatchObject({ code: 'verification_misconfigured', reason: 'static_token check misconfigured: no valid token hash stored' });
  });
});
