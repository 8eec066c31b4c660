import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compileVerifier, validateHmacSecret, type InboundRequest, type VerificationSettings } from '../../src/ingest/verify.js';

/**
 * What a refused request's owner is told (docs/api.md, Refused requests): each failure's check, the
 * reason the server logs, the reason code and the sentence, to the word. The sentence names what to
 * check (the header looked for, the scheme, the form expected, what was signed, the tolerance and
 * the skew, the allowlist), never the secret or the expected signature.
 */
const NOW = new Date('2026-11-22T12:00:00.000Z');
const NOW_S = Math.floor(NOW.getTime() / 1000);
const BODY = '{"event":"ping"}';
const SECRET = 'a s3cret';
const base: VerificationSettings = {
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
};
const hex = (content: string) => createHmac('sha256', SECRET).update(content).digest('hex');
const req = (headers: InboundRequest['headers'] = {}, extra: Partial<Omit<InboundRequest, 'headers'>> = {}): InboundRequest => ({
  rawBody: Buffer.from(BODY),
  headers,
  query: new URLSearchParams(),
  remoteAddress: '203.0.113.10',
  now: NOW,
  ...extra,
});
const tokenHash = createHash('sha256').update('tok').digest('hex');
const failing = (): never => {
  throw new Error('boom');
};

type Case = [settings: Partial<Omit<VerificationSettings, 'hmacScheme' | 'allowedCidrs'>> & { hmacScheme?: string; allowedCidrs?: unknown }, request: InboundRequest, told: { check: string; reason: string; code: string; detail: string }];
const CASES: Record<string, Case> = {
  'a missing static token names the header it is looked for in': [
    { verifyStaticToken: true, staticTokenHeaderName: 'X-Token', staticTokenHash: tokenHash },
    req(),
    { check: 'static_token', reason: 'missing static token', code: 'token_missing', detail: "no static token: the endpoint expects it in the x-token header; check the sender's configuration" },
  ],
  'a missing static token names the query parameter it is looked for in': [
    { verifyStaticToken: true, staticTokenQueryParam: 'token', staticTokenHash: tokenHash },
    req(),
    { check: 'static_token', reason: 'missing static token', code: 'token_missing', detail: "no static token: the endpoint expects it in the ?token= query parameter; check the sender's configuration" },
  ],
  'a wrong static token names both places it may come from': [
    { verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenQueryParam: 'token', staticTokenHash: tokenHash },
    req({ 'x-token': 'nope' }),
    { check: 'static_token', reason: 'static token mismatch', code: 'token_mismatch', detail: "the static token sent in the x-token header or the ?token= query parameter does not match the endpoint's: check the token configured at the sender" },
  ],
  'a static token check with nowhere to look is misconfigured': [
    { verifyStaticToken: true, staticTokenHash: tokenHash },
    req(),
    { check: 'static_token', reason: 'static_token check misconfigured: no header or query parameter', code: 'verification_misconfigured', detail: "the endpoint's static_token check cannot work as configured (no header or query parameter): every request is refused until the endpoint's settings are fixed" },
  ],
  'a static token check without a valid stored hash is misconfigured': [
    { verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: 'zz' },
    req(),
    { check: 'static_token', reason: 'static_token check misconfigured: no valid token hash stored', code: 'verification_misconfigured', detail: "the endpoint's static_token check cannot work as configured (no valid token hash stored): every request is refused until the endpoint's settings are fixed" },
  ],
  'an hmac check without a secret is misconfigured': [
    { verifyHmac: true, hmacScheme: 'github', hmacSecret: '' },
    req(),
    { check: 'hmac', reason: 'hmac check misconfigured: no secret', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (no secret): every request is refused until the endpoint's settings are fixed" },
  ],
  'an unknown hmac scheme is misconfigured': [
    { verifyHmac: true, hmacScheme: 'md5', hmacSecret: SECRET },
    req(),
    { check: 'hmac', reason: 'hmac check misconfigured: unknown hmac scheme md5', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (unknown hmac scheme md5): every request is refused until the endpoint's settings are fixed" },
  ],
  'hex without hmac_header_name is misconfigured': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET },
    req(),
    { check: 'hmac', reason: 'hmac check misconfigured: hmac_header_name is required for scheme hex', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (hmac_header_name is required for scheme hex): every request is refused until the endpoint's settings are fixed" },
  ],
  'a standard_webhooks secret that is not whsec_ + base64 is misconfigured': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_!!' },
    req(),
    { check: 'hmac', reason: 'hmac check misconfigured: the secret must be whsec_ followed by base64', code: 'verification_misconfigured', detail: "the endpoint's hmac check cannot work as configured (the secret must be whsec_ followed by base64): every request is refused until the endpoint's settings are fixed" },
  ],
  'a missing signature names its header and scheme': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'X-Sig' },
    req(),
    { check: 'hmac', reason: 'missing signature header x-sig', code: 'signature_missing', detail: 'no x-sig header: the endpoint checks a hex HMAC signature sent in it; check that the sender signs its requests (a secret is set there) and that no proxy drops the header' },
  ],
  'a repeated signature header is ambiguous': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    req({ 'x-sig': ['a', 'b'] }),
    { check: 'hmac', reason: 'repeated signature header x-sig', code: 'signature_malformed', detail: 'the x-sig header is sent more than once, so which signature to check is ambiguous' },
  ],
  'a hex signature that is not one says the form expected': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    req({ 'x-sig': 'zz' }),
    { check: 'hmac', reason: 'malformed signature header x-sig', code: 'signature_malformed', detail: "the x-sig header is present but is not a hex signature (expected 64 hex digits, optionally after sha256=): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'a base64 signature that is not one says the form expected': [
    { verifyHmac: true, hmacScheme: 'base64', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    req({ 'x-sig': 'zz' }),
    { check: 'hmac', reason: 'malformed signature header x-sig', code: 'signature_malformed', detail: "the x-sig header is present but is not a base64 signature (expected a base64 SHA-256 digest, optionally after sha256=): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'a mismatch says what was signed: the body': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig' },
    req({ 'x-sig': hex('other') }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: "the x-sig header does not match the HMAC-SHA256 of the body under the endpoint's secret (hmac_scheme hex): check that the sender's signing secret is the endpoint's, and that nothing between them rewrites the body" },
  ],
  'a missing timestamp header names it': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'X-Ts' },
    req({ 'x-sig': hex('other') }),
    { check: 'timestamp', reason: 'missing timestamp header x-ts', code: 'timestamp_missing', detail: 'no x-ts header: the signature covers the timestamp sent in it, so it cannot be checked without it; check that the sender sends it and that no proxy drops it' },
  ],
  'a repeated timestamp header is ambiguous': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    req({ 'x-sig': hex('other'), 'x-ts': ['1', '2'] }),
    { check: 'timestamp', reason: 'repeated timestamp header x-ts', code: 'timestamp_malformed', detail: 'the x-ts header is sent more than once, so which timestamp was signed is ambiguous' },
  ],
  'a malformed timestamp shows it trimmed, and that milliseconds are read too': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    req({ 'x-sig': hex('other'), 'x-ts': ' soon ' }),
    { check: 'timestamp', reason: 'malformed timestamp header x-ts', code: 'timestamp_malformed', detail: 'the x-ts header ("soon") is not a unix time in seconds or milliseconds' },
  ],
  'a mismatch with a timestamp header says the timestamp was signed': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    req({ 'x-sig': hex('other'), 'x-ts': String(NOW_S) }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the x-sig header does not match the HMAC-SHA256 of the x-ts value, ".", and the body under the endpoint\'s secret (hmac_scheme hex): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'a timestamp out of tolerance gives the timestamp, the skew and the tolerance': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    req({ 'x-sig': hex(`${NOW_S - 400}.${BODY}`), 'x-ts': String(NOW_S - 400) }),
    { check: 'timestamp', reason: 'timestamp outside tolerance (400 s)', code: 'timestamp_out_of_tolerance', detail: "the signature is valid, but its timestamp (1795348400) is 400 s away from the server's clock, beyond the endpoint's tolerance of 300 s: check the sender's clock and the server's, or whether this request is an old one sent again" },
  ],
  '1e12 exactly is read as seconds (only above it as milliseconds)': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    req({ 'x-sig': hex(`1000000000000.${BODY}`), 'x-ts': '1000000000000' }),
    { check: 'timestamp', reason: 'timestamp outside tolerance (998204651200 s)', code: 'timestamp_out_of_tolerance', detail: "the signature is valid, but its timestamp (1000000000000) is 998204651200 s away from the server's clock, beyond the endpoint's tolerance of 300 s: check the sender's clock and the server's, or whether this request is an old one sent again" },
  ],
  'slack: a malformed timestamp is not read as milliseconds': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    req({ 'x-slack-signature': `v0=${hex('x')}`, 'x-slack-request-timestamp': 'soon' }),
    { check: 'timestamp', reason: 'malformed timestamp header x-slack-request-timestamp', code: 'timestamp_malformed', detail: 'the x-slack-request-timestamp header ("soon") is not a unix time in seconds' },
  ],
  'a malformed timestamp is shown up to its first 40 characters': [
    { verifyHmac: true, hmacScheme: 'hex', hmacSecret: SECRET, hmacHeaderName: 'x-sig', timestampHeaderName: 'x-ts' },
    req({ 'x-sig': hex('other'), 'x-ts': `${'1'.repeat(45)}x` }),
    { check: 'timestamp', reason: 'malformed timestamp header x-ts', code: 'timestamp_malformed', detail: 'the x-ts header ("1111111111111111111111111111111111111111") is not a unix time in seconds or milliseconds' },
  ],
  'github: a signature without sha256= is malformed': [
    { verifyHmac: true, hmacScheme: 'github', hmacSecret: SECRET },
    req({ 'x-hub-signature-256': hex(BODY) }),
    { check: 'hmac', reason: 'malformed signature header x-hub-signature-256 (expected sha256=<hex>)', code: 'signature_malformed', detail: "the x-hub-signature-256 header is present but is not a github signature (expected sha256= followed by 64 hex digits): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'github: a mismatch names its header and scheme': [
    { verifyHmac: true, hmacScheme: 'github', hmacSecret: SECRET },
    req({ 'x-hub-signature-256': `sha256=${hex('x')}` }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: "the x-hub-signature-256 header does not match the HMAC-SHA256 of the body under the endpoint's secret (hmac_scheme github): check that the sender's signing secret is the endpoint's, and that nothing between them rewrites the body" },
  ],
  'stripe: two different t= are ambiguous': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    req({ 'stripe-signature': `t=1,t=2,v1=${hex('x')}` }),
    { check: 'timestamp', reason: 'malformed signature header stripe-signature (several timestamps)', code: 'timestamp_malformed', detail: 'the stripe-signature header holds two different t= timestamps, so which one was signed is ambiguous' },
  ],
  'stripe: no t=': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    req({ 'stripe-signature': `v1=${hex('x')}` }),
    { check: 'timestamp', reason: 'malformed signature header stripe-signature (no t=)', code: 'timestamp_missing', detail: 'the stripe-signature header has no t= timestamp, which Stripe signatures cover' },
  ],
  'stripe: no v1=': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    req({ 'stripe-signature': `t=${NOW_S}` }),
    { check: 'hmac', reason: 'malformed signature header stripe-signature (no v1=)', code: 'signature_malformed', detail: "the stripe-signature header is present but is not a stripe signature (expected t=<timestamp>,v1=<64 hex digits>): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'stripe: a t= that is not seconds': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    req({ 'stripe-signature': `t=x,v1=${hex('x')}` }),
    { check: 'timestamp', reason: 'malformed signature header stripe-signature (bad t=)', code: 'timestamp_malformed', detail: 'the t= value of the stripe-signature header is not a unix time in seconds' },
  ],
  'stripe: a mismatch says t= was signed': [
    { verifyHmac: true, hmacScheme: 'stripe', hmacSecret: SECRET },
    req({ 'stripe-signature': `t=${NOW_S},v1=${hex('x')}` }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the stripe-signature header does not match the HMAC-SHA256 of the t= timestamp, ".", and the body under the endpoint\'s secret (hmac_scheme stripe): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'slack: a signature without v0= is malformed': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    req({ 'x-slack-signature': hex('x') }),
    { check: 'hmac', reason: 'malformed signature header x-slack-signature (expected v0=<hex>)', code: 'signature_malformed', detail: "the x-slack-signature header is present but is not a slack signature (expected v0= followed by 64 hex digits): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'slack: a missing timestamp names its preset header': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    req({ 'x-slack-signature': `v0=${hex('x')}` }),
    { check: 'timestamp', reason: 'missing timestamp header x-slack-request-timestamp', code: 'timestamp_missing', detail: 'no x-slack-request-timestamp header: the signature covers the timestamp sent in it, so it cannot be checked without it; check that the sender sends it and that no proxy drops it' },
  ],
  'slack: a mismatch says what slack signs': [
    { verifyHmac: true, hmacScheme: 'slack', hmacSecret: SECRET },
    req({ 'x-slack-signature': `v0=${hex('x')}`, 'x-slack-request-timestamp': String(NOW_S) }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the x-slack-signature header does not match the HMAC-SHA256 of "v0:", the x-slack-request-timestamp value, ":", and the body under the endpoint\'s secret (hmac_scheme slack): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'standard_webhooks: a missing id header': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    req({ 'webhook-signature': 'v1,abc' }),
    { check: 'hmac', reason: 'missing id header webhook-id', code: 'signature_missing', detail: 'no webhook-id header: Standard Webhooks signatures cover it, so the signature cannot be checked without it' },
  ],
  'standard_webhooks: a repeated id header': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    req({ 'webhook-signature': 'v1,abc', 'webhook-id': ['a', 'b'] }),
    { check: 'hmac', reason: 'repeated id header webhook-id', code: 'signature_malformed', detail: 'the webhook-id header is sent more than once, so which id was signed is ambiguous' },
  ],
  'standard_webhooks: no v1 signature among the versions sent': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    req({ 'webhook-signature': 'v1a,abc', 'webhook-id': 'msg_1', 'webhook-timestamp': String(NOW_S) }),
    { check: 'hmac', reason: 'malformed signature header webhook-signature (no v1,<base64>)', code: 'signature_malformed', detail: "the webhook-signature header is present but is not a standard_webhooks signature (expected v1,<base64>, several separated by spaces): check that the endpoint's hmac_scheme is the one the sender uses" },
  ],
  'standard_webhooks: a mismatch says what is signed': [
    { verifyHmac: true, hmacScheme: 'standard_webhooks', hmacSecret: 'whsec_c2VjcmV0' },
    req({ 'webhook-signature': 'v1,abc', 'webhook-id': 'msg_1', 'webhook-timestamp': String(NOW_S) }),
    { check: 'hmac', reason: 'hmac signature mismatch', code: 'signature_mismatch', detail: 'the webhook-signature header does not match the HMAC-SHA256 of the webhook-id value, the webhook-timestamp value and the body, joined by "." under the endpoint\'s secret (hmac_scheme standard_webhooks): check that the sender\'s signing secret is the endpoint\'s, and that nothing between them rewrites the body' },
  ],
  'a source that is not an IP address': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8'] },
    req({}, { remoteAddress: 'nowhere' }),
    { check: 'ip_allowlist', reason: 'remote address "nowhere" is not an IP address', code: 'ip_not_allowed', detail: 'the source address "nowhere" is not an IP address, so the allowlist cannot admit it' },
  ],
  'an address outside the allowlist lists the blocks (strings only)': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8', 42, '192.168.0.0/16'] },
    req(),
    { check: 'ip_allowlist', reason: 'remote address 203.0.113.10 not in allowlist', code: 'ip_not_allowed', detail: "the request came from 203.0.113.10, which is not in the endpoint's IP allowlist (10.0.0.0/8, 192.168.0.0/16): check the sender's published address ranges, and whether a proxy in front of hookrelay hides the sender's address (HOOKRELAY_TRUSTED_PROXIES)" },
  ],
  'an allowlist longer than five shows five and how many more': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8', '10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16', '10.4.0.0/16', '10.5.0.0/16', '10.6.0.0/16'] },
    req(),
    { check: 'ip_allowlist', reason: 'remote address 203.0.113.10 not in allowlist', code: 'ip_not_allowed', detail: "the request came from 203.0.113.10, which is not in the endpoint's IP allowlist (10.0.0.0/8, 10.1.0.0/16, 10.2.0.0/16, 10.3.0.0/16, 10.4.0.0/16 and 2 more): check the sender's published address ranges, and whether a proxy in front of hookrelay hides the sender's address (HOOKRELAY_TRUSTED_PROXIES)" },
  ],
  'an allowlist of five shows all five': [
    { verifyIpAllowlist: true, allowedCidrs: ['10.0.0.0/8', '10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16', '10.4.0.0/16'] },
    req(),
    { check: 'ip_allowlist', reason: 'remote address 203.0.113.10 not in allowlist', code: 'ip_not_allowed', detail: "the request came from 203.0.113.10, which is not in the endpoint's IP allowlist (10.0.0.0/8, 10.1.0.0/16, 10.2.0.0/16, 10.3.0.0/16, 10.4.0.0/16): check the sender's published address ranges, and whether a proxy in front of hookrelay hides the sender's address (HOOKRELAY_TRUSTED_PROXIES)" },
  ],
  'an allowlist without a valid block is misconfigured': [
    { verifyIpAllowlist: true, allowedCidrs: ['nonsense'] },
    req(),
    { check: 'ip_allowlist', reason: 'ip_allowlist check misconfigured: no valid CIDR block', code: 'verification_misconfigured', detail: "the endpoint's ip_allowlist check cannot work as configured (no valid CIDR block): every request is refused until the endpoint's settings are fixed" },
  ],
  'an allowlist that is not there is misconfigured': [
    { verifyIpAllowlist: true, allowedCidrs: undefined },
    req(),
    { check: 'ip_allowlist', reason: 'ip_allowlist check misconfigured: no valid CIDR block', code: 'verification_misconfigured', detail: "the endpoint's ip_allowlist check cannot work as configured (no valid CIDR block): every request is refused until the endpoint's settings are fixed" },
  ],
  'a check that throws is refused as misconfigured, the error left to the log': [
    { verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: tokenHash },
    req(new Proxy({}, { get: failing })),
    { check: 'static_token', reason: 'static_token check failed unexpectedly: boom', code: 'verification_misconfigured', detail: "the endpoint's static_token check failed unexpectedly; the server's log has the error" },
  ],
};

describe("what a refusal tells the endpoint's owner", () => {
  for (const [title, [settings, request, told]] of Object.entries(CASES)) {
    it(title, () => {
      expect(compileVerifier({ ...base, ...(settings as Partial<VerificationSettings>) })(request)).toEqual({ ok: false, ...told });
    });
  }

  it('validateHmacSecret refuses an empty secret for every scheme', () => {
    for (const scheme of ['hex', 'base64', 'github', 'stripe', 'slack', 'standard_webhooks'] as const) expect(validateHmacSecret(scheme, '')).toBe('the secret is empty');
  });

  it('a static token check with no stored hash at all is misconfigured the same way', () => {
    const result = compileVerifier({ ...base, verifyStaticToken: true, staticTokenHeaderName: 'x-token', staticTokenHash: null })(req({ 'x-token': 'tok' }));
    expect(result).toMatchObject({ code: 'verification_misconfigured', reason: 'static_token check misconfigured: no valid token hash stored' });
  });
});
