import type { KeyObject } from 'node:crypto';
import type { InboundRequest, Verifier } from './verify.js';

/** An HMAC a verifier will compute over a request's body: its key and what precedes the body. */
export interface MacInput {
  key: KeyObject;
  prefix: string | null;
}

/**
 * The HMACs `verify` will ask of a request's body, found before the body arrives: the checks read
 * the key and the signed prefix from the settings and the headers alone, so a run over the headers
 * with a body that records what it is asked (and answers a digest no signature matches) names them.
 * The body can then stream to storage while those HMACs are computed over it.
 */
export function macInputs(verify: Verifier, request: Omit<InboundRequest, 'rawBody' | 'macOf'>): MacInput[] {
  const inputs: MacInput[] = [];
  const none = Buffer.alloc(32);
  verify({
    ...request,
    rawBody: Buffer.alloc(0),
    macOf: (key, prefix) => {
      inputs.push({ key, prefix });
      return none;
    },
  });
  return inputs;
}
