import { newUuidv7 } from '@hookrelay/shared';

const COUNTER_BITS = 74n; // rand_a (12 bits) and rand_b (62 bits) of a UUIDv7
const COUNTER_MAX = (1n << COUNTER_BITS) - 1n;

function toHex(uuid: string): string {
  return uuid.replace(/-/g, '').toLowerCase();
}

function format(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The UUIDv7 right after `id` in the order of all UUIDv7s: the 74 bits after the millisecond count
 * as one counter (RFC 9562's monotonic random method), + 1, and only its overflow carries into the
 * millisecond. The database places ids by the same rule (sql/hookrelay_uuidv7_after.sql), which
 * test/db/ordered-id.test.ts holds equal to this one.
 */
export function nextUuidv7After(id: string): string {
  const value = BigInt(`0x${toHex(id)}`);
  let ms = value >> 80n;
  const randA = (value >> 64n) & 0xfffn;
  const randB = value & ((1n << 62n) - 1n);
  let counter = ((randA << 62n) | randB) + 1n;
  if (counter > COUNTER_MAX) {
    ms += 1n;
    counter = 0n;
  }
  const next = (ms << 80n) | (0x7n << 76n) | ((counter >> 62n) << 64n) | (0x2n << 62n) | (counter & ((1n << 62n) - 1n));
  return format(next.toString(16).padStart(32, '0'));
}

/**
 * A new UUIDv7 greater than `last`: a fresh one when the clock is past it, else the id right after
 * it, so ids of one endpoint only ever grow, even when clocks of two processes disagree
 * (docs/architecture.md, Ordering).
 */
export function nextOrderedId(last: string | null): string {
  const fresh = newUuidv7();
  if (last === null || toHex(fresh) > toHex(last)) return fresh;
  return nextUuidv7After(last);
}
