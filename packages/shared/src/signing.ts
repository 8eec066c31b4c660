import { createHmac, randomBytes } from 'node:crypto';

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

/** One `v1,<base64>` signature: the HMAC of `{id}.{timestamp}.` followed by the body. */
export function signStandardWebhook(secret: string, { id, timestamp, body }: SignInput): string {
  const mac = createHmac('sha256', signingKeyBytes(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64');
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

/**
 * The same headers for a body read in pieces (a stored body too large to hold whole): one pass
 * over `body`, every secret's HMAC fed each piece as it comes.
 */
export async function standardWebhookHeadersOfStream(
  secrets: readonly string[],
  input: Omit<SignInput, 'body'>,
  body: AsyncIterable<Uint8Array>,
): Promise<Record<string, string>> {
  const macs = secrets.map((secret) => createHmac('sha256', signingKeyBytes(secret)).update(`${input.id}.${input.timestamp}.`));
  for await (const piece of body) for (const mac of macs) mac.update(piece);
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': macs.map((mac) => `v1,${mac.digest('base64')}`).join(' '),
  };
}

// ---------------------------------------------------------------------------------------------
// Provider signatures, as each provider computes them (sample events: `hookrelay trigger` and the
// server's sample route). The HMAC key is the secret's UTF-8 bytes, `whsec_…` prefix and all for
// Stripe, as those providers do; Standard Webhooks is above.

/** Strings are hashed as UTF-8, the key as well. */
function hmacSha256(secret: string, ...parts: (string | Uint8Array)[]): Buffer {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
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
