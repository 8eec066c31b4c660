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
  return timestampedSignature('standard_webhooks', secret, { id, timestamp: String(timestamp) }, body);
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
  const signers = secrets.map((secret) => timestampedSigner('standard_webhooks', secret, { id: input.id, timestamp: String(input.timestamp) }));
  for await (const piece of body) for (const signer of signers) signer.update(piece);
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': signers.map((signer) => signer.signature()).join(' '),
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
  return timestampedSignature('stripe', secret, { timestamp: String(timestamp) }, body);
}

/** Slack `X-Slack-Signature`: `v0=<hex HMAC of "v0:timestamp:body">` (with `X-Slack-Request-Timestamp`). */
export function signSlack(secret: string, body: Uint8Array, timestamp: number): string {
  return timestampedSignature('slack', secret, { timestamp: String(timestamp) }, body);
}

/** Shopify `X-Shopify-Hmac-Sha256`: base64 HMAC of the body. */
export function signShopify(secret: string, body: Uint8Array): string {
  return hmacSha256(secret, body).toString('base64');
}

// ---------------------------------------------------------------------------------------------
// Signatures over a timestamp: the one implementation behind the providers' signatures above,
// Standard Webhooks' and the server's re-signing of late deliveries (docs/api.md, Late deliveries
// re-signed).

/**
 * The formats whose signature covers a timestamp: the providers' (`stripe`, `slack`,
 * `standard_webhooks`) and the generic `hex` / `base64` over `{timestamp}.{body}`.
 */
export const TIMESTAMPED_SCHEMES = ['stripe', 'slack', 'standard_webhooks', 'hex', 'base64'] as const;
export type TimestampedScheme = (typeof TIMESTAMPED_SCHEMES)[number];

export interface TimestampedInput {
  /** The timestamp as its header carries it: the signed content holds this text. */
  timestamp: string;
  /** Standard Webhooks' `webhook-id`, which its signature covers (ignored by the other formats). */
  id?: string;
}

/** One signature computed over a body fed in pieces: `update` with each, then `signature` once. */
export interface Signer {
  update(piece: Uint8Array | string): Signer;
  signature(): string;
}

/**
 * The signer of `scheme` under `secret`, the content before the body already in: Stripe
 * `t=<ts>,v1=<hex of "ts.body">`, Slack `v0=<hex of "v0:ts:body">`, Standard Webhooks
 * `v1,<base64 of "id.ts.body">` keyed by the base64-decoded secret, `hex` / `base64` the bare digest
 * of `ts.body`. Every other key is the secret's UTF-8 bytes (Stripe's `whsec_…` prefix and all).
 */
export function timestampedSigner(scheme: TimestampedScheme, secret: string, { timestamp, id = '' }: TimestampedInput): Signer {
  const [key, signed, format] = ((): [Buffer | string, string, (digest: Buffer) => string] => {
    switch (scheme) {
      case 'stripe':
        return [secret, `${timestamp}.`, (digest) => `t=${timestamp},v1=${digest.toString('hex')}`];
      case 'slack':
        return [secret, `v0:${timestamp}:`, (digest) => `v0=${digest.toString('hex')}`];
      case 'standard_webhooks':
        return [signingKeyBytes(secret), `${id}.${timestamp}.`, (digest) => `v1,${digest.toString('base64')}`];
      case 'hex':
        return [secret, `${timestamp}.`, (digest) => digest.toString('hex')];
      case 'base64':
        return [secret, `${timestamp}.`, (digest) => digest.toString('base64')];
    }
  })();
  const mac = createHmac('sha256', key).update(signed);
  const signer: Signer = {
    update(piece) {
      mac.update(piece);
      return signer;
    },
    signature: () => format(mac.digest()),
  };
  return signer;
}

/** The signature of a body held whole (see `timestampedSigner`). */
export function timestampedSignature(scheme: TimestampedScheme, secret: string, input: TimestampedInput, body: Uint8Array | string): string {
  return timestampedSigner(scheme, secret, input).update(body).signature();
}
