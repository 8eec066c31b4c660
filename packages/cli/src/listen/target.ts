/** Where `listen` forwards to: an origin, a base path and a base query (from `--forward-to`). */
export interface ForwardTarget {
  /** `http://localhost:3000` */
  origin: string;
  /** `host[:port]` as a Host header carries it. */
  host: string;
  /** `/webhooks`, or `/` when none was given. */
  basePath: string;
  /** Query of `--forward-to` without `?`, usually empty. */
  baseQuery: string;
  /** The whole target, for people: `http://localhost:3000/webhooks`. */
  display: string;
}

const PORT_ONLY = /^(\d{1,5})(\/.*)?$/u;
const HOST_PORT = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})(\/.*)?$/u;

/**
 * `--forward-to` as Stripe CLI users write it: `3000`, `3000/webhooks`, `localhost:3000/hooks`,
 * `http://127.0.0.1:3000/hooks?x=1` or `https://app.test/hooks`. A bare port means
 * `http://localhost:PORT` (both IPv4 and IPv6 loopback are tried).
 */
export function parseForwardTo(value: string): ForwardTarget {
  const text = value.trim();
  let url: string;
  const portOnly = PORT_ONLY.exec(text);
  const hostPort = HOST_PORT.exec(text);
  if (portOnly !== null) url = `http://localhost:${portOnly[1]}${portOnly[2] ?? ''}`;
  else if (hostPort !== null) url = `http://${text}`;
  else if (/^https?:\/\//iu.test(text)) url = text;
  else {
    throw new Error(`"${value}" is not a port or an http(s) URL: use 3000, 3000/webhooks, localhost:3000/webhooks or http://host:port/path`);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`"${value}" is not a valid URL`);
  }
  const port = parsed.port === '' ? undefined : Number(parsed.port);
  if (port !== undefined && (port < 1 || port > 65_535)) throw new Error(`port ${parsed.port} is out of range (1-65535)`);
  if (parsed.username !== '' || parsed.password !== '') throw new Error('--forward-to cannot carry credentials; they would be sent to the app as-is');
  if (parsed.hash !== '') throw new Error('--forward-to cannot have a #fragment');
  const basePath = parsed.pathname === '' ? '/' : parsed.pathname;
  const baseQuery = parsed.search.replace(/^\?/u, '');
  return {
    origin: parsed.origin,
    host: parsed.host,
    basePath,
    baseQuery,
    display: `${parsed.origin}${basePath === '/' && baseQuery === '' ? '' : basePath}${baseQuery === '' ? '' : `?${baseQuery}`}`,
  };
}

/**
 * The message's sub-path appended to the target's path: `/webhooks` + `/github/push` →
 * `/webhooks/github/push`. A bare ingest URL (sub-path `/`) goes to the target path unchanged.
 * Both are used as received (never re-encoded or normalised), so what the sender chose arrives.
 */
export function joinPath(basePath: string, subPath: string): string {
  const base = basePath === '' ? '/' : basePath;
  const sub = subPath === '' ? '/' : subPath.startsWith('/') ? subPath : `/${subPath}`;
  if (sub === '/') return base;
  if (base === '/') return sub;
  return `${base.replace(/\/+$/u, '')}${sub}`;
}

/** Path and query of the forwarded request: target path + sub-path, target query & message query. */
export function forwardPath(target: Pick<ForwardTarget, 'basePath' | 'baseQuery'>, messagePath: string, messageQuery: string): string {
  const path = joinPath(target.basePath, messagePath);
  const query = [target.baseQuery, messageQuery].filter((part) => part !== '').join('&');
  return query === '' ? path : `${path}?${query}`;
}
