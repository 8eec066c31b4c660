import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  generateSigningSecret,
  SIGNING_SECRET_PREFIX,
  signGithub,
  signingKeyBytes,
  signShopify,
  signSlack,
  signStandardWebhook,
  signStripe,
  standardWebhookHeaders,
  standardWebhookHeadersOfStream,
  timestampedSignature,
  timestampedSigner,
} from '../src/signing.js';

/** Signatures computed here from the providers' documented recipes, independently of the module. */
const KEY = Buffer.from('0123456789abcdef0123456789abcdef');
const SECRET = `whsec_${KEY.toString('base64')}`;
const BODY = '{"greeting":"héllo ✓"}';
const BODY_BYTES = Buffer.from(BODY, 'utf8');
const hmac = (key: string | Buffer, content: string | Buffer) => createHmac('sha256', key).update(content);

describe('Standard Webhooks signing', () => {
  const expected = `v1,${hmac(KEY, Buffer.concat([Buffer.from('msg_1.1700000000.'), BODY_BYTES])).digest('base64')}`;

  it('signs {id}.{timestamp}.{body} with the base64-decoded key, the body as bytes or as UTF-8 text', () => {
    expect(signStandardWebhook(SECRET, { id: 'msg_1', timestamp: 1_700_000_000, body: BODY_BYTES })).toBe(expected);
    expect(signStandardWebhook(SECRET, { id: 'msg_1', timestamp: 1_700_000_000, body: BODY })).toBe(expected);
    expect(signStandardWebhook(SECRET, { id: 'msg_1', timestamp: 1_700_000_000, body: new Uint8Array(BODY_BYTES) })).toBe(expected);
  });

  it('reads the key with or without the whsec_ prefix', () => {
    expect(signingKeyBytes(SECRET)).toEqual(KEY);
    expect(signingKeyBytes(KEY.toString('base64'))).toEqual(KEY);
    expect(signStandardWebhook(KEY.toString('base64'), { id: 'msg_1', timestamp: 1_700_000_000, body: BODY })).toBe(expected);
  });

  it('gives the three headers, one space-separated signature per secret of a rotation', () => {
    const other = `whsec_${Buffer.from('another key of thirty-two bytes!').toString('base64')}`;
    const input = { id: 'msg_1', timestamp: 1_700_000_000, body: BODY };
    expect(standardWebhookHeaders([SECRET, other], input)).toEqual({
      'webhook-id': 'msg_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': `${expected} ${signStandardWebhook(other, input)}`,
    });
    expect(standardWebhookHeaders([SECRET], input)['webhook-signature']).toBe(expected);
  });

  it('gives the same headers from a body read in pieces, one pass for every secret', async () => {
    const other = `whsec_${Buffer.from('another key of thirty-two bytes!').toString('base64')}`;
    const input = { id: 'msg_1', timestamp: 1_700_000_000 };
    let passes = 0;
    async function* pieces() {
      passes++;
      // Split inside a multi-byte character: the HMAC is over bytes.
      yield BODY_BYTES.subarray(0, 15);
      yield BODY_BYTES.subarray(15);
    }
    expect(await standardWebhookHeadersOfStream([SECRET, other], input, pieces())).toEqual(standardWebhookHeaders([SECRET, other], { ...input, body: BODY }));
    expect(passes).toBe(1);
    expect((await standardWebhookHeadersOfStream([SECRET], input, pieces()))['webhook-signature']).toBe(expected);
  });

  it('generates whsec_ and the base64 of 32 random bytes', () => {
    const secrets = [generateSigningSecret(), generateSigningSecret()];
    for (const secret of secrets) {
      expect(secret.startsWith(SIGNING_SECRET_PREFIX)).toBe(true);
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(signingKeyBytes(secret)).toHaveLength(32);
    }
    expect(secrets[0]).not.toBe(secrets[1]);
  });
});

describe('provider signatures', () => {
  // The key is the secret's UTF-8 bytes, prefix and all.
  const secret = 'whsec_prövider';
  const key = Buffer.from(secret, 'utf8');

  it('GitHub: sha256= and the hex HMAC of the body', () => {
    expect(signGithub(secret, BODY_BYTES)).toBe(`sha256=${hmac(key, BODY_BYTES).digest('hex')}`);
  });

  it('Stripe: t= and v1= the hex HMAC of "t.body"', () => {
    expect(signStripe(secret, BODY_BYTES, 1_700_000_000)).toBe(`t=1700000000,v1=${hmac(key, `1700000000.${BODY}`).digest('hex')}`);
  });

  it('Slack: v0= and the hex HMAC of "v0:timestamp:body"', () => {
    expect(signSlack(secret, BODY_BYTES, 1_700_000_000)).toBe(`v0=${hmac(key, `v0:1700000000:${BODY}`).digest('hex')}`);
  });

  it('Shopify: the base64 HMAC of the body', () => {
    expect(signShopify(secret, BODY_BYTES)).toBe(hmac(key, BODY_BYTES).digest('base64'));
  });
});

describe('signatures over a timestamp', () => {
  const secret = 'whsec_prövider';
  const key = Buffer.from(secret, 'utf8');

  it('use the header text of the timestamp as given, milliseconds included (hex, base64: the bare digest of "ts.body")', () => {
    expect(timestampedSignature('hex', secret, { timestamp: '1700000000123' }, BODY_BYTES)).toBe(hmac(key, `1700000000123.${BODY}`).digest('hex'));
    expect(timestampedSignature('base64', secret, { timestamp: '1700000000' }, BODY_BYTES)).toBe(hmac(key, `1700000000.${BODY}`).digest('base64'));
  });

  it('are the providers’ own: the same as signStripe, signSlack and signStandardWebhook', () => {
    expect(timestampedSignature('stripe', secret, { timestamp: '1700000000' }, BODY_BYTES)).toBe(signStripe(secret, BODY_BYTES, 1_700_000_000));
    expect(timestampedSignature('slack', secret, { timestamp: '1700000000' }, BODY_BYTES)).toBe(signSlack(secret, BODY_BYTES, 1_700_000_000));
    expect(timestampedSignature('standard_webhooks', SECRET, { timestamp: '1700000000', id: 'msg_1' }, BODY_BYTES)).toBe(
      signStandardWebhook(SECRET, { id: 'msg_1', timestamp: 1_700_000_000, body: BODY_BYTES }),
    );
  });

  it('come out the same from a body fed in pieces', () => {
    for (const scheme of ['stripe', 'slack', 'standard_webhooks', 'hex', 'base64'] as const) {
      const signer = timestampedSigner(scheme, SECRET, { timestamp: '1700000000', id: 'msg_1' });
      signer.update(BODY_BYTES.subarray(0, 15)).update(BODY_BYTES.subarray(15));
      expect(signer.signature(), scheme).toBe(timestampedSignature(scheme, SECRET, { timestamp: '1700000000', id: 'msg_1' }, BODY));
    }
  });
});
