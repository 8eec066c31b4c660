import * as crypto from 'node:crypto';

// `crypto.hash` (Node ≥ 20.12) hashes in one call. `createHash` builds a Hash object around the
// digest first. Most of that goes unseen in a loop, but a server or CLI woken by each webhook
// pays it cold, and the one-shot hash costs less cold than `createHash` (BENCHMARKS.md, Listen
// latency).
const oneShot: typeof crypto.hash | undefined = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/** SHA-256 of `data` (a string as UTF-8) in lowercase hex. */
export function sha256Hex(data: string | Uint8Array): string {
  return oneShot ? oneShot('sha256', data, 'hex') : crypto.createHash('sha256').update(data).digest('hex');
}
