/** The API key lives in sessionStorage only: gone with the tab, never in localStorage or a URL. */
const KEY_ITEM = 'hookrelay.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

type Listener = (error: ApiError) => void;
let onUnauthorized: Listener = () => {};
/** Called when the API refuses the key (revoked, or a wrong one): the app signs out. */
export function setUnauthorizedHandler(listener: Listener): void {
  onUnauthorized = listener;
}

/** The key was refused outside an API call (a live socket closed for it): the app signs out, showing `message`. */
export function keyRefused(message: string): void {
  onUnauthorized(new ApiError(401, 'UNAUTHORIZED', message));
}

export type Query = Record<string, string | number | undefined | null>;

/**
 * API paths are resolved against the page's own address, so a server published under a path prefix
 * (a reverse proxy's `/hookrelay/`) works as well as one at the root.
 */
function relative(path: string): URL {
  return new URL(path.replace(/^\/+/, ''), location.href.split('#')[0]);
}

export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** One /v1 call with the stored key; the envelope's error becomes an ApiError. */
export async function api<T>(method: string, path: string, options: { body?: unknown; key?: string } = {}): Promise<{ data: T; meta: Record<string, unknown> }> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(relative(path), { method, headers, body: options.body === undefined ? null : JSON.stringify(options.body), cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'NETWORK', 'the server cannot be reached');
  }
  const text = await response.text();
  let envelope: { data?: T; meta?: Record<string, unknown>; error?: { code?: string; message?: string } } = {};
  try {
    envelope = text === '' ? {} : JSON.parse(text);
  } catch {
    throw new ApiError(response.status, 'BAD_RESPONSE', `the server answered ${response.status} without a JSON body`);
  }
  if (!response.ok || envelope.error) {
    const error = new ApiError(response.status, envelope.error?.code ?? 'HTTP_ERROR', envelope.error?.message ?? `HTTP ${response.status}`);
    if (error.code === 'UNAUTHORIZED' && options.key === undefined) onUnauthorized(error);
    throw error;
  }
  return { data: envelope.data as T, meta: envelope.meta ?? {} };
}

/**
 * Raw bytes from a /v1 path with the stored key (a message body): the first `rangeBytes` only when
 * given (`Range`), else all of them.
 */
export async function bytes(path: string, rangeBytes?: number): Promise<{ bytes: Uint8Array<ArrayBuffer>; total: number; contentType: string }> {
  const key = storedKey();
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (rangeBytes !== undefined) headers.range = `bytes=0-${rangeBytes - 1}`;
  let response: Response;
  try {
    response = await fetch(relative(path), { headers, cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'NETWORK', 'the server cannot be reached');
  }
  if (!response.ok) {
    let error: { code?: string; message?: string } = {};
    try {
      error = ((await response.json()) as { error?: typeof error }).error ?? {};
    } catch {
      // Not the envelope: the status says enough.
    }
    throw new ApiError(response.status, error.code ?? 'HTTP_ERROR', error.message ?? `HTTP ${response.status}`);
  }
  const body = new Uint8Array(await response.arrayBuffer());
  const range = /\/(\d+)$/.exec(response.headers.get('content-range') ?? '');
  return { bytes: body, total: range ? Number(range[1]) : body.length, contentType: response.headers.get('content-type') ?? '' };
}

/** A list page: `meta.next_cursor` ("" or null when there is no more). */
export async function page<T>(path: string, query: Query = {}): Promise<Page<T>> {
  const { data, meta } = await api<T[]>('GET', withQuery(path, query));
  const next = typeof meta.next_cursor === 'string' && meta.next_cursor !== '' ? meta.next_cursor : null;
  return { data, nextCursor: next };
}

/**
 * A WebSocket to a /v1 path, authenticated by a single-use ticket (a browser cannot send the
 * Authorization header on a WebSocket; the key itself never goes into a URL).
 */
export async function openSocket(path: string): Promise<WebSocket> {
  const { data } = await api<{ ticket: string }>('POST', '/v1/stream-tickets');
  const url = relative(withQuery(path, { ticket: data.ticket }));
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return new WebSocket(url);
}
