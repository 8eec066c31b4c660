/**
 * The signature of an edited replay's copy (docs/api.md, Edited replays). A copy's body and headers
 * are not what the sender signed, so the sender's signature lines cannot go with it: without
 * `resign` every signature header hookrelay knows is dropped (the providers' and the endpoint's
 * own); with it the server signs the copy with the endpoint's stored secret, in the endpoint's
 * scheme, exactly as the sender would have, with the time the copy is made.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { SAMPLE_SIGNATURE, timestampedSigner, type Signer } from '@hookrelay/shared';
import type { SenderSigning } from './resign.js';
import { HMAC_PRESET_HEADERS } from './verify.js';

/**
 * Every provider's signature header (lowercase), GitHub's SHA-1 `x-hub-signature` besides its
 * SHA-256 one included; the timestamps and ids they cover are not signatures and stay.
 */
const PROVIDER_SIGNATURE_HEADERS: ReadonlySet<string> = new Set([
  ...Object.values(HMAC_PRESET_HEADERS).flatMap((preset) => (preset.signature === null ? [] : [preset.signature])),
  ...Object.values(SAMPLE_SIGNATURE).map((sample) => sample.header),
  'x-hub-signature',
]);

/** Where the endpoint's scheme puts its signature, its timestamp and the id it covers (lowercase names). */
interface CopyLayout {
  signature: string;
  timestamp: string | null;
  id: string | null;
}

/** The endpoint's layout; null when its scheme names no signature header (`hex` / `base64` without `hmac_header_name`). */
function layoutOf(signing: SenderSigning): CopyLayout | null {
  const preset = HMAC_PRESET_HEADERS[signing.scheme];
  const signature = signing.hmacHeaderName ? signing.hmacHeaderName.toLowerCase() : preset.signature;
  if (signature === null) return null;
  const timestamp = signing.scheme === 'stripe' || signing.scheme === 'github' ? null : (signing.timestampHeaderName?.toLowerCase() ?? preset.timestamp);
  return { signature, timestamp, id: preset.id };
}

/**
 * The lines without their signatures (the providers' and the endpoint's own); `keepOwn` keeps the
 * endpoint's own signature line, which signing the copy then replaces in its place.
 */
export function dropSignatures(lines: readonly [string, string][], signing: SenderSigning, { keepOwn }: { keepOwn: boolean }): [string, string][] {
  const own = layoutOf(signing)?.signature ?? null;
  return lines.filter(([name]) => {
    const lower = name.toLowerCase();
    if (lower === own) return keepOwn;
    return !PROVIDER_SIGNATURE_HEADERS.has(lower);
  });
}

/** The value of the only line named `name` (lowercase); null when there is none or several. */
function single(lines: readonly [string, string][], name: string): string | null {
  const values = lines.filter(([n]) => n.toLowerCase() === name).map(([, value]) => value);
  return values.length === 1 ? values[0]! : null;
}

/**
 * `name` set to `value`: in the place of its first line (whose spelling stays), its other lines
 * dropped; appended when there is none.
 */
export function setHeader(lines: readonly [string, string][], name: string, value: string): [string, string][] {
  const lower = name.toLowerCase();
  const out: [string, string][] = [];
  let placed = false;
  for (const [n, v] of lines) {
    if (n.toLowerCase() !== lower) out.push([n, v]);
    else if (!placed) {
      out.push([n, value]);
      placed = true;
    }
  }
  if (!placed) out.push([name, value]);
  return out;
}

/** Why the copy cannot be signed for this endpoint, or null when it can. */
export function copySigningProblem(signing: SenderSigning): string | null {
  if (signing.secret === null) return 'the endpoint holds no HMAC secret to sign the copy with: set hmac_secret on it';
  if (layoutOf(signing) === null) return `the endpoint's hmac_scheme ${signing.scheme} names no signature header to sign the copy in: set hmac_header_name on it`;
  return null;
}

/** A signing under way: the copy's body goes through `update`, in pieces or whole, then `headers()` once. */
export interface CopySigning {
  /**
   * The lines as `headers()` will name them, the new values not known yet: what the copy's event
   * type is read from while its body goes through `update`.
   */
  preview: [string, string][];
  update(piece: Uint8Array): void;
  /** The lines with the endpoint's signature (and its timestamp and id, where the scheme has them) set. */
  headers(): [string, string][];
}

/**
 * Starts signing a copy whose header lines are `lines` (its other signatures already dropped) with
 * the endpoint's secret at `nowMs`. Call only when `copySigningProblem` is null.
 */
export function startCopySigning(signing: SenderSigning, lines: readonly [string, string][], nowMs: number): CopySigning {
  const layout = layoutOf(signing)!;
  const secret = signing.secret!;
  const scheme = signing.scheme;
  // The generic schemes may sign milliseconds; the copy writes what the original's sender wrote.
  const previous = layout.timestamp === null ? null : single(lines, layout.timestamp);
  const timestamp = previous !== null && /^\s*\d{13,16}\s*$/u.test(previous) ? String(Math.floor(nowMs)) : String(Math.floor(nowMs / 1000));
  // Standard Webhooks signs the webhook's id: the original's, or a new one when it had none.
  const id = layout.id === null ? null : (single(lines, layout.id) ?? `msg_${randomBytes(12).toString('hex')}`);
  // The generic schemes take a `sha256=` before the digest or none: the app gets what its sender sends.
  const prefix = /^\s*(sha256=)/iu.exec(single(lines, layout.signature) ?? '')?.[1] ?? '';
  let signer: Signer;
  if (scheme === 'github') {
    const mac = createHmac('sha256', secret);
    signer = { update: (piece) => (mac.update(piece), signer), signature: () => `sha256=${mac.digest('hex')}` };
  } else if ((scheme === 'hex' || scheme === 'base64') && layout.timestamp === null) {
    const mac = createHmac('sha256', secret);
    signer = { update: (piece) => (mac.update(piece), signer), signature: () => prefix + mac.digest(scheme) };
  } else {
    const timed = timestampedSigner(scheme, secret, { timestamp, ...(id === null ? {} : { id }) });
    signer = scheme === 'hex' || scheme === 'base64' ? { update: (piece) => (timed.update(piece), signer), signature: () => prefix + timed.signature() } : timed;
  }
  const withLines = (signature: string): [string, string][] => {
    let out = [...lines];
    if (layout.id !== null && id !== null) out = setHeader(out, layout.id, id);
    if (layout.timestamp !== null) out = setHeader(out, layout.timestamp, timestamp);
    return setHeader(out, layout.signature, signature);
  };
  return {
    preview: withLines(single(lines, layout.signature) ?? ''),
    update: (piece) => void signer.update(piece),
    headers: () => withLines(signer.signature()),
  };
}
