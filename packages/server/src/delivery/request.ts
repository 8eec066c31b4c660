import type { Dispatcher } from 'undici';
import { emptyRecord, standardWebhookHeaders, standardWebhookHeadersOfStream } from '@hookrelay/shared';
import { validateCustomHeaders } from '../security/headers.js';
import { isStreamedBody, type OutgoingRequest, type StreamedBody } from './sender.js';

export const USER_AGENT = 'hookrelay/0.1 (+https://github.com/hookrelay)';

/** Headers of the original inbound request that are never forwarded (hop-by-hop, framing, routing). */
const NOT_FORWARDED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect', 'http2-settings']);
const STANDARD_WEBHOOK_HEADERS = new Set(['webhook-id', 'webhook-timestamp', 'webhook-signature']);

// What undici sends (RFC 9110 token names; values of tab, printable ASCII and obs-text). Anything
// else makes it throw before sending, which would fail the delivery on every attempt.
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const INVALID_FIELD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** Whether a stored header line can go on the wire as it is (the stored row is plain JSON: check types too). */
function isSendableHeader(name: unknown, value: unknown): name is string {
  return typeof name === 'string' && typeof value === 'string' && FIELD_NAME.test(name) && !INVALID_FIELD_VALUE.test(value);
}

/**
 * An endpoint's custom headers as they may be sent: each is checked again with the create-time rules,
 * so a forbidden name (Host, Content-Length, Content-Type, Proxy-*, webhook-* …) is never sent
 * even if one reached the database some other way.
 */
export function allowedCustomHeaders(headers: Record<string, string> | null | undefined): [string, string][] {
  const allowed: [string, string][] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (validateCustomHeaders({ [name]: value }).ok) allowed.push([name.toLowerCase(), value]);
  }
  return allowed;
}

export interface OutboundRequestInput {
  messageId: string;
  url: string;
  contentType: string;
  eventType: string | null;
  customHeaders: Record<string, string>;
  /** Active signing secrets (`whsec_…`), newest first: during a rotation both sign. */
  secrets: readonly string[];
  body: Buffer;
  /** Unix seconds of this attempt. */
  timestamp: number;
}

/**
 * An outbound delivery: POST of the stored bytes with the message's Content-Type, the endpoint's
 * custom headers, and the Standard Webhooks headers (webhook-id = message id).
 */
export function buildOutboundRequest(input: OutboundRequestInput): OutgoingRequest {
  const headers: Record<string, string> = { 'user-agent': USER_AGENT };
  for (const [name, value] of allowedCustomHeaders(input.customHeaders)) headers[name] = value;
  headers['content-type'] = input.contentType;
  if (input.eventType !== null) headers['hookrelay-event-type'] = input.eventType;
  Object.assign(headers, standardWebhookHeaders(input.secrets, { id: input.messageId, timestamp: input.timestamp, body: input.body }));
  return { url: input.url, method: 'POST', headers, body: input.body };
}

export interface ForwardRequestInput {
  messageId: string;
  /** The endpoint's forwarding URL. */
  url: string;
  method: string;
  /** Sub-path and query recorded after the ingest token, appended to the endpoint's URL. */
  path: string;
  query: string;
  rawHeaders: readonly [string, string][];
  /** Signing secrets when `signing_enabled`, else null (the sender's own headers pass through). */
  secrets: readonly string[] | null;
  /** The stored bytes, or a body streamed from the blob store (signed with a pass of its own). */
  body: Buffer | StreamedBody;
  timestamp: number;
}

/** `https://app/hooks` + `/github/push` + `x=1` → `https://app/hooks/github/push?x=1`. */
export function forwardUrl(base: string, path: string, query: string): string {
  const url = new URL(base);
  if (path !== '' && path !== '/') url.pathname = url.pathname.replace(/\/+$/, '') + path;
  if (query !== '') url.search = url.search.length > 1 ? `${url.search}&${query}` : `?${query}`;
  return url.toString();
}

/**
 * The header names a sender lists in its `Connection` header(s): they describe the hop between the
 * sender and hookrelay, so a proxy removes them before passing the request on (RFC 9110 §7.6.1).
 */
function connectionOptions(rawHeaders: readonly [string, string][]): Set<string> {
  const nominated = new Set<string>();
  for (const [name, value] of rawHeaders) {
    if (typeof name !== 'string' || typeof value !== 'string' || name.toLowerCase() !== 'connection') continue;
    for (const token of value.split(',')) {
      const option = token.trim().toLowerCase();
      if (option !== '') nominated.add(option);
    }
  }
  return nominated;
}

/**
 * A forward-mode inbound delivery: the original method, sub-path, query, headers (minus hop-by-hop
 * and framing ones, and any the sender named in `Connection`) and exact bytes, to the endpoint's
 * URL; when signing is enabled the Standard Webhooks headers replace any the sender had sent. A
 * streamed body is signed with a pass over it before the request, so this rejects with its store's
 * error when it cannot be read. A stored header line HTTP cannot carry (CR, LF, NUL, a name that is
 * not a token: only a row altered around the ingest path holds one) is left out silently: its value
 * may be a secret, and it cannot be delivered anyway.
 */
export async function buildForwardRequest(input: ForwardRequestInput): Promise<OutgoingRequest> {
  const nominated = connectionOptions(input.rawHeaders);
  // Names are the sender's: a null-prototype map keeps `__proto__` or `constructor` an ordinary header.
  const headers = emptyRecord<string | string[]>();
  for (const [rawName, value] of input.rawHeaders) {
    if (!isSendableHeader(rawName, value)) continue;
    const name = rawName.toLowerCase();
    if (NOT_FORWARDED.has(name) || name.startsWith('proxy-') || name.startsWith(':') || nominated.has(name)) continue;
    if (input.secrets !== null && STANDARD_WEBHOOK_HEADERS.has(name)) continue;
    const previous = headers[name];
    headers[name] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  if (input.secrets !== null) {
    const signed = { id: input.messageId, timestamp: input.timestamp };
    // The signature covers id.timestamp.body, so a streamed body is read once more for each attempt.
    const webhookHeaders = isStreamedBody(input.body)
      ? await standardWebhookHeadersOfStream(input.secrets, signed, input.body.open())
      : standardWebhookHeaders(input.secrets, { ...signed, body: input.body });
    Object.assign(headers, webhookHeaders);
  }
  return {
    url: forwardUrl(input.url, input.path, input.query),
    method: input.method.toUpperCase() as Dispatcher.HttpMethod,
    headers,
    body: input.body,
  };
}
