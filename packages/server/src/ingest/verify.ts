/**
 * Sender verification for inbound ingestion (docs/api.md, Inbound endpoints):
 * static token, HMAC signature in one of the `hmac_scheme` formats, timestamp tolerance and IP
 * allowlist. Every configured check must pass.
 *
 * `compileVerifier` does the per-endpoint work once (key decoding, CIDR parsing, header-name
 * lowercasing) so that the per-request function only reads headers, hashes and compares. The
 * returned function never throws: a throw would turn a bad request into a 500, so anything
 * unexpected is a failed check. It also fails closed on settings that cannot work (a check switched
 * on without its secret, a stored CIDR that no longer parses), rather than silently letting requests
 * through.
 *
 * Choices of our own, where the senders' formats leave room:
 * - Timestamps are unix seconds. For the generic `hex`/`base64` schemes a value above 1e12 is read
 *   as milliseconds (some senders use `Date.now()`; 1e12 s is the year 33658, so there is no
 *   ambiguity). The provider presets accept seconds only, as their providers send. The signed content
 *   always uses the header text exactly as received, so the reading never changes what is verified.
 * - Tolerance is symmetric: |now − timestamp| ≤ tolerance, so a timestamp from the future is as
 *   suspicious as a stale one (Stripe's own library only bounds the past; ours is stricter).
 * - The signature is checked before the tolerance: a `timestamp` failure then means "authentic but
 *   stale" (clock skew or a replay) and an `hmac` failure means "not signed with this secret", which
 *   is what an operator reading the log needs to tell apart.
 * - Secrets: `hex`, `base64`, `github`, `stripe` and `slack` use the secret's UTF-8 bytes as the HMAC
 *   key, as those providers do (Stripe's `whsec_…` included, prefix and all); `standard_webhooks`
 *   uses the base64-decoded bytes after an optional `whsec_` prefix.
 * - `hmacHeaderName` overrides any preset's signature header and `timestampHeaderName` the preset's
 *   timestamp header (slack, standard_webhooks), for senders behind a proxy that renames headers.
 *   `timestampHeaderName` is ignored for `github` (GitHub signs no timestamp, so checking an unsigned
 *   header would protect against nothing) and `stripe` (its timestamp is inside Stripe-Signature).
 * - Headers are looked up by lowercased name, as Node delivers them. A header repeated as an array
 *   of several values is refused as ambiguous.
 */
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { Camelized, HmacScheme, RejectionReason, VerificationCheck, VerificationSettings as EndpointVerificationSettings } from '@hookrelay/shared';
import { CidrList, parseAddress, parseCidr } from '../security/cidr.js';

/**
 * An endpoint's verification settings as the verifier takes them: the shared ones camelCased, with
 * the secrets the checks compare against.
 */
export type VerificationSettings = Camelized<EndpointVerificationSettings> & {
  /** SHA-256 hex of the token (the token itself is never stored). */
  staticTokenHash: string | null;
  /** Plaintext, decrypted by the caller. */
  hmacSecret: string | null;
};

export interface InboundRequest {
  /** The exact bytes received (empty when the body streamed to storage: `macOf` has its HMACs). */
  rawBody: Buffer;
  /**
   * The HMAC-SHA256 under `key` of `prefix` (latin1) and then the body, when the body was not kept
   * whole: computed as it arrived, for the inputs `macInputs` named before it did.
   */
  macOf?: (key: KeyObject, prefix: string | null) => Buffer;
  /** Node's IncomingHttpHeaders: names lowercased. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  query: URLSearchParams;
  /** May be IPv4-mapped IPv6, e.g. `::ffff:127.0.0.1`. */
  remoteAddress: string;
  now: Date;
}

/**
 * `reason` is for the server log only; the sender gets a bare 401. `code` and `detail` are what the
 * endpoint's owner sees of a refused request (docs/api.md, Refused requests): what to check, never
 * a secret or the signature that was expected.
 */
export type VerificationResult = { ok: true } | { ok: false; check: VerificationCheck; reason: string; code: RejectionReason; detail: string };

type Failure = Extract<VerificationResult, { ok: false }>;

export type Verifier = (request: InboundRequest) => VerificationResult;

export const DEFAULT_TIMESTAMP_TOLERANCE_SECONDS = 300;

export interface HmacPresetHeaders {
  /** Header carrying the signature; null when the endpoint must name it (`hmac_header_name`). */
  readonly signature: string | null;
  /**
   * Header carrying the signed timestamp; null when the scheme has none of its own (hex/base64 use
   * `timestamp_header_name`, Stripe carries `t=` inside its signature header, GitHub signs none).
   */
  readonly timestamp: string | null;
  /** Header carrying the message id that is part of the signed content (Standard Webhooks). */
  readonly id: string | null;
}

/** The header names each preset reads (lowercase, as Node delivers them). */
export const HMAC_PRESET_HEADERS: Readonly<Record<HmacScheme, HmacPresetHeaders>> = Object.freeze({
  hex: { signature: null, timestamp: null, id: null },
  base64: { signature: null, timestamp: null, id: null },
  github: { signature: 'x-hub-signature-256', timestamp: null, id: null },
  stripe: { signature: 'stripe-signature', timestamp: null, id: null },
  slack: { signature: 'x-slack-signature', timestamp: 'x-slack-request-timestamp', id: null },
  standard_webhooks: { signature: 'webhook-signature', timestamp: 'webhook-timestamp', id: 'webhook-id' },
});

// ---------------------------------------------------------------------------------------------
// CIDRs (security/cidr.ts)

/** Null when `cidr` is acceptable (bare addresses included), otherwise a message for INVALID_REQUEST. */
export function validateCidr(cidr: string): string | null {
  const parsed = parseCidr(cidr);
  return 'error' in parsed ? parsed.error : null;
}

// ---------------------------------------------------------------------------------------------
// Helpers used per request

const OK: VerificationResult = Object.freeze({ ok: true });

function fail(check: VerificationCheck, reason: string, code: RejectionReason, detail: string): Failure {
  return { ok: false, check, reason, code, detail };
}

/** Undefined when absent; null when repeated (ambiguous, so refused). */
function header(request: InboundRequest, name: string): string | undefined | null {
  const value = request.headers[name];
  if (value === undefined || typeof value === 'string') return value;
  if (value.length === 1) return value[0];
  return value.length === 0 ? undefined : null;
}

const HEX_DIGEST = /^[0-9a-fA-F]{64}$/;
/** 32 bytes in base64: 43 characters and one `=`; either alphabet, padding optional. */
const BASE64_DIGEST = /^[A-Za-z0-9+/_-]{43}=?$/;
const SECONDS = /^\d{1,12}$/;
const SECONDS_OR_MILLIS = /^\d{1,16}$/;

function hexDigest(text: string): Buffer | null {
  return HEX_DIGEST.test(text) ? Buffer.from(text, 'hex') : null;
}

/** 43 characters of either alphabet always decode to 32 bytes (the last two bits are dropped). */
function base64Digest(text: string): Buffer | null {
  return BASE64_DIGEST.test(text) ? Buffer.from(text, 'base64') : null;
}

/**
 * Both sides are 32-byte digests (the patterns above admit nothing else), so timingSafeEqual's
 * equal-length rule always holds.
 */
function digestEquals(expected: Buffer, given: Buffer | null): boolean {
  return given !== null && timingSafeEqual(expected, given);
}

/**
 * HMAC-SHA256 of `prefix` followed by the body, streamed so the body is never copied. The prefix
 * holds header text; Node decodes header bytes as latin1, so encoding it back as latin1 gives the
 * exact bytes the sender signed.
 */
function mac(key: KeyObject, prefix: string | null, request: InboundRequest): Buffer {
  if (request.macOf !== undefined) return request.macOf(key, prefix);
  const hmac = createHmac('sha256', key);
  if (prefix !== null) hmac.update(prefix, 'latin1');
  return hmac.update(request.rawBody).digest();
}


/** `value` without `prefix` (matched case-insensitively), or null when it does not start with it. */
function withoutPrefix(value: string, prefix: string): string | null {
  return value.slice(0, prefix.length).toLowerCase() === prefix ? value.slice(prefix.length) : null;
}

// ---------------------------------------------------------------------------------------------
// Timestamps

interface TimestampRule {
  toleranceSeconds: number;
  /** Whether values above 1e12 are read as milliseconds (generic schemes only). */
  allowMillis: boolean;
}

/** Seconds since the epoch, or null when the text is not a plain integer. */
function parseTimestamp(text: string, rule: TimestampRule): number | null {
  if (!(rule.allowMillis ? SECONDS_OR_MILLIS : SECONDS).test(text)) return null;
  const value = Number(text);
  return rule.allowMillis && value > 1e12 ? value / 1000 : value;
}

function checkTolerance(seconds: number, now: Date, rule: TimestampRule): Failure | null {
  const skew = Math.abs(now.getTime() / 1000 - seconds);
  // Written so that NaN (an invalid `now`) fails rather than passes.
  if (!(skew <= rule.toleranceSeconds)) {
    const skewText = Number.isFinite(skew) ? Math.round(skew) : '?';
    return fail(
      'timestamp',
      `timestamp outside tolerance (${skewText} s)`,
      'timestamp_out_of_tolerance',
      `the signature is valid, but its timestamp (${seconds}) is ${skewText} s away from the server's clock, beyond the endpoint's tolerance of ${rule.toleranceSeconds} s: check the sender's clock and the server's, or whether this request is an old one sent again`,
    );
  }
  return null;
}

/** Reads and parses a timestamp header; a Failure when missing or malformed. */
function readTimestamp(
  request: InboundRequest,
  name: string,
  rule: TimestampRule,
): { text: string; seconds: number } | Failure {
  const text = header(request, name);
  if (text === undefined || text === '') {
    return fail('timestamp', `missing timestamp header ${name}`, 'timestamp_missing', `no ${name} header: the signature covers the timestamp sent in it, so it cannot be checked without it; check that the sender sends it and that no proxy drops it`);
  }
  if (text === null) {
    return fail('timestamp', `repeated timestamp header ${name}`, 'timestamp_malformed', `the ${name} header is sent more than once, so which timestamp was signed is ambiguous`);
  }
  const seconds = parseTimestamp(text.trim(), rule);
  if (seconds === null) {
    return fail(
      'timestamp',
      `malformed timestamp header ${name}`,
      'timestamp_malformed',
      `the ${name} header (${JSON.stringify(text.trim().slice(0, 40))}) is not a unix time in seconds${rule.allowMillis ? ' or milliseconds' : ''}`,
    );
  }
  return { text: text.trim(), seconds };
}

function isFailure(value: object): value is Failure {
  return 'ok' in value;
}

// ---------------------------------------------------------------------------------------------
// HMAC keys

const WHSEC_PREFIX = 'whsec_';

/** The HMAC key for `secret` under `scheme`, or why there is none. */
function hmacKeyBytes(scheme: HmacScheme, secret: string): Buffer | string {
  if (typeof secret !== 'string' || secret === '') return 'the secret is empty';
  if (scheme !== 'standard_webhooks') return Buffer.from(secret);
  const encoded = secret.startsWith(WHSEC_PREFIX) ? secret.slice(WHSEC_PREFIX.length) : secret;
  // Buffer.from skips characters outside the alphabet, so a typo would silently become another key.
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return 'the secret must be whsec_ followed by base64';
  const bytes = Buffer.from(encoded, 'base64');
  return bytes.length === 0 ? 'the secret must be whsec_ followed by base64' : bytes;
}

/**
 * Null when `secret` can key `scheme`, otherwise a message for INVALID_REQUEST: only
 * `standard_webhooks` constrains it (whsec_ + base64). Lets a write refuse a secret that would
 * otherwise make every request fail verification.
 */
export function validateHmacSecret(scheme: HmacScheme, secret: string): string | null {
  const bytes = hmacKeyBytes(scheme, secret);
  return typeof bytes === 'string' ? bytes : null;
}

// ---------------------------------------------------------------------------------------------
// Checks

/** A compiled check: null when it passes. */
type Check = (request: InboundRequest) => Failure | null;

interface NamedCheck {
  readonly name: VerificationCheck;
  readonly run: Check;
}

function misconfigured(check: VerificationCheck, reason: string): Check {
  const failure = fail(
    check,
    `${check} check misconfigured: ${reason}`,
    'verification_misconfigured',
    `the endpoint's ${check} check cannot work as configured (${reason}): every request is refused until the endpoint's settings are fixed`,
  );
  return () => failure;
}

function compileStaticToken(settings: VerificationSettings): Check {
  const headerName = settings.staticTokenHeaderName ? settings.staticTokenHeaderName.toLowerCase() : null;
  const queryParam = settings.staticTokenQueryParam || null;
  if (headerName === null && queryParam === null) return misconfigured('static_token', 'no header or query parameter');
  const hash = settings.staticTokenHash;
  if (typeof hash !== 'string' || !HEX_DIGEST.test(hash)) return misconfigured('static_token', 'no valid token hash stored');
  const expected = Buffer.from(hash, 'hex');
  const where = [headerName === null ? null : `the ${headerName} header`, queryParam === null ? null : `the ?${queryParam}= query parameter`]
    .filter((w) => w !== null)
    .join(' or ');

  // Node decodes header bytes as latin1 and URLSearchParams decodes percent-escapes as UTF-8, so
  // these encodings give back the bytes the sender sent (the UTF-8 of a non-ASCII token) in both places.
  const matches = (provided: string, encoding: 'latin1' | 'utf8'): boolean =>
    timingSafeEqual(createHash('sha256').update(provided, encoding).digest(), expected);

  return (request) => {
    let present = false;
    if (headerName !== null) {
      const value = header(request, headerName);
      if (typeof value === 'string' && value !== '') {
        present = true;
        if (matches(value, 'latin1')) return null;
      }
    }
    if (queryParam !== null) {
      const value = request.query.get(queryParam);
      if (value !== null && value !== '') {
        present = true;
        if (matches(value, 'utf8')) return null;
      }
    }
    return present
      ? fail('static_token', 'static token mismatch', 'token_mismatch', `the static token sent in ${where} does not match the endpoint's: check the token configured at the sender`)
      : fail('static_token', 'missing static token', 'token_missing', `no static token: the endpoint expects it in ${where}; check the sender's configuration`);
  };
}

function compileHmac(settings: VerificationSettings): Check {
  const scheme = settings.hmacScheme;
  const preset = HMAC_PRESET_HEADERS[scheme];
  if (preset === undefined) return misconfigured('hmac', `unknown hmac scheme ${String(scheme)}`);
  const secret = settings.hmacSecret;
  if (typeof secret !== 'string' || secret === '') return misconfigured('hmac', 'no secret');

  const signatureHeader = settings.hmacHeaderName ? settings.hmacHeaderName.toLowerCase() : preset.signature;
  if (signatureHeader === null) return misconfigured('hmac', `hmac_header_name is required for scheme ${scheme}`);
  const configuredTimestampHeader = settings.timestampHeaderName ? settings.timestampHeaderName.toLowerCase() : null;
  const tolerance = settings.timestampToleranceSeconds;
  const toleranceSeconds = Number.isFinite(tolerance) && tolerance > 0 ? tolerance : DEFAULT_TIMESTAMP_TOLERANCE_SECONDS;
  const presetRule: TimestampRule = { toleranceSeconds, allowMillis: false };

  const keyBytes = hmacKeyBytes(scheme, secret);
  if (typeof keyBytes === 'string') return misconfigured('hmac', keyBytes);
  const key = createSecretKey(keyBytes);
  const malformed = (reason: string, form: string): Failure =>
    fail(
      'hmac',
      reason,
      'signature_malformed',
      `the ${signatureHeader} header is present but is not a ${scheme} signature (expected ${form}): check that the endpoint's hmac_scheme is the one the sender uses`,
    );
  const mismatch = (signed: string): Failure =>
    fail(
      'hmac',
      'hmac signature mismatch',
      'signature_mismatch',
      `the ${signatureHeader} header does not match the HMAC-SHA256 of ${signed} under the endpoint's secret (hmac_scheme ${scheme}): check that the sender's signing secret is the endpoint's, and that nothing between them rewrites the body`,
    );

  /** Reads the signature header; a Failure when missing or repeated. */
  const signatureText = (request: InboundRequest): string | Failure => {
    const value = header(request, signatureHeader);
    if (value === undefined || value === '') {
      return fail(
        'hmac',
        `missing signature header ${signatureHeader}`,
        'signature_missing',
        `no ${signatureHeader} header: the endpoint checks a ${scheme} HMAC signature sent in it; check that the sender signs its requests (a secret is set there) and that no proxy drops the header`,
      );
    }
    if (value === null) {
      return fail('hmac', `repeated signature header ${signatureHeader}`, 'signature_malformed', `the ${signatureHeader} header is sent more than once, so which signature to check is ambiguous`);
    }
    return value.trim();
  };

  switch (scheme) {
    case 'hex':
    case 'base64': {
      const decode = scheme === 'hex' ? hexDigest : base64Digest;
      const rule: TimestampRule = { toleranceSeconds, allowMillis: true };
      return (request) => {
        const text = signatureText(request);
        if (typeof text !== 'string') return text;
        const given = decode(withoutPrefix(text, 'sha256=') ?? text);
        if (given === null) {
          return malformed(`malformed signature header ${signatureHeader}`, scheme === 'hex' ? '64 hex digits, optionally after sha256=' : 'a base64 SHA-256 digest, optionally after sha256=');
        }
        if (configuredTimestampHeader === null) {
          return digestEquals(mac(key, null, request), given) ? null : mismatch('the body');
        }
        const timestamp = readTimestamp(request, configuredTimestampHeader, rule);
        if (isFailure(timestamp)) return timestamp;
        if (!digestEquals(mac(key, `${timestamp.text}.`, request), given)) {
          return mismatch(`the ${configuredTimestampHeader} value, ".", and the body`);
        }
        return checkTolerance(timestamp.seconds, request.now, rule);
      };
    }

    case 'github':
      return (request) => {
        const text = signatureText(request);
        if (typeof text !== 'string') return text;
        const given = hexDigest(withoutPrefix(text, 'sha256=') ?? '');
        if (given === null) return malformed(`malformed signature header ${signatureHeader} (expected sha256=<hex>)`, 'sha256= followed by 64 hex digits');
        return digestEquals(mac(key, null, request), given) ? null : mismatch('the body');
      };

    case 'stripe':
      return (request) => {
        const text = signatureText(request);
        if (typeof text !== 'string') return text;
        let timestampText: string | null = null;
        const signatures: string[] = [];
        for (const item of text.split(',')) {
          const eq = item.indexOf('=');
          if (eq === -1) continue;
          const name = item.slice(0, eq).trim();
          const value = item.slice(eq + 1).trim();
          if (name === 't') {
            // Two different `t=` would make "which one was signed" ambiguous.
            if (timestampText !== null && timestampText !== value) {
              return fail('timestamp', `malformed signature header ${signatureHeader} (several timestamps)`, 'timestamp_malformed', `the ${signatureHeader} header holds two different t= timestamps, so which one was signed is ambiguous`);
            }
            timestampText = value;
          } else if (name === 'v1') {
            signatures.push(value);
          }
        }
        if (timestampText === null) {
          return fail('timestamp', `malformed signature header ${signatureHeader} (no t=)`, 'timestamp_missing', `the ${signatureHeader} header has no t= timestamp, which Stripe signatures cover`);
        }
        if (signatures.length === 0) return malformed(`malformed signature header ${signatureHeader} (no v1=)`, 't=<timestamp>,v1=<64 hex digits>');
        const seconds = parseTimestamp(timestampText, presetRule);
        if (seconds === null) {
          return fail('timestamp', `malformed signature header ${signatureHeader} (bad t=)`, 'timestamp_malformed', `the t= value of the ${signatureHeader} header is not a unix time in seconds`);
        }
        const expected = mac(key, `${timestampText}.`, request);
        // No early exit: every candidate is compared, so timing does not say which one matched.
        let matched = false;
        for (const signature of signatures) {
          if (digestEquals(expected, hexDigest(signature))) matched = true;
        }
        if (!matched) return mismatch('the t= timestamp, ".", and the body');
        return checkTolerance(seconds, request.now, presetRule);
      };

    case 'slack': {
      const timestampHeader = configuredTimestampHeader ?? (preset.timestamp as string);
      return (request) => {
        const text = signatureText(request);
        if (typeof text !== 'string') return text;
        const given = hexDigest(withoutPrefix(text, 'v0=') ?? '');
        if (given === null) return malformed(`malformed signature header ${signatureHeader} (expected v0=<hex>)`, 'v0= followed by 64 hex digits');
        const timestamp = readTimestamp(request, timestampHeader, presetRule);
        if (isFailure(timestamp)) return timestamp;
        if (!digestEquals(mac(key, `v0:${timestamp.text}:`, request), given)) {
          return mismatch(`"v0:", the ${timestampHeader} value, ":", and the body`);
        }
        return checkTolerance(timestamp.seconds, request.now, presetRule);
      };
    }

    case 'standard_webhooks': {
      const timestampHeader = configuredTimestampHeader ?? (preset.timestamp as string);
      const idHeader = preset.id as string;
      return (request) => {
        const text = signatureText(request);
        if (typeof text !== 'string') return text;
        const id = header(request, idHeader);
        if (id === undefined || id === '') {
          return fail('hmac', `missing id header ${idHeader}`, 'signature_missing', `no ${idHeader} header: Standard Webhooks signatures cover it, so the signature cannot be checked without it`);
        }
        if (id === null) return fail('hmac', `repeated id header ${idHeader}`, 'signature_malformed', `the ${idHeader} header is sent more than once, so which id was signed is ambiguous`);
        const timestamp = readTimestamp(request, timestampHeader, presetRule);
        if (isFailure(timestamp)) return timestamp;
        const expected = mac(key, `${id}.${timestamp.text}.`, request);
        let matched = false;
        let sawV1 = false;
        for (const part of text.split(' ')) {
          const comma = part.indexOf(',');
          // Other versions (v1a: asymmetric) are not ours to check; skip them as the spec says.
          if (comma === -1 || part.slice(0, comma) !== 'v1') continue;
          sawV1 = true;
          if (digestEquals(expected, base64Digest(part.slice(comma + 1)))) matched = true;
        }
        if (!sawV1) return malformed(`malformed signature header ${signatureHeader} (no v1,<base64>)`, 'v1,<base64>, several separated by spaces');
        if (!matched) return mismatch(`the ${idHeader} value, the ${timestampHeader} value and the body, joined by "."`);
        return checkTolerance(timestamp.seconds, request.now, presetRule);
      };
    }
  }
}

function compileIpAllowlist(settings: VerificationSettings): Check {
  // A stored block that no longer parses can only narrow the list, so it is dropped, not fatal.
  const allowed = CidrList.compile(settings.allowedCidrs ?? []);
  if (allowed.size === 0) return misconfigured('ip_allowlist', 'no valid CIDR block');
  const listed = (settings.allowedCidrs ?? []).filter((cidr) => typeof cidr === 'string');
  const allowlistText = listed.length <= 5 ? listed.join(', ') : `${listed.slice(0, 5).join(', ')} and ${listed.length - 5} more`;

  return (request) => {
    const address = parseAddress(request.remoteAddress);
    if (address === undefined) {
      const shown = JSON.stringify(String(request.remoteAddress));
      return fail('ip_allowlist', `remote address ${shown} is not an IP address`, 'ip_not_allowed', `the source address ${shown} is not an IP address, so the allowlist cannot admit it`);
    }
    if (allowed.matches(address)) return null;
    return fail(
      'ip_allowlist',
      `remote address ${address.toString()} not in allowlist`,
      'ip_not_allowed',
      `the request came from ${address.toString()}, which is not in the endpoint's IP allowlist (${allowlistText}): check the sender's published address ranges, and whether a proxy in front of hookrelay hides the sender's address (HOOKRELAY_TRUSTED_PROXIES)`,
    );
  };
}

/**
 * Builds the per-request verifier for one endpoint's settings. Cheap checks run first (allowlist,
 * then static token) so that a request from the wrong place costs no HMAC. Never throws, neither here
 * nor in the returned function.
 */
export function compileVerifier(settings: VerificationSettings): Verifier {
  const checks: NamedCheck[] = [];
  const add = (name: VerificationCheck, compile: (s: VerificationSettings) => Check): void => {
    let run: Check;
    try {
      run = compile(settings);
    } catch (err) {
      run = misconfigured(name, err instanceof Error ? err.message : String(err));
    }
    checks.push({ name, run });
  };
  if (settings.verifyIpAllowlist) add('ip_allowlist', compileIpAllowlist);
  if (settings.verifyStaticToken) add('static_token', compileStaticToken);
  if (settings.verifyHmac) add('hmac', compileHmac);

  return (request) => {
    for (const check of checks) {
      let result: Failure | null;
      try {
        result = check.run(request);
      } catch (err) {
        result = fail(
          check.name,
          `${check.name} check failed unexpectedly: ${err instanceof Error ? err.message : String(err)}`,
          'verification_misconfigured',
          `the endpoint's ${check.name} check failed unexpectedly; the server's log has the error`,
        );
      }
      if (result !== null) return result;
    }
    return OK;
  };
}
