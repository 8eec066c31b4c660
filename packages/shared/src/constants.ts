/**
 * The protocol's closed sets (statuses, modes, schemes, sources) and the limits of listen pages, as
 * plain values without zod: a client that only names them (a CLI flag's options, a formatter's
 * size) reads them here without building every schema of the package's index. The schemas
 * (schemas/*.ts) build their enums from these.
 */

/** Delivery statuses, outbound and inbound alike (docs/api.md, Statuses). */
export const MESSAGE_STATUSES = ['queued', 'delivering', 'succeeded', 'pending_retry', 'failed_permanent'] as const;

/** The sender's signature format (docs/api.md, Inbound endpoints); `hex` is the default. */
export const HMAC_SCHEMES = ['hex', 'base64', 'github', 'stripe', 'slack', 'standard_webhooks'] as const;

/** Schemes whose preset knows its header; the generic ones need `hmac_header_name`. */
export const SCHEMES_WITHOUT_PRESET_HEADER: ReadonlySet<(typeof HMAC_SCHEMES)[number]> = new Set(['hex', 'base64']);

/** An inbound endpoint's mode: `forward` delivers each webhook to its URL, `cli` holds it for a CLI (docs/api.md, Inbound endpoints). */
export const INBOUND_MODES = ['forward', 'cli'] as const;

/** The statuses of pull events (docs/api.md, Statuses). */
export const PULL_EVENT_STATUSES = ['stored', 'fetched', 'delivered'] as const;

/**
 * Where an endpoint reads a webhook's event type (docs/api.md, Pull ingestion): a dot path into the
 * JSON body, or a header name.
 */
export const EVENT_TYPE_SOURCES = ['body', 'header'] as const;

/** Messages per listen page: a fixed size, so a full page tells the CLI that more are waiting. */
export const LISTEN_PAGE_SIZE = 50;

/**
 * The body bytes a listen page (and a stream read) gathers at most: a page stops before the message
 * that would pass it, so that pages of large bodies hold fewer messages instead of one huge JSON
 * answer. A page always holds its first message, whatever its size.
 */
export const LISTEN_PAGE_MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * The largest body a listen page or a stream frame carries in itself: a larger one travels by
 * reference (`body_url`, fetched with GET /v1/inbound-messages/{id}/body), so that neither side
 * holds a whole large body in a JSON text, and it counts as no body bytes in a page's budget.
 */
export const INLINE_BODY_MAX_BYTES = 256 * 1024;

/** How long a portal link authenticates unless its create says otherwise, and the longest it may, in minutes (docs/api.md, Portal links). */
export const PORTAL_LINK_LIMITS = { defaultMinutes: 60, maxMinutes: 1440 } as const;

/**
 * What a portal's live socket follows (GET /v1/portal/watch): the owner's first `endpoints`
 * endpoints, newest first, and each one's newest `messagesPerEndpoint` messages, read again every
 * `intervalMs`.
 */
export const PORTAL_WATCH_LIMITS = { endpoints: 100, messagesPerEndpoint: 25, intervalMs: 1000 } as const;

/** The class of a message's latest answer, as the endpoint message list filters it (`none`: no HTTP answer yet). */
export const ANSWER_CLASSES = ['2xx', '4xx', '5xx', 'none'] as const;

/**
 * The search of an endpoint's messages (`GET /v1/inbound-endpoints/{id}/messages?q=…`, docs/api.md,
 * Searching what arrived): a substring of a body or of a header value, within a window of receipt
 * times that bounds what is read.
 */
export const MESSAGE_SEARCH = {
  /** The window when neither bound is given: the last day. */
  defaultWindowMs: 24 * 60 * 60 * 1000,
  /** The longest window a search takes. */
  maxWindowMs: 7 * 24 * 60 * 60 * 1000,
  /** The most messages one request reads; the page then ends there and `next_cursor` goes on. */
  scanLimit: 100_000,
  /** The longest text searched for. */
  maxTextChars: 256,
} as const;

/**
 * Why a header may not be edited, or null when it may: the framing of the copy's body, which the
 * server and every forwarder set from the bytes they send, and the headers no delivery carries
 * (hop-by-hop ones, `Expect`, `Proxy-*`), so that an edit of them would reach nobody.
 */
export function replayHeaderEditProblem(name: string): string | null {
  const lower = name.toLowerCase();
  if (lower === 'content-length' || lower === 'transfer-encoding') return `${name} is the framing of the copy's body, which hookrelay sets from its bytes`;
  if (['connection', 'keep-alive', 'te', 'trailer', 'upgrade', 'expect'].includes(lower) || lower.startsWith('proxy-')) {
    return `${name} describes one connection, and no delivery carries it`;
  }
  return null;
}
