import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * CIDR blocks and the addresses matched against them: inbound IP allowlists (ingest/verify.ts) and
 * the trusted proxies (security/client-address.ts) read blocks the same way.
 */
export type Ipv4Range = [ipaddr.IPv4, number];
export type Ipv6Range = [ipaddr.IPv6, number];

/**
 * Strict parse: the address part must be a canonical IP per `net.isIP` (ipaddr.js alone would take
 * `10.1` or `0x0a.0.0.1`, spellings that mean different things to different tools), no zone id, and
 * a decimal prefix within the family's width. A bare address is one host (/32 or /128). Host bits
 * below the prefix are allowed (`192.168.1.7/24` means the /24), as most tools accept that.
 */
export function parseCidr(cidr: string): { range: Ipv4Range | Ipv6Range } | { error: string } {
  if (typeof cidr !== 'string' || cidr.length === 0) return { error: 'must be a CIDR block such as 203.0.113.0/24' };
  const slash = cidr.indexOf('/');
  const address = slash === -1 ? cidr : cidr.slice(0, slash);
  const family = isIP(address);
  if (family === 0 || address.includes('%')) {
    return { error: `"${cidr}" is not a CIDR block: "${address}" is not an IPv4 or IPv6 address` };
  }
  const width = family === 4 ? 32 : 128;
  let prefix = width;
  if (slash !== -1) {
    const prefixText = cidr.slice(slash + 1);
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > width) {
      return { error: `"${cidr}" is not a CIDR block: the prefix length must be 0–${width}` };
    }
    prefix = Number(prefixText);
  }
  try {
    if (family === 4) return { range: [ipaddr.IPv4.parse(address), prefix] };
    const v6 = ipaddr.IPv6.parse(address);
    // `::ffff:10.0.0.0/104` names IPv4 senders; since addresses are unwrapped to IPv4 before
    // matching (parseAddress), the block must be unwrapped too or it could never match anything.
    if (prefix >= 96 && v6.isIPv4MappedAddress()) return { range: [v6.toIPv4Address(), prefix - 96] };
    return { range: [v6, prefix] };
  } catch {
    return { error: `"${cidr}" is not a CIDR block` };
  }
}

/**
 * An address as matched against blocks, or undefined when `text` is not an IP address.
 * ipaddr.process() unwraps `::ffff:a.b.c.d`, so a dual-stack socket's IPv4 peers match IPv4 blocks.
 */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (typeof text !== 'string' || isIP(text) === 0) return undefined;
  try {
    return ipaddr.process(text);
  } catch {
    return undefined;
  }
}

/** A set of CIDR blocks, matched by family: ipaddr.js throws when asked to match across them. */
export class CidrList {
  private constructor(
    private readonly v4: readonly Ipv4Range[],
    private readonly v6: readonly Ipv6Range[],
  ) {}

  /** The blocks of `cidrs` that parse; the others are left out (see parseCidr for checking them). */
  static compile(cidrs: readonly string[]): CidrList {
    const v4: Ipv4Range[] = [];
    const v6: Ipv6Range[] = [];
    for (const cidr of cidrs) {
      const parsed = parseCidr(cidr);
      if ('error' in parsed) continue;
      if (parsed.range[0].kind() === 'ipv4') v4.push(parsed.range as Ipv4Range);
      else v6.push(parsed.range as Ipv6Range);
    }
    return new CidrList(v4, v6);
  }

  get size(): number {
    return this.v4.length + this.v6.length;
  }

  matches(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    if (address.kind() === 'ipv4') return this.v4.some((range) => (address as ipaddr.IPv4).match(range));
    return this.v6.some((range) => (address as ipaddr.IPv6).match(range));
  }
}
