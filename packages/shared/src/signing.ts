import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks signing (docs/api.md, How a delivery is sent):
 * `webhook-signature: v1,<base64 HMAC-SHA256>` over `{id}.{timestamp}.{body}`; the secret is
 * `whsec_` + base64 of 32 random bytes and the HMAC key is those bytes. Deliveries verify with the
 * `standardwebhooks` npm package unchanged.
 */
export const SIGNING_SECRET_PREFIX = 'whsec_';

export function generateSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString('base64');
}

export function signingKeyBytes(secret: string): Buffer {
  const encoded = secret.startsWith(SIGNING_SECRET_PREFIX) ? secret.slice(SIGNING_SECRET_PREFIX.length) : secret;
  return Buffer.from(encoded, 'base64');
}

export interface SignInput {
  id: string;
  /** Unix seconds. */
  timestamp: number;
  body: Uint8Array | string;
}

function signedContent({ id, timestamp, body }: SignInput): Buffer {
  const bodyBytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
  return Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), bodyBytes]);
}

/** One `v1,<base64>` signature. */
export function signStandardWebhook(secret: string, input: SignInput): string {
  const mac = createHmac('sha256', signingKeyBytes(secret)).update(signedContent(input)).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-*` headers of a delivery; several secrets (a rotation) give space-separated signatures. */
export function standardWebhookHeaders(secrets: readonly string[], input: SignInput): Record<string, string> {
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': secrets.map((secret) => signStandardWebhook(secret, input)).join(' '),
  };
}

/** Constant-time check of a `webhook-signature` header (any of its space-separated `v1,` entries). */
export function verifyStandardWebhookSignature(secret: string, input: SignInput, header: string): boolean {
  const expected = Buffer.from(signStandardWebhook(secret, input).slice(3), 'base64');
  let matched = false;
  for (const part of header.split(' ')) {
    const [version, signature] = part.split(',', 2);
    if (version !== 'v1' || signature === undefined) continue;
    const given = Buffer.from(signature, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}

// ---------------------------------------------------------------------------------------------
// Provider signatures, as each provider computes them (sample events: `hookrelay trigger` and the
// server's sample route). The HMAC key is the secret's UTF-8 bytes, `whsec_…` prefix and all for
// Stripe, as those providers do; Standard Webhooks is above.

function hmacSha256(secret: string, ...parts: (string | Uint8Array)[]): Buffer {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  for (const part of parts) mac.update(typeof part === 'string' ? Buffer.from(part, 'utf8') : part);
  return mac.digest();
}

/** GitHub `X-Hub-Signature-256`: `sha256=<hex HMAC of the body>`. */
export function signGithub(secret: string, body: Uint8Array): string {
  return `sha256=${hmacSha256(secret, body).toString('hex')}`;
}

/** Stripe `Stripe-Signature`: `t=<unix s>,v1=<hex HMAC of "t.body">`. */
export function signStripe(secret: string, body: Uint8Array, timestamp: number): string {
  return `t=${timestamp},v1=${hmacSha256(secret, `${timestamp}.`, body).toString('hex')}`;
}

/** Slack `X-Slack-Signature`: `v0=<hex HMAC of "v0:timestamp:body">` (with `X-Slack-Request-Timestamp`). */
export function signSlack(secret: string, body: Uint8Array, timestamp: number): string {
  return `v0=${hmacSha256(secret, `v0:${timestamp}:`, body).toString('hex')}`;
}

/** Shopify `X-Shopify-Hmac-Sha256`: base64 HMAC of the body. */
export function signShopify(secret: string, body: Uint8Array): string {
  return hmacSha256(secret, body).toString('base64');
}
