/**
 * Late deliveries re-signed (docs/api.md, Late deliveries re-signed). A sender's signature that
 * covers a timestamp (Stripe's `t=`, Slack's `X-Slack-Request-Timestamp`, Standard Webhooks'
 * `webhook-timestamp`, a generic scheme's `timestamp_header_name`) goes stale: the receiving app's
 * own check refuses it a few minutes after it was made. A message delivered later than that (a
 * backlog, a held message, a replay) leaves with a fresh timestamp and a signature made now with
 * the endpoint's copy of the sender's secret; only those header lines change, the body never, and
 * the stored message keeps what arrived.
 *
 * Only a message whose signature the endpoint verified at ingest is re-signed: a signature of the
 * server's over one it never checked would let anyone who knows the ingest URL reach the app with
 * a valid signature.
 *
 * The header names are the verifier's (ingest/verify.ts): the preset's, or the endpoint's
 * `hmac_header_name` / `timestamp_header_name`. A late timestamp in a provider's own headers that
 * the endpoint has no secret for is reported (`resign_skipped`), so that the listener can say why
 * the app will refuse it.
 */
import { timestampedSigner, type HmacScheme, type ResignSkipped, type TimestampedScheme } from '@hookrelay/shared';
import type { SenderSigningRow } from '../db/inbound-endpoints.js';
import { HMAC_PRESET_HEADERS } from './verify.js';

/** An endpoint's settings as re-signing reads them, the secret opened. */
export interface SenderSigning {
  scheme: HmacScheme;
  /** The sender's secret; null when the endpoint holds none. */
  secret: string | null;
  hmacHeaderName: string | null;
  timestampHeaderName: string | null;
  resignLate: boolean;
}

/** An endpoint row's re-signing settings, with its secret opened by the caller. */
export function senderSigningOf(row: Omit<SenderSigningRow, 'hmac_secret_encrypted'>, secret: string | null): SenderSigning {
  return {
    scheme: row.hmac_scheme,
    secret,
    hmacHeaderName: row.hmac_header_name,
    timestampHeaderName: row.timestamp_header_name,
    resignLate: row.resign_late,
  };
}

/** What a message needs to be judged: its header lines as received, and the checks it passed at ingest. */
export interface SignedMessage {
  raw_headers: readonly (readonly [string, string])[];
  verified: readonly string[];
}

/** Where a signature over a timestamp travels (lowercase header names). */
interface Layout {
  scheme: TimestampedScheme;
  signature: string;
  /** Null for Stripe: its timestamp is the `t=` of the signature header. */
  timestamp: string | null;
  /** Standard Webhooks' `webhook-id`, which the signature covers. */
  id: string | null;
}

const providerLayout = (scheme: 'stripe' | 'slack' | 'standard_webhooks'): Layout => {
  const preset = HMAC_PRESET_HEADERS[scheme];
  return { scheme, signature: preset.signature!, timestamp: preset.timestamp, id: preset.id };
};

/** The providers' own layouts, for a message the endpoint's settings do not describe. */
const PROVIDER_LAYOUTS: readonly Layout[] = [providerLayout('stripe'), providerLayout('slack'), providerLayout('standard_webhooks')];

/** The layout the endpoint verifies by, when its scheme signs a timestamp; null otherwise (GitHub, a generic scheme without a timestamp header). */
function endpointLayout(signing: SenderSigning): Layout | null {
  const preset = HMAC_PRESET_HEADERS[signing.scheme] as (typeof HMAC_PRESET_HEADERS)[HmacScheme] | undefined;
  if (preset === undefined) return null;
  const signature = signing.hmacHeaderName ? signing.hmacHeaderName.toLowerCase() : preset.signature;
  const timestamp = signing.timestampHeaderName ? signing.timestampHeaderName.toLowerCase() : preset.timestamp;
  if (signature === null) return null;
  switch (signing.scheme) {
    case 'github':
      return null;
    case 'stripe':
      return { scheme: 'stripe', signature, timestamp: null, id: null };
    case 'slack':
    case 'standard_webhooks':
    case 'hex':
    case 'base64':
      return timestamp === null ? null : { scheme: signing.scheme, signature, timestamp, id: preset.id };
  }
}

/** The value of the one line named `name`; null when there is none or several (which one was signed is ambiguous). */
function single(rawHeaders: SignedMessage['raw_headers'], name: string): string | null {
  let found: string | null = null;
  for (const [n, v] of rawHeaders) {
    if (n.length !== name.length || n.toLowerCase() !== name) continue;
    if (found !== null) return null;
    found = v;
  }
  return found;
}

const SECONDS = /^\d{1,12}$/;
const SECONDS_OR_MILLIS = /^\d{1,16}$/;

/** A signed timestamp as found: its unix seconds, and whether the sender wrote milliseconds (generic schemes). */
interface SignedTime {
  seconds: number;
  millis: boolean;
}

/** The timestamp `layout` finds in the headers, read as the verifier reads it; null when it finds none. */
function signedTime(layout: Layout, rawHeaders: SignedMessage['raw_headers']): SignedTime | null {
  const signature = single(rawHeaders, layout.signature);
  if (signature === null) return null;
  if (layout.id !== null && !single(rawHeaders, layout.id)) return null;
  let text: string | null = null;
  if (layout.timestamp === null) {
    for (const item of signature.split(',')) {
      const eq = item.indexOf('=');
      if (eq === -1 || item.slice(0, eq).trim() !== 't') continue;
      const value = item.slice(eq + 1).trim();
      if (text !== null && text !== value) return null;
      text = value;
    }
  } else {
    text = single(rawHeaders, layout.timestamp)?.trim() ?? null;
  }
  const generic = layout.scheme === 'hex' || layout.scheme === 'base64';
  if (text === null || !(generic ? SECONDS_OR_MILLIS : SECONDS).test(text)) return null;
  const value = Number(text);
  return generic && value > 1e12 ? { seconds: value / 1000, millis: true } : { seconds: value, millis: false };
}

/** A late message that goes re-signed: what re-signing needs. */
export interface ResignPlan {
  layout: Layout;
  secret: string;
  millis: boolean;
}

/**
 * A message whose signed timestamp is more than the threshold old: `signedAt` (unix seconds), and
 * either `plan` (it goes re-signed) or `skipped` (why it goes as it arrived).
 */
export type LateSignature = { signedAt: number } & ({ plan: ResignPlan; skipped?: undefined } | { plan?: undefined; skipped: ResignSkipped });

/**
 * Whether `message`, sent at `nowMs`, is more than `afterSeconds` past its signed timestamp, and
 * if so whether it can be re-signed; null when it is not late or carries no signed timestamp that
 * the endpoint's settings or a provider's own headers describe. `signing` null: the endpoint is
 * unknown (gone): nothing is re-signed.
 */
export function lateSignature(signing: SenderSigning | null, message: SignedMessage, nowMs: number, afterSeconds: number): LateSignature | null {
  const own = signing === null ? null : endpointLayout(signing);
  const ownTime = own === null ? null : signedTime(own, message.raw_headers);
  if (ownTime !== null) {
    if (!(nowMs / 1000 - ownTime.seconds > afterSeconds)) return null;
    const signedAt = ownTime.seconds;
    if (!signing!.resignLate) return { signedAt, skipped: 'disabled' };
    if (signing!.secret === null) return { signedAt, skipped: 'no_secret' };
    if (!message.verified.includes('hmac')) return { signedAt, skipped: 'unverified' };
    return { signedAt, plan: { layout: own!, secret: signing!.secret, millis: ownTime.millis } };
  }
  for (const layout of PROVIDER_LAYOUTS) {
    const time = signedTime(layout, message.raw_headers);
    if (time === null) continue;
    if (!(nowMs / 1000 - time.seconds > afterSeconds)) return null;
    return { signedAt: time.seconds, skipped: signing?.resignLate === false ? 'disabled' : 'no_secret' };
  }
  return null;
}

/** The headers (lowercase) that re-signing by `plan` changes. */
export function resignedHeaderNames(plan: ResignPlan): string[] {
  return plan.layout.timestamp === null ? [plan.layout.signature] : [plan.layout.signature, plan.layout.timestamp];
}

/** A re-signing under way: the body goes through `update`, in pieces or whole, then `headers()` once. */
export interface Resigning {
  update(piece: Uint8Array): void;
  /** The message's header lines, in order and as named, with the new timestamp and signature. */
  headers(): [string, string][];
}

/** Starts re-signing `rawHeaders` by `plan` with the time `nowMs`. */
export function startResigning(plan: ResignPlan, rawHeaders: SignedMessage['raw_headers'], nowMs: number): Resigning {
  const { layout } = plan;
  const timestamp = plan.millis ? String(Math.floor(nowMs)) : String(Math.floor(nowMs / 1000));
  const id = layout.id === null ? undefined : (single(rawHeaders, layout.id) ?? undefined);
  const signer = timestampedSigner(layout.scheme, plan.secret, { timestamp, ...(id === undefined ? {} : { id }) });
  return {
    update: (piece) => void signer.update(piece),
    headers() {
      let signature = signer.signature();
      if (layout.scheme === 'hex' || layout.scheme === 'base64') {
        // The generic schemes take a `sha256=` before the digest or none: the app gets what its sender sends.
        const prefix = /^\s*(sha256=)/i.exec(single(rawHeaders, layout.signature) ?? '')?.[1];
        if (prefix !== undefined) signature = prefix + signature;
      }
      return rawHeaders.map(([name, value]): [string, string] => {
        const lower = name.toLowerCase();
        if (lower === layout.signature) return [name, signature];
        if (layout.timestamp !== null && lower === layout.timestamp) return [name, timestamp];
        return [name, value];
      });
    },
  };
}

/** A message's body as re-signing reads it: held whole, or read from its store in pieces. */
export type ResignBody = Uint8Array | (() => AsyncIterable<Uint8Array>);

/** What leaves for one delivery of a message: its header lines, and what re-signing made of them. */
export interface OutgoingSignature {
  rawHeaders: [string, string][];
  resigned: boolean;
  /** Set when the message is late (see lateSignature). */
  late: LateSignature | null;
}

/**
 * The header lines a delivery of `message` sends at `nowMs`, `late` being `lateSignature`'s
 * judgement of it then: re-signed when it is late and can be, else as received. `body` null: the
 * body cannot be read, so the message goes as it arrived.
 */
export async function outgoingSignature(late: LateSignature | null, message: SignedMessage, body: ResignBody | null, nowMs: number): Promise<OutgoingSignature> {
  const rawHeaders = message.raw_headers.map(([name, value]): [string, string] => [name, value]);
  if (late?.plan === undefined || body === null) return { rawHeaders, resigned: false, late };
  const resigning = startResigning(late.plan, rawHeaders, nowMs);
  if (typeof body === 'function') for await (const piece of body()) resigning.update(piece);
  else resigning.update(body);
  return { rawHeaders: resigning.headers(), resigned: true, late };
}
