/**
 * Validation of an outbound endpoint's custom headers (INVALID_HEADERS). A stored header must be one
 * that is actually sent as given, so these are refused:
 * - the ones HTTP or hookrelay controls: Host, framing, hop-by-hop, Proxy-*, the webhook-* signature;
 * - `Expect`: undici rejects it on every request;
 * - `Content-Type` and `hookrelay-event-type`: each message states its own (its `content_type` and
 *   `event_type`), so an endpoint-wide value would be overwritten on every send. `User-Agent` stays
 *   allowed: a custom one replaces hookrelay's;
 * - values HTTP and undici cannot carry (only tab, printable ASCII and Latin-1 can); CR, LF and NUL
 *   get their own message because they are the header-injection case;
 * - names that differ only in case, since only one of them could be sent.
 */

export const MAX_CUSTOM_HEADERS = 50;
export const MAX_HEADER_VALUE_LENGTH = 4096;

export type HeaderValidationResult =
  | { ok: true; headers: Record<string, string> }
  | { ok: false; message: string; path: string };

// RFC 7230 §3.2.6 token.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const INJECTION = /[\r\n\0]/;
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

const SET_BY_HOOKRELAY = new Set(['host', 'content-length', 'transfer-encoding']);
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'upgrade', 'te', 'trailer']);

function forbiddenReason(name: string): string | null {
  const lower = name.toLowerCase();
  if (lower === 'host') return 'the Host header cannot be overridden';
  if (SET_BY_HOOKRELAY.has(lower)) return `the ${name} header is set by hookrelay and cannot be overridden`;
  if (HOP_BY_HOP.has(lower)) return `${name} is a hop-by-hop header and cannot be set`;
  if (lower === 'expect') return 'the Expect header is not supported';
  if (lower === 'content-type') return "the Content-Type header is each message's content_type and cannot be set on the endpoint";
  if (lower === 'hookrelay-event-type') return "the hookrelay-event-type header is each message's event_type and cannot be set on the endpoint";
  if (lower.startsWith('proxy-')) return 'Proxy-* headers cannot be set';
  if (lower.startsWith('webhook-')) return 'webhook-* headers are reserved for the webhook signature';
  return null;
}

export function validateCustomHeaders(headers: Record<string, string>): HeaderValidationResult {
  // The type says Record<string, string>, but this sees parsed JSON; check at run time too.
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    return { ok: false, path: 'headers', message: 'headers must be an object of header names to string values' };
  }
  const names = Object.keys(headers);
  if (names.length > MAX_CUSTOM_HEADERS) {
    return {
      ok: false,
      path: 'headers',
      message: `headers: at most ${MAX_CUSTOM_HEADERS} custom headers are allowed (got ${names.length})`,
    };
  }

  const seen = new Map<string, string>();
  for (const name of names) {
    const path = `headers.${name}`;
    const fail = (reason: string): HeaderValidationResult => ({ ok: false, path, message: `${path}: ${reason}` });

    if (name === '') return fail('header names cannot be empty');
    if (!TOKEN.test(name)) return fail('header names may contain only letters, digits and !#$%&\'*+-.^_`|~');
    const forbidden = forbiddenReason(name);
    if (forbidden !== null) return fail(forbidden);

    const lower = name.toLowerCase();
    const previous = seen.get(lower);
    if (previous !== undefined) return fail(`duplicate header name (also given as ${previous})`);
    seen.set(lower, name);

    const value: unknown = headers[name];
    if (typeof value !== 'string') return fail('header values must be strings');
    if (INJECTION.test(value)) return fail('header values cannot contain CR, LF or NUL characters');
    if (value.length > MAX_HEADER_VALUE_LENGTH) {
      return fail(`header values can be at most ${MAX_HEADER_VALUE_LENGTH} characters (got ${value.length})`);
    }
    if (INVALID_VALUE_CHAR.test(value)) {
      return fail('header values may contain only tabs, printable ASCII and Latin-1 characters');
    }
  }
  return { ok: true, headers };
}
