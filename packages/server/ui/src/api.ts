import { decodeAnswer, HookrelayApiError, nextCursor } from '@hookrelay/shared/answer';

/**
 * The page's credential and where its sockets' tickets come from: the inspector's API key by
 * default; the portal's token (`choosePortalCredential`). It lives in sessionStorage only: gone with
 * the tab, never in localStorage or a URL.
 */
const credential = { item: 'hookrelay.apiKey', ticketPath: '/v1/stream-tickets' };

/** The page is the customer portal: its portal token is the credential, its tickets the portal's. */
export function choosePortalCredential(): void {
  credential.item = 'hookrelay.portalToken';
  credential.ticketPath = '/v1/portal/stream-tickets';
}

export function storedKey(): string | null {
  return sessionStorage.getItem(credential.item);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(credential.item, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(credential.item);
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
  /** The answer's whole `meta` (a search says its window there). */
  meta: Record<string, unknown>;
}

type Listener = (error: HookrelayApiError) => void;
let onUnauthorized: Listener = () => {};
/** Called when the API refuses the key (revoked, or a wrong one): the app signs out. */
export function setUnauthorizedHandler(listener: Listener): void {
  onUnauthorized = listener;
}

/** The key was refused outside an API call (a live socket closed for it): the app signs out, showing `message`. */
export function keyRefused(message: string): void {
  onUnauthorized(new HookrelayApiError('UNAUTHORIZED', message, 401, undefined));
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

/** What the page says when the server cannot be reached, or something else answers in its place. */
const unreachable = () => new HookrelayApiError('NETWORK', 'the server cannot be reached', 0, undefined);
const notTheApi = (status: number) => new HookrelayApiError('BAD_RESPONSE', `the server answered ${status} without the API's envelope`, status, undefined);

/** One /v1 call with the stored key; the envelope's error rejects as a HookrelayApiError. */
export async function api<T>(method: string, path: string, options: { body?: unknown; key?: string } = {}): Promise<{ data: T; meta: Record<string, unknown> }> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  let text: string;
  try {
    response = await fetch(relative(path), { method, headers, body: options.body === undefined ? null : JSON.stringify(options.body), cache: 'no-store' });
    text = await response.text();
  } catch {
    throw unreachable();
  }
  const answer = decodeAnswer<T>(response.status, text);
  if (answer.kind === 'data') return answer;
  if (answer.kind === 'foreign') throw notTheApi(response.status);
  if (answer.error.code === 'UNAUTHORIZED' && options.key === undefined) onUnauthorized(answer.error);
  throw answer.error;
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
    throw unreachable();
  }
  if (!response.ok) {
    const answer = decodeAnswer(response.status, await response.text().catch(() => ''));
    throw answer.kind === 'error' ? answer.error : notTheApi(response.status);
  }
  const body = new Uint8Array(await response.arrayBuffer());
  const range = /\/(\d+)$/.exec(response.headers.get('content-range') ?? '');
  return { bytes: body, total: range ? Number(range[1]) : body.length, contentType: response.headers.get('content-type') ?? '' };
}

/** A list page: `meta.next_cursor` ("" or null when there is no more). */
export async function page<T>(path: string, query: Query = {}): Promise<Page<T>> {
  const { data, meta } = await api<T[]>('GET', withQuery(path, query));
  return { data, nextCursor: nextCursor(meta), meta };
}

/**
 * A WebSocket to a /v1 path, authenticated by a single-use ticket (a browser cannot send the
 * Authorization header on a WebSocket; the key or token itself never goes into a URL).
 */
export async function openSocket(path: string): Promise<WebSocket> {
  const { data } = await api<{ ticket: string }>('POST', credential.ticketPath);
  const url = relative(withQuery(path, { ticket: data.ticket }));
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return new WebSocket(url);
}
