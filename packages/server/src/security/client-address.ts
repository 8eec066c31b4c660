import { CidrList, parseAddress } from './cidr.js';

/**
 * The client's address behind reverse proxies (docs/operating.md, Behind a reverse proxy). Only a
 * peer inside HOOKRELAY_TRUSTED_PROXIES is believed about who it forwards for; from any other peer
 * the forwarding headers are ignored and the peer is the client. From a trusted peer the hops it
 * lists are read from the right (the nearest proxy's entry first): each trusted hop passes on to the
 * one before it, and the first hop that is not trusted is the client; a client cannot get past a
 * trusted proxy by writing entries of its own, since they sit left of what the proxies appended.
 *
 * The hops come from `X-Forwarded-For` (what nginx, Caddy, HAProxy and cloud load balancers write)
 * or, when a request has none, from the `for=` parameters of `Forwarded` (RFC 7239). A hop that is
 * not an IP address (`unknown`, an obfuscated `_name`, garbage) ends the walk: the last trusted hop
 * is then the client, so such a request matches no allowlist that does not name the proxy itself.
 */
export class TrustedProxies {
  private readonly proxies: CidrList;

  /** `cidrs` as HOOKRELAY_TRUSTED_PROXIES lists them (checked by the configuration). */
  constructor(cidrs: readonly string[]) {
    this.proxies = CidrList.compile(cidrs);
  }

  /** The client's address of a request from `peer` (the socket's remote address) with `headers`. */
  clientAddress(peer: string, headers: Readonly<Record<string, string | string[] | undefined>>): string {
    if (this.proxies.size === 0) return peer;
    let current = parseAddress(peer);
    if (current === undefined || !this.proxies.matches(current)) return peer;
    const hops = forwardedHops(headers);
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = parseAddress(hopAddress(hops[i]!));
      if (hop === undefined) break;
      current = hop;
      if (!this.proxies.matches(current)) break;
    }
    return current.toString();
  }
}

/** The hops a request lists, left (farthest) to right (nearest). */
function forwardedHops(headers: Readonly<Record<string, string | string[] | undefined>>): string[] {
  const xff = headers['x-forwarded-for'];
  if (xff !== undefined) return joined(xff).split(',');
  const forwarded = headers.forwarded;
  if (forwarded === undefined) return [];
  // Elements are comma-separated, their pairs semicolon-separated; a quoted value holds neither in
  // what a proxy writes for `for=` (an address, with a port and brackets at most).
  return joined(forwarded)
    .split(',')
    .map((element) => {
      const pair = element.split(';').find((p) => /^\s*for\s*=/i.test(p));
      return pair === undefined ? '' : pair.slice(pair.indexOf('=') + 1);
    });
}

function joined(value: string | string[]): string {
  return typeof value === 'string' ? value : value.join(',');
}

/**
 * The address of one hop as proxies write it: `203.0.113.7`, `2001:db8::1`, quoted, bracketed, with
 * a port (`"[2001:db8::1]:4711"`, `192.0.2.43:47011`).
 */
function hopAddress(hop: string): string {
  let text = hop.trim();
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) text = text.slice(1, -1).trim();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    return end === -1 ? '' : text.slice(1, end);
  }
  // One colon: an IPv4 address with a port. An IPv6 address has at least two.
  const colon = text.indexOf(':');
  if (colon !== -1 && text.indexOf(':', colon + 1) === -1) return text.slice(0, colon);
  return text;
}
