/**
 * Headers that describe one connection rather than the message (RFC 9110 §7.6.1), plus the two the
 * forwarder states itself: `host` (the target's, unless --preserve-host) and `content-length`
 * (recomputed from the exact body). `expect` is dropped too: the body is sent at once, and a local
 * app must not wait for a 100-continue that the sender asked of the relay.
 */
const DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'content-length', 'expect']);

export interface ForwardHeaderOptions {
  /** The Host header to send; `null` keeps the sender's (--preserve-host). */
  host: string | null;
  /** Length of the exact body that will be sent. */
  bodyLength: number;
}

/**
 * The header lines to send to the local app, flat (`[name, value, name, value, …]`), from the
 * message's `raw_headers`: order, name case and repeated headers kept; hop-by-hop headers (and any
 * header named in `Connection`) removed; `host` and `content-length` set as described above.
 */
export function forwardHeaders(rawHeaders: readonly (readonly [string, string])[], options: ForwardHeaderOptions): string[] {
  const nominated = new Set<string>();
  let originalHost: string | undefined;
  let declaredLength = false;
  for (const [name, value] of rawHeaders) {
    const lower = name.toLowerCase();
    if (lower === 'connection') {
      for (const token of value.split(',')) {
        const trimmed = token.trim().toLowerCase();
        if (trimmed !== '') nominated.add(trimmed);
      }
    } else if (lower === 'host' && originalHost === undefined) originalHost = value;
    else if (lower === 'content-length' || lower === 'transfer-encoding') declaredLength = true;
  }

  const out: string[] = [];
  const host = options.host ?? originalHost;
  if (host !== undefined) out.push('host', host);
  for (const [name, value] of rawHeaders) {
    const lower = name.toLowerCase();
    if (DROPPED.has(lower) || lower.startsWith('proxy-') || lower.startsWith(':') || nominated.has(lower)) continue;
    out.push(name, value);
  }
  // A sender's empty POST said `content-length: 0`; a bodiless GET said nothing: keep each so.
  if (options.bodyLength > 0 || declaredLength) out.push('content-length', String(options.bodyLength));
  return out;
}

/** Flat header list → `[name, value]` pairs (tests and output). */
export function headerPairs(flat: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
  return pairs;
}
