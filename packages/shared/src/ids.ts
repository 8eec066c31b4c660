import { randomBytes, randomFillSync } from 'node:crypto';
import { V7Generator } from 'uuidv7';

export const ENDPOINT_ID_PATTERN = /^ep_[a-f0-9]{32}$/;
export const API_KEY_PATTERN = /^hr_[a-f0-9]{40}$/;
export const PORTAL_TOKEN_PATTERN = /^hrp_[a-f0-9]{40}$/;
/** What every portal token starts with: the API tells it from an API key by it. */
export const PORTAL_TOKEN_PREFIX = 'hrp_';
export const SECRET_TOKEN_PATTERN = /^[a-f0-9]{32}$/;
/** Any RFC 9562 UUID, lowercase or uppercase; version 7 is what the server issues. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const UUIDV7_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/** Outbound endpoint id: `ep_` + 32 lowercase hex. */
export function newEndpointId(): string {
  return `ep_${hex(16)}`;
}

/** Signing key id: `sk_` + 24 lowercase hex. */
export function newSigningKeyId(): string {
  return `sk_${hex(12)}`;
}

/** API key: `hr_` + 40 lowercase hex (docs/api.md, Keys, ids and secrets). */
export function newApiKey(): string {
  return `hr_${hex(20)}`;
}

/** Portal token: `hrp_` + 40 lowercase hex (docs/api.md, Portal links). */
export function newPortalToken(): string {
  return `${PORTAL_TOKEN_PREFIX}${hex(20)}`;
}

/** Per-endpoint ingest secret token: 32 lowercase hex. */
export function newSecretToken(): string {
  return hex(16);
}

/**
 * The random words of UUIDv7s, drawn from the CSPRNG 1,024 at a time. The library's own buffer holds
 * 8, so it called the CSPRNG every two or three ids: a server woken by each webhook (a request id
 * and a message id) paid the CSPRNG's costly first call after a sleep on most webhooks.
 */
class PooledRandom {
  private readonly words = new Uint32Array(1024);
  private next = this.words.length;

  nextUint32(): number {
    if (this.next === this.words.length) {
      randomFillSync(this.words);
      this.next = 0;
    }
    return this.words[this.next++]!;
  }
}

const uuidv7Generator = new V7Generator(new PooledRandom());

/** A time-ordered UUIDv7 for every other resource id. */
export function newUuidv7(): string {
  return uuidv7Generator.generate().toString();
}

export function isUuid(value: string): boolean {
  return UUID_PATTERN.test(value);
}

/**
 * The smallest UUIDv7 of a millisecond: timestamp bits set, random bits zero. A listen cursor built
 * from it starts at that point in time (`hookrelay listen --since 10m`; docs/cli.md, Order, cursor
 * and resume).
 */
export function uuidv7AtTime(time: Date | number): string {
  const ms = typeof time === 'number' ? time : time.getTime();
  if (!Number.isFinite(ms) || ms < 0 || ms > 0xffff_ffff_ffff) {
    throw new RangeError('time out of UUIDv7 range');
  }
  const h = Math.trunc(ms).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7000-8000-000000000000`;
}

/** The millisecond timestamp carried by a UUIDv7. */
export function uuidv7Time(id: string): number {
  return Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
}

/** The last `n` characters of a secret, shown as `key_hint`: enough to tell keys apart, too little to use. */
export function keyHint(secret: string, n = 4): string {
  return secret.slice(-n);
}
