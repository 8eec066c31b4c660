import { createHmac } from 'node:crypto';
import { signSlack, signStandardWebhook, signStripe } from '@hookrelay/shared';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { lateSignature, outgoingSignature, resignedHeaderNames, type SenderSigning, type SignedMessage } from '../../src/ingest/resign.js';
import { compileVerifier, type VerificationSettings } from '../../src/ingest/verify.js';

const BODY = Buffer.from('{"id":"evt_1","type":"invoice.paid","amount":1200,"note":"héllo"}', 'utf8');
const AFTER = 240;
const stripe = new Stripe('sk_test_unused');

/** The providers' libraries check against the real clock, so these tests sign and re-sign around it. */
const nowMs = () => Date.now();
const secondsAgo = (seconds: number) => Math.floor(Date.now() / 1000) - seconds;

function signing(overrides: Partial<SenderSigning> = {}): SenderSigning {
  return { scheme: 'stripe', secret: 'whsec_stripe_test', hmacHeaderName: null, timestampHeaderName: null, resignLate: true, ...overrides };
}

function message(rawHeaders: [string, string][], verified: string[] = ['hmac']): SignedMessage {
  return { raw_headers: rawHeaders, verified };
}

/** The endpoint's own verifier, with the tolerance the providers' checks use, at `at`. */
function verifies(s: SenderSigning, rawHeaders: readonly [string, string][], at: number, body: Buffer = BODY): boolean {
  const settings: VerificationSettings = {
    verifyStaticToken: false,
    staticTokenHeaderName: null,
    staticTokenQueryParam: null,
    staticTokenHash: null,
    verifyHmac: true,
    hmacScheme: s.scheme,
    hmacHeaderName: s.hmacHeaderName,
    hmacSecret: s.secret,
    timestampHeaderName: s.timestampHeaderName,
    timestampToleranceSeconds: 300,
    verifyIpAllowlist: false,
    allowedCidrs: [],
  };
  const headers: Record<string, string> = {};
  for (const [name, value] of rawHeaders) headers[name.toLowerCase()] = value;
  return compileVerifier(settings)({ rawBody: body, headers, query: new URLSearchParams(), remoteAddress: '127.0.0.1', now: new Date(at) }).ok;
}

async function resign(s: SenderSigning, m: SignedMessage, at = nowMs(), body: Buffer | (() => AsyncIterable<Uint8Array>) = BODY) {
  return outgoingSignature(lateSignature(s, m, at, AFTER), m, body, at);
}

const header = (lines: readonly [string, string][], name: string) => lines.find(([n]) => n.toLowerCase() === name)?.[1];

describe('a late Stripe event', () => {
  const s = signing();
  const signedAt = secondsAgo(600);
  const arrived: [string, string][] = [
    ['Content-Type', 'application/json; charset=utf-8'],
    ['Stripe-Signature', signStripe(s.secret!, BODY, signedAt)],
    ['User-Agent', 'Stripe/1.0'],
  ];

  it('goes with a fresh t= and v1= that Stripe’s own library and the endpoint’s verifier accept; nothing else changes', async () => {
    expect(() => stripe.webhooks.constructEvent(BODY, header(arrived, 'stripe-signature')!, s.secret!)).toThrow(/tolerance/u);
    const at = nowMs();
    const out = await resign(s, message(arrived), at);
    expect(out.resigned).toBe(true);
    expect(out.late).toMatchObject({ signedAt });
    expect(out.rawHeaders.map(([name]) => name)).toEqual(['Content-Type', 'Stripe-Signature', 'User-Agent']);
    expect(out.rawHeaders[0]).toEqual(arrived[0]);
    expect(out.rawHeaders[2]).toEqual(arrived[2]);
    expect(header(out.rawHeaders, 'stripe-signature')).toMatch(new RegExp(`^t=${Math.floor(at / 1000)},v1=[0-9a-f]{64}$`, 'u'));
    expect(stripe.webhooks.constructEvent(BODY, header(out.rawHeaders, 'stripe-signature')!, s.secret!).id).toBe('evt_1');
    expect(verifies(s, out.rawHeaders, at)).toBe(true);
    // What arrived is left as it was.
    expect(header(arrived, 'stripe-signature')).toBe(signStripe(s.secret!, BODY, signedAt));
  });

  it('signs a body read in pieces exactly as one held whole', async () => {
    const at = nowMs();
    async function* pieces() {
      // Split inside a multi-byte character: the signature is over bytes.
      yield BODY.subarray(0, 57);
      yield BODY.subarray(57);
    }
    expect((await resign(s, message(arrived), at, () => pieces())).rawHeaders).toEqual((await resign(s, message(arrived), at)).rawHeaders);
  });

  it('is not re-signed within the threshold', async () => {
    const fresh: [string, string][] = [['Stripe-Signature', signStripe(s.secret!, BODY, secondsAgo(AFTER - 30))]];
    expect(lateSignature(s, message(fresh), nowMs(), AFTER)).toBeNull();
    expect(await resign(s, message(fresh))).toEqual({ rawHeaders: fresh, resigned: false, late: null });
  });

  it('says why it is not re-signed: resign_late off, no secret, a signature never checked', async () => {
    for (const [settings, verified, skipped] of [
      [signing({ resignLate: false }), ['hmac'], 'disabled'],
      [signing({ secret: null }), [], 'no_secret'],
      [signing(), ['ip_allowlist'], 'unverified'],
    ] as const) {
      const out = await resign(settings, message(arrived, [...verified]));
      expect(out).toEqual({ rawHeaders: arrived, resigned: false, late: { signedAt, skipped } });
    }
  });

  it('at an endpoint of another scheme (no Stripe secret) is late without a secret, or with re-signing off', () => {
    expect(lateSignature(signing({ scheme: 'github', secret: 'gh' }), message(arrived), nowMs(), AFTER)).toEqual({ signedAt, skipped: 'no_secret' });
    expect(lateSignature(signing({ scheme: 'hex', hmacHeaderName: 'X-Sig', secret: 'x' }), message(arrived), nowMs(), AFTER)).toEqual({ signedAt, skipped: 'no_secret' });
    expect(lateSignature(signing({ scheme: 'hex', resignLate: false }), message(arrived), nowMs(), AFTER)).toEqual({ signedAt, skipped: 'disabled' });
    expect(lateSignature(null, message(arrived), nowMs(), AFTER)).toEqual({ signedAt, skipped: 'no_secret' });
  });

  it('with two timestamps, or two signature headers, is not judged: which one was signed is ambiguous', () => {
    const twoT: [string, string][] = [['Stripe-Signature', `t=${signedAt},t=${signedAt + 1},v1=${'0'.repeat(64)}`]];
    expect(lateSignature(s, message(twoT), nowMs(), AFTER)).toBeNull();
    expect(lateSignature(s, message([...arrived, ['stripe-signature', header(arrived, 'stripe-signature')!]]), nowMs(), AFTER)).toBeNull();
  });
});

describe('a late Slack request', () => {
  const s = signing({ scheme: 'slack', secret: '8f742231b10e8888abcd99yyyzzz85a5' });
  const signedAt = secondsAgo(900);
  const arrived: [string, string][] = [
    ['X-Slack-Request-Timestamp', String(signedAt)],
    ['X-Slack-Signature', signSlack(s.secret!, BODY, signedAt)],
  ];

  it('gets a new X-Slack-Request-Timestamp and the v0 signature over it, as Slack documents the check', async () => {
    const at = nowMs();
    const out = await resign(s, message(arrived), at);
    const timestamp = header(out.rawHeaders, 'x-slack-request-timestamp')!;
    expect(timestamp).toBe(String(Math.floor(at / 1000)));
    expect(Math.abs(at / 1000 - Number(timestamp))).toBeLessThan(300);
    const expected = `v0=${createHmac('sha256', s.secret!).update(`v0:${timestamp}:`).update(BODY).digest('hex')}`;
    expect(header(out.rawHeaders, 'x-slack-signature')).toBe(expected);
    expect(verifies(s, out.rawHeaders, at)).toBe(true);
    expect(resignedHeaderNames(lateSignature(s, message(arrived), at, AFTER)!.plan!)).toEqual(['x-slack-signature', 'x-slack-request-timestamp']);
  });

  it('under the header names the endpoint verifies by (a proxy that renames them)', async () => {
    const renamed = signing({ scheme: 'slack', secret: s.secret, hmacHeaderName: 'X-Proxy-Sig', timestampHeaderName: 'X-Proxy-Time' });
    const lines: [string, string][] = [
      ['X-Proxy-Time', String(signedAt)],
      ['X-Proxy-Sig', signSlack(s.secret!, BODY, signedAt)],
    ];
    const at = nowMs();
    const out = await resign(renamed, message(lines), at);
    expect(out.resigned).toBe(true);
    expect(out.rawHeaders[0]).toEqual(['X-Proxy-Time', String(Math.floor(at / 1000))]);
    expect(verifies(renamed, out.rawHeaders, at)).toBe(true);
  });
});

describe('a late Standard Webhooks message', () => {
  const key = Buffer.from('0123456789abcdef0123456789abcdef');
  const s = signing({ scheme: 'standard_webhooks', secret: `whsec_${key.toString('base64')}` });
  const signedAt = secondsAgo(3600);
  const arrived: [string, string][] = [
    ['webhook-id', 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W'],
    ['webhook-timestamp', String(signedAt)],
    ['webhook-signature', signStandardWebhook(s.secret!, { id: 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', timestamp: signedAt, body: BODY })],
  ];

  it('verifies with the standardwebhooks package once re-signed (same id, new timestamp)', async () => {
    const headers = (lines: readonly [string, string][]) => Object.fromEntries(lines);
    expect(() => new Webhook(s.secret!).verify(BODY.toString('utf8'), headers(arrived))).toThrow();
    const at = nowMs();
    const out = await resign(s, message(arrived), at);
    expect(header(out.rawHeaders, 'webhook-id')).toBe('msg_2KWPBgLlAfxdpx2AI54pPJ85f4W');
    expect(new Webhook(s.secret!).verify(BODY.toString('utf8'), headers(out.rawHeaders))).toMatchObject({ id: 'evt_1' });
    expect(verifies(s, out.rawHeaders, at)).toBe(true);
  });

  it('without its webhook-id carries no signed timestamp to judge', () => {
    expect(lateSignature(s, message(arrived.slice(1)), nowMs(), AFTER)).toBeNull();
  });
});

describe('the generic schemes with a timestamp header', () => {
  const secret = 'generic-secret';
  const mac = (timestamp: string, encoding: 'hex' | 'base64') => createHmac('sha256', secret).update(`${timestamp}.`).update(BODY).digest(encoding);

  it('hex: the new digest keeps the sender’s sha256= prefix, and milliseconds stay milliseconds', async () => {
    const s = signing({ scheme: 'hex', secret, hmacHeaderName: 'X-Signature', timestampHeaderName: 'X-Timestamp' });
    const signedMs = String(Date.now() - 600_000);
    const arrived: [string, string][] = [
      ['X-Timestamp', signedMs],
      ['X-Signature', `sha256=${mac(signedMs, 'hex')}`],
    ];
    const at = nowMs();
    const out = await resign(s, message(arrived), at);
    expect(out.rawHeaders).toEqual([
      ['X-Timestamp', String(at)],
      ['X-Signature', `sha256=${mac(String(at), 'hex')}`],
    ]);
    expect(verifies(s, out.rawHeaders, at)).toBe(true);
  });

  it('base64, without a prefix', async () => {
    const s = signing({ scheme: 'base64', secret, hmacHeaderName: 'X-Signature', timestampHeaderName: 'X-Timestamp' });
    const signed = String(secondsAgo(600));
    const out = await resign(s, message([['x-timestamp', signed], ['x-signature', mac(signed, 'base64')]]));
    const timestamp = header(out.rawHeaders, 'x-timestamp')!;
    expect(header(out.rawHeaders, 'x-signature')).toBe(mac(timestamp, 'base64'));
  });

  it('a generic scheme without a timestamp header signs none, nor does GitHub: nothing is late', () => {
    const lines: [string, string][] = [['X-Signature', 'sha256=00'], ['X-Hub-Signature-256', 'sha256=00']];
    expect(lateSignature(signing({ scheme: 'hex', secret, hmacHeaderName: 'X-Signature' }), message(lines), nowMs(), AFTER)).toBeNull();
    expect(lateSignature(signing({ scheme: 'github', secret }), message(lines), nowMs(), AFTER)).toBeNull();
  });
});

describe('a body that cannot be read', () => {
  it('leaves the message as it arrived, still judged late', async () => {
    const s = signing();
    const signedAt = secondsAgo(600);
    const m = message([['Stripe-Signature', signStripe(s.secret!, BODY, signedAt)]]);
    const at = nowMs();
    const out = await outgoingSignature(lateSignature(s, m, at, AFTER), m, null, at);
    expect(out.resigned).toBe(false);
    expect(out.rawHeaders).toEqual(m.raw_headers);
    expect(out.late?.signedAt).toBe(signedAt);
  });
});
