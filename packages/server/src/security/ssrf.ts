/**
 * SSRF protection for outbound deliveries (docs/api.md, Outbound endpoints).
 *
 * Two layers:
 * - `checkDestinationUrl` at create/update time gives the caller a clear 400 for URLs that are
 *   obviously internal. It is advisory: DNS can change after it runs.
 * - `createGuardedAgent` / `createGuardedLookup` at connect time check the exact addresses the
 *   socket connects to, so DNS rebinding cannot slip a private address in between.
 *
 * Address policy (`isBlockedAddress`): only what ipaddr.js classifies as plain 'unicast' is
 * allowed; every special-purpose range is blocked. Details:
 * - IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is unwrapped and judged as the IPv4 address.
 * - NAT64 well-known prefix `64:ff9b::/96` (RFC 6052) is unwrapped: a translator forwards to the
 *   embedded IPv4 address, so it is as safe or unsafe as that address.
 * - Other IPv4-embedding forms are blocked outright rather than unwrapped: 6to4 (2002::/16,
 *   deprecated by RFC 7526), Teredo (2001::/32), RFC 6145 (`::ffff:0:a.b.c.d`), the local-use
 *   NAT64 prefix `64:ff9b:1::/48` (the translator and its reach are site-specific), and
 *   IPv4-compatible `::a.b.c.d` (deprecated, but some stacks still tunnel it).
 * - IPv6 outside the global unicast block 2000::/3 is blocked even when ipaddr.js calls it
 *   'unicast': those addresses are unassigned and `::a.b.c.d` lands there.
 * - Scoped addresses (`...%eth0`) are blocked: a zone only makes sense on a local link.
 * - Anything that is not a canonical IP address (per `net.isIP`) is treated as blocked, so
 *   ambiguous spellings such as `010.0.0.1` (octal to inet_aton, decimal to others) fail closed.
 */
import dns from 'node:dns';
import net from 'node:net';
import tls from 'node:tls';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';
import { ownValue } from '@hookrelay/shared';

export const BLOCKED_ADDRESS_ERROR_CODE = 'ERR_HOOKRELAY_BLOCKED_ADDRESS';
export const DEFAULT_DNS_TIMEOUT_MS = 2000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/** Resolves a hostname to every address it has (IPv4 and IPv6), as plain address strings. */
export type Resolver = (hostname: string) => Promise<string[]>;

/** Where every refusal of a private destination points: the one setting that allows them. */
const PRIVATE_NETWORKS_HINT = '; the server refuses those unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true (local development only)';

export class BlockedAddressError extends Error {
  readonly code = BLOCKED_ADDRESS_ERROR_CODE;
  readonly hostname: string;
  readonly address: string;

  constructor(hostname: string, address: string) {
    super(
      hostname === address
        ? `connection to ${address} refused: private or reserved address${PRIVATE_NETWORKS_HINT}`
        : `connection to ${hostname} refused: it resolves to a private or reserved address (${address})${PRIVATE_NETWORKS_HINT}`,
    );
    this.name = 'BlockedAddressError';
    this.hostname = hostname;
    this.address = address;
  }
}

/** True when `err` or any error in its `cause` chain (fetch wraps connect errors) is a block. */
export function isBlockedAddressError(err: unknown): err is BlockedAddressError {
  let current: unknown = err;
  for (let depth = 0; depth < 8 && current !== null && typeof current === 'object'; depth++) {
    if ((current as { code?: unknown }).code === BLOCKED_ADDRESS_ERROR_CODE) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * Whether a connection to `address` must be refused. Non-IP input returns true (fail closed)
 * rather than throwing, so callers can feed it whatever a resolver or URL produced.
 */
export function isBlockedAddress(address: string): boolean {
  // The zone goes first: ipaddr.js drops it when it unwraps `::ffff:a.b.c.d%eth0`.
  if (net.isIP(address) === 0 || address.includes('%')) return true;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return true;
  }
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast';

  const v6 = parsed as ipaddr.IPv6;
  if (v6.match(NAT64_WELL_KNOWN)) {
    const bytes = v6.toByteArray();
    return new ipaddr.IPv4(bytes.slice(12)).range() !== 'unicast';
  }
  if (!v6.match(IPV6_GLOBAL_UNICAST)) return true;
  return v6.range() !== 'unicast';
}

/**
 * The IP address a URL hostname denotes, or null when it is a name. Accepts `URL.hostname`
 * values (bracketed IPv6, already-normalised IPv4) and also raw host text: the odd IPv4
 * spellings (`2130706433`, `0177.0.0.1`, `0x7f.1`) are normalised with the WHATWG URL parser,
 * i.e. exactly as fetch/undici would interpret them.
 */
export function parseHostLiteral(hostname: string): string | null {
  let host = hostname.trim();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (net.isIP(host) !== 0) return host;
  // Anything that would change the URL's structure (port, path, userinfo) is not a bare host, and
  // without a `:` or `[` the parser cannot produce an IPv6 host: what it gives back is IPv4 or a name.
  if (/[/\\?#@:\s[\]]/.test(hostname)) return null;
  try {
    const normalised = new URL(`http://${hostname}/`).hostname;
    return net.isIP(normalised) !== 0 ? normalised : null;
  } catch {
    return null;
  }
}

function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

async function defaultResolve(hostname: string): Promise<string[]> {
  const results = await dns.promises.lookup(hostname, { all: true });
  return results.map((r) => r.address);
}

/** Settles with the resolver's answer, or `undefined` on failure or timeout. */
async function resolveWithTimeout(
  resolve: Resolver,
  hostname: string,
  timeoutMs: number,
): Promise<string[] | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((settle) => {
    timer = setTimeout(() => settle(undefined), timeoutMs);
    timer.unref();
  });
  try {
    const answer = Promise.resolve()
      .then(() => resolve(hostname))
      .catch(() => undefined);
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface CheckDestinationOptions {
  allowPrivateNetworks: boolean;
  resolve?: Resolver;
  /** Lookup budget; a slower lookup counts as "does not resolve". Default 2000 ms. */
  timeoutMs?: number;
}

export type CheckDestinationResult = { ok: true } | { ok: false; reason: string };

/**
 * Create/update-time check of a destination URL. A hostname that fails to resolve
 * (or times out) is accepted: the connect-time guard has the final say, and refusing would make
 * endpoint creation depend on the health of our resolver.
 */
export async function checkDestinationUrl(
  url: string,
  options: CheckDestinationOptions,
): Promise<CheckDestinationResult> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'url is not a valid URL' };
  }
  if (parsed.protocol !== 'https:') {
    return { ok: false, reason: 'url must use https://' };
  }
  if (options.allowPrivateNetworks) return { ok: true };

  const hostname = parsed.hostname;
  const literal = parseHostLiteral(hostname);
  if (literal !== null) {
    return isBlockedAddress(literal)
      ? { ok: false, reason: `url points to a private or reserved address (${literal})${PRIVATE_NETWORKS_HINT}` }
      : { ok: true };
  }
  if (isLocalhostName(hostname)) {
    return { ok: false, reason: `url host ${hostname} is a loopback name${PRIVATE_NETWORKS_HINT}` };
  }

  const addresses = await resolveWithTimeout(
    options.resolve ?? defaultResolve,
    hostname,
    options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS,
  );
  const blocked = addresses?.find((address) => isBlockedAddress(address));
  if (blocked !== undefined) {
    return { ok: false, reason: `url resolves to a private or reserved address (${blocked})${PRIVATE_NETWORKS_HINT}` };
  }
  return { ok: true };
}

export interface GuardedLookupOptions {
  /** When true, addresses are resolved but not checked. */
  allowPrivateNetworks?: boolean;
  resolve?: Resolver;
}

function lookupError(message: string, code: string, hostname: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException & { hostname?: string } = new Error(message);
  err.code = code;
  err.hostname = hostname;
  return err;
}

/**
 * A `lookup` for net.connect / tls.connect / undici `connect: { lookup }`. It checks every
 * address the name resolves to (not only the one used) and refuses the whole name if any is
 * blocked; the addresses it hands back are the ones it checked, so the socket cannot connect
 * anywhere else.
 */
export function createGuardedLookup(options: GuardedLookupOptions = {}): net.LookupFunction {
  // Own properties only: an option inherited from a polluted Object.prototype must not open the guard.
  const resolve = ownValue(options, 'resolve') ?? defaultResolve;
  const allowPrivate = ownValue(options, 'allowPrivateNetworks') === true;

  return (hostname, lookupOptions, callback) => {
    // dns.lookup's (hostname, callback) form, in case a caller uses it directly.
    if (typeof lookupOptions === 'function') {
      callback = lookupOptions as typeof callback;
      lookupOptions = {};
    }
    const wantAll = ownValue(lookupOptions, 'all') === true;
    const requested = ownValue(lookupOptions, 'family');
    const family =
      requested === 4 || requested === 'IPv4'
        ? 4
        : requested === 6 || requested === 'IPv6'
          ? 6
          : 0;

    const answer = (addresses: string[]): void => {
      if (!allowPrivate) {
        const blocked = addresses.find((address) => isBlockedAddress(address));
        if (blocked !== undefined) {
          callback(new BlockedAddressError(hostname, blocked), wantAll ? [] : '');
          return;
        }
      }
      const usable = addresses
        .map((address) => ({ address, family: net.isIP(address) }))
        .filter((entry) => entry.family !== 0 && (family === 0 || entry.family === family));
      const first = usable[0];
      if (first === undefined) {
        const err = lookupError(`getaddrinfo ENOTFOUND ${hostname}`, 'ENOTFOUND', hostname);
        callback(err, wantAll ? [] : '');
      } else if (wantAll) {
        callback(null, usable);
      } else {
        callback(null, first.address, first.family);
      }
    };
    const fail = (err: unknown): void => {
      const error = err instanceof Error ? (err as NodeJS.ErrnoException) : lookupError(String(err), 'ENOTFOUND', hostname);
      callback(error, wantAll ? [] : '');
    };

    // Deferred so that a resolver throwing synchronously still reaches the callback.
    Promise.resolve()
      .then(() => resolve(hostname))
      .then(answer, fail);
  };
}

export interface GuardedAgentOptions {
  allowPrivateNetworks: boolean;
  connectTimeoutMs?: number;
  /** Extra trusted CA certificate(s) in PEM, added to (not replacing) Node's root store. */
  ca?: string | Buffer;
  /** Injected resolver, for tests; defaults to the system resolver (dns.lookup). */
  resolve?: Resolver;
}

/**
 * An undici Agent for deliveries whose every connection passes the SSRF guard. Hostnames are
 * checked in `lookup`; IP-literal hostnames never reach a lookup in Node, so the connector is
 * wrapped to check those before dialling.
 */
export function createGuardedAgent(options: GuardedAgentOptions): Agent {
  const allowPrivate = ownValue(options, 'allowPrivateNetworks') === true;
  const lookupOptions: GuardedLookupOptions = { allowPrivateNetworks: allowPrivate, resolve: options.resolve };

  const connectorOptions: buildConnector.BuildOptions = {
    timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    lookup: createGuardedLookup(lookupOptions),
  };
  if (options.ca !== undefined) {
    // A `ca` option replaces Node's bundled roots; keep them so public receivers still verify. One
    // context for every connection: a `ca` list would be parsed again on each TLS connect.
    connectorOptions.secureContext = tls.createSecureContext({ ca: [...tls.rootCertificates, options.ca] });
  }
  const baseConnect = buildConnector(connectorOptions);

  const connect: buildConnector.connector = (connectOptions, callback) => {
    if (!allowPrivate) {
      const literal = parseHostLiteral(connectOptions.hostname);
      if (literal !== null && isBlockedAddress(literal)) {
        callback(new BlockedAddressError(literal, literal), null);
        return;
      }
    }
    baseConnect(connectOptions, callback);
  };

  return new Agent({ connect });
}
