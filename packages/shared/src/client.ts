import type { Dispatcher } from 'undici';
import { decodeAnswer, type HookrelayApiError } from './answer.js';
import { HookrelayNetworkError, HookrelayWrongServerError, isClosedWithoutAnswer, isPlainHttpUnderTls, speaksTls, withScheme } from './client-errors.js';
import type { EndpointListQuery, PauseOut, EndpointDeleteOut } from './schemas/common.js';
import type {
  EndpointCreateIn,
  EndpointCreateOut,
  EndpointOut,
  EndpointSummaryOut,
  EndpointUpdateIn,
  OutboundEndpointListQuery,
  RotateSecretOut,
} from './schemas/outbound-endpoints.js';
import type { EventCreateIn, EventCreateOut, EventOut, EventsQuery, EventSummaryOut } from './schemas/events.js';
import type { BulkJobEstimateOut, BulkJobListQuery, BulkJobOut, BulkRetryFilterIn, InboundReplayCreateIn } from './schemas/bulk-jobs.js';
import type { WhoamiOut } from './schemas/whoami.js';
import type { PortalLinkCreateIn, PortalLinkCreateOut, PortalLinkListQuery, PortalLinkOut, PortalLinkRevokeOut, PortalSessionOut } from './schemas/portal.js';
import type { InboundSampleIn, InboundSampleOut } from './schemas/samples.js';
import type { InboundReplayIn } from './schemas/replay.js';
import type { EndpointMessagesMeta } from './schemas/message-search.js';
import type {
  PullDeleteAllOut,
  PullEndpointCreateIn,
  PullEndpointCreateOut,
  PullEndpointOut,
  PullEndpointUpdateIn,
  PullEventAckBatchOut,
  PullEventAckOut,
  PullEventDeleteBatchOut,
  PullEventDeleteOut,
  PullEventDetailOut,
  PullEventOut,
  PullEventsPageMeta,
  PullEventStatus,
} from './schemas/pull.js';
import type { Meta, PageMeta } from './envelope.js';
import type {
  CliMessageOut,
  InboundEndpointCreateIn,
  InboundEndpointCreateOut,
  InboundEndpointMessageOut,
  InboundEndpointMessagesQuery,
  InboundEndpointOut,
  InboundEndpointSummaryOut,
  InboundEndpointUpdateIn,
  InboundEndpointUpdateOut,
  InboundLogRecordOut,
  InboundLogsQuery,
  InboundMessageDeleteBatchOut,
  InboundMessageDeleteOut,
  InboundMessageOut,
  InboundReplayOut,
  InboundResultIn,
  ListenMeta,
} from './schemas/inbound.js';
import type {
  AttemptOut,
  LogRecordOut,
  LogsQuery,
  MessageCreateIn,
  MessageCreateOut,
  MessageDeleteBatchOut,
  MessageDeleteOut,
  MessageOut,
  MessageRetryOut,
} from './schemas/messages.js';
import type { PageMetaWithMore } from './envelope.js';
import type { RejectionDetailOut, RejectionOut, RejectionsQuery } from './schemas/rejections.js';
import type { EventTypeCreateIn, EventTypeDeleteOut, EventTypeListQuery, EventTypeOut, EventTypeUpdateIn } from './schemas/event-catalogue.js';

/** Declared beside the decoder (`answer.ts`, which the inspector shares); the client's callers catch it from here. */
export { HookrelayApiError } from './answer.js';
export { HookrelayNetworkError, HookrelayWrongServerError } from './client-errors.js';

export interface ClientOptions {
  /** Base address of the API, e.g. `http://127.0.0.1:8787`. */
  apiUrl: string;
  apiKey?: string;
  /** Per-request timeout in milliseconds (headers and body). Default 30 s. */
  timeoutMs?: number;
  userAgent?: string;
  dispatcher?: Dispatcher;
}

export type QueryValue = string | number | boolean | undefined | null | readonly string[];

export interface RequestOptions extends CallOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * What a caller may add to one call. `signal` ends the request wherever it is (connecting, waiting
 * for the answer, reading its body); the call then rejects with `signal.reason` itself, so that the
 * caller tells its own deadline from the network's failures.
 */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Filters of the pull events list and of delete-all; `status` as a comma list or an array. */
export type PullEventFilterParams = {
  status?: string | readonly PullEventStatus[];
  event_type?: string;
  received_after?: string;
  received_before?: string;
  limit?: number;
};

export interface ApiResponse<T, M = Meta> {
  data: T;
  meta: M;
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

/** The `Idempotency-Key` header of a request, when the caller gives a key. */
const idempotencyHeader = (key: string | undefined): Pick<RequestOptions, 'headers'> => (key === undefined ? {} : { headers: { 'idempotency-key': key } });

function buildUrl(base: string, path: string, query?: Record<string, QueryValue>): string {
  const url = new URL(path.replace(/^\//, ''), base.endsWith('/') ? base : `${base}/`);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    url.searchParams.set(key, Array.isArray(value) ? value.join(',') : String(value));
  }
  return url.toString();
}

/**
 * undici (about 110 files) loads with the first request rather than with this module: a command
 * such as `dev` has other work to start before it talks to a server.
 */
let undiciModule: Promise<typeof import('undici')> | undefined;
const loadUndici = () => (undiciModule ??= import('undici'));

/**
 * A small typed client of the hookrelay API, used by the CLI, the e2e tests and users' scripts.
 * Every method resolves to `{ data, meta }` or rejects with a `HookrelayApiError` carrying the
 * envelope's `code`, `message`, the HTTP status and `meta.request_id`.
 */
export class HookrelayClient {
  readonly apiUrl: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  /** The caller's, or made at the first request. */
  private dispatcher: Dispatcher | undefined;

  constructor(options: ClientOptions) {
    this.apiUrl = options.apiUrl;
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.userAgent = options.userAgent ?? 'hookrelay-client/0.1';
    this.dispatcher = options.dispatcher;
  }

  async request<T, M = Meta>(method: Dispatcher.HttpMethod, path: string, options: RequestOptions = {}): Promise<ApiResponse<T, M>> {
    const url = buildUrl(this.apiUrl, path, options.query);
    const headers: Record<string, string> = { 'user-agent': this.userAgent, accept: 'application/json', ...options.headers };
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const signal = options.signal;
    signal?.throwIfAborted();
    let response: Dispatcher.ResponseData;
    try {
      const undici = await loadUndici();
      this.dispatcher ??= new undici.Agent({ connect: { timeout: 10_000 } });
      response = await undici.request(url, {
        method,
        headers,
        body,
        dispatcher: this.dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        ...(signal === undefined ? {} : { signal }),
      });
    } catch (cause) {
      if (signal?.aborted === true) throw signal.reason;
      throw await this.connectionFailure(url, cause);
    }
    let text: string;
    try {
      text = await response.body.text();
    } catch (cause) {
      if (signal?.aborted === true) throw signal.reason;
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new HookrelayNetworkError(`${method} ${url}: the answer was cut off (${reason})`, url, { cause });
    }
    const retryAfter = Number(response.headers['retry-after']);
    const answer = decodeAnswer<T, M>(response.statusCode, text, Number.isFinite(retryAfter) ? retryAfter : undefined);
    if (answer.kind === 'error') {
      // The client asks only for the API's own paths: a hookrelay server without a route for one is
      // reached through a base address with a path in it (or is older than this client).
      if (answer.error.code === 'ROUTE_NOT_FOUND') throw this.notTheBaseAddress(method, url, answer.error);
      throw answer.error;
    }
    if (answer.kind === 'foreign') {
      // A proxy's 502/503/504 page in front of a restarting server is passing trouble, not a wrong address.
      if (response.statusCode >= 500) {
        throw new HookrelayNetworkError(`${method} ${url} answered HTTP ${response.statusCode} without an API error envelope`, url);
      }
      throw this.notTheApi(method, url, response.statusCode, response.headers['content-type']);
    }
    return { data: answer.data, meta: answer.meta, status: response.statusCode, headers: response.headers };
  }

  private notTheApi(method: string, url: string, status: number, contentType: string | string[] | undefined): HookrelayWrongServerError {
    const type = typeof contentType === 'string' && contentType !== '' ? `, ${contentType.split(';')[0]}` : '';
    return new HookrelayWrongServerError(
      `${this.apiUrl} does not answer as a hookrelay API (check the URL's path): ${method} ${url} answered HTTP ${status}${type} without the API's envelope`,
      url,
      'not_api',
      status,
      { apiUrl: this.apiUrl },
    );
  }

  private notTheBaseAddress(method: string, url: string, answer: HookrelayApiError): HookrelayWrongServerError {
    return new HookrelayWrongServerError(
      `${this.apiUrl} is not the hookrelay API's base address (it is the server's root, such as http://127.0.0.1:8787, without /v1): ${method} ${url} answered ROUTE_NOT_FOUND`,
      url,
      'not_base_address',
      answer.status,
      { apiUrl: this.apiUrl, cause: answer },
    );
  }

  /** A request that got no answer: a scheme that does not match the server, or an unreachable one. */
  private async connectionFailure(url: string, cause: unknown): Promise<Error> {
    const target = new URL(url);
    if (target.protocol === 'https:' && isPlainHttpUnderTls(cause)) {
      return new HookrelayWrongServerError(
        `${this.apiUrl} answers plain HTTP, not HTTPS: use ${withScheme(this.apiUrl, 'http:')} (http://, not https://)`,
        url,
        'https_to_plain_http',
        undefined,
        { cause, apiUrl: this.apiUrl },
      );
    }
    if (target.protocol === 'http:' && isClosedWithoutAnswer(cause) && (await speaksTls(target))) {
      return new HookrelayWrongServerError(
        `${this.apiUrl} expects HTTPS: use ${withScheme(this.apiUrl, 'https:')} (https://, not http://)`,
        url,
        'http_to_tls',
        undefined,
        { cause, apiUrl: this.apiUrl },
      );
    }
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new HookrelayNetworkError(`could not reach ${this.apiUrl}: ${reason}`, url, { cause });
  }

  whoami() {
    return this.request<WhoamiOut>('GET', '/v1/whoami');
  }

  readonly endpoints = {
    create: (body: EndpointCreateIn) => this.request<EndpointCreateOut>('POST', '/v1/endpoints', { body }),
    /** `owner_id`: that owner's endpoints; `event_type`: those whose `event_types` take that type. */
    list: (query: Partial<OutboundEndpointListQuery> = {}) =>
      this.request<EndpointSummaryOut[], PageMeta>('GET', '/v1/endpoints', { query }),
    get: (id: string) => this.request<EndpointOut>('GET', `/v1/endpoints/${encodeURIComponent(id)}`),
    update: (id: string, body: EndpointUpdateIn) =>
      this.request<EndpointOut>('PATCH', `/v1/endpoints/${encodeURIComponent(id)}`, { body }),
    pause: (id: string) => this.request<PauseOut>('POST', `/v1/endpoints/${encodeURIComponent(id)}/pause`),
    resume: (id: string) => this.request<PauseOut>('POST', `/v1/endpoints/${encodeURIComponent(id)}/resume`),
    delete: (id: string) => this.request<EndpointDeleteOut>('DELETE', `/v1/endpoints/${encodeURIComponent(id)}`),
    rotateSecret: (id: string) =>
      this.request<RotateSecretOut>('POST', `/v1/endpoints/${encodeURIComponent(id)}/rotate-secret`),
  };

  /**
   * Inbound endpoints (cli and forward mode) and the CLI's listen page (docs/api.md, Inbound
   * endpoints; Listen and stream).
   */
  readonly inboundEndpoints = {
    create: (body: InboundEndpointCreateIn) => this.request<InboundEndpointCreateOut>('POST', '/v1/inbound-endpoints', { body }),
    get: (id: string, options: CallOptions = {}) => this.request<InboundEndpointOut>('GET', `/v1/inbound-endpoints/${encodeURIComponent(id)}`, options),
    list: (query: Partial<EndpointListQuery> = {}) =>
      this.request<InboundEndpointSummaryOut[], PageMeta>('GET', '/v1/inbound-endpoints', { query }),
    /** PATCH answers only `{ id, updated }`; GET the endpoint for its new settings. */
    update: (id: string, body: InboundEndpointUpdateIn) =>
      this.request<InboundEndpointUpdateOut>('PATCH', `/v1/inbound-endpoints/${encodeURIComponent(id)}`, { body }),
    pause: (id: string) => this.request<PauseOut>('POST', `/v1/inbound-endpoints/${encodeURIComponent(id)}/pause`),
    resume: (id: string) => this.request<PauseOut>('POST', `/v1/inbound-endpoints/${encodeURIComponent(id)}/resume`),
    delete: (id: string) => this.request<EndpointDeleteOut>('DELETE', `/v1/inbound-endpoints/${encodeURIComponent(id)}`),
    rotateSecret: (id: string) =>
      this.request<RotateSecretOut>('POST', `/v1/inbound-endpoints/${encodeURIComponent(id)}/rotate-secret`),
    /**
     * One page (at most 50) after `after`; `body_encoding: 'base64'` keeps every body's exact bytes.
     * With `events` / `path` filters, call again with `after: meta.cursor` (skipped messages included).
     */
    listen: (id: string, query: { after?: string | null; body_encoding?: 'base64'; events?: string; path?: string } = {}) =>
      this.request<CliMessageOut[], ListenMeta>('GET', `/v1/inbound-endpoints/${encodeURIComponent(id)}/listen`, { query }),
    /** The endpoint's messages, newest first; pass `meta.next_cursor` back as `cursor`; `q` searches (`meta.search`). */
    messages: (id: string, query: Partial<InboundEndpointMessagesQuery> = {}, options: CallOptions = {}) =>
      this.request<InboundEndpointMessageOut[], EndpointMessagesMeta>('GET', `/v1/inbound-endpoints/${encodeURIComponent(id)}/messages`, { query, ...options }),
    /** Requests its ingest URL refused, newest first; pass `meta.next_cursor` back as `cursor`. */
    rejections: (id: string, query: Partial<RejectionsQuery> = {}) =>
      this.request<RejectionOut[], PageMetaWithMore>('GET', `/v1/inbound-endpoints/${encodeURIComponent(id)}/rejections`, { query }),
    /** One refused request, with the start of its body (base64). */
    rejection: (id: string, rejectionId: string) =>
      this.request<RejectionDetailOut>('GET', `/v1/inbound-endpoints/${encodeURIComponent(id)}/rejections/${encodeURIComponent(rejectionId)}`),
    /** Builds a sample event, signs it with the endpoint's stored HMAC secret and ingests it. */
    sample: (id: string, body: InboundSampleIn) =>
      this.request<InboundSampleOut>('POST', `/v1/inbound-endpoints/${encodeURIComponent(id)}/samples`, { body }),
    /** How many of its messages a replay job with this filter would take now; starts nothing. */
    countReplay: (id: string, filter: Omit<InboundReplayCreateIn, 'dry_run'>) =>
      this.request<BulkJobEstimateOut>('POST', `/v1/inbound-endpoints/${encodeURIComponent(id)}/replays`, { body: { ...filter, dry_run: true } }),
    /** Starts a job that replays its messages, oldest first (read it back with `bulkJobs.get`). */
    startReplay: (id: string, filter: Omit<InboundReplayCreateIn, 'dry_run'>) =>
      this.request<BulkJobOut>('POST', `/v1/inbound-endpoints/${encodeURIComponent(id)}/replays`, { body: { ...filter, dry_run: false } }),
  };

  /** Inbound messages: the record, replay, and the CLI's report of the local app's answer. */
  readonly inboundMessages = {
    /** `body_max_bytes`: a larger body is left out (`size_bytes` tells why; `…/body` serves it). */
    get: (id: string, query: { body_encoding?: 'base64'; body_max_bytes?: number } = {}, options: CallOptions = {}) =>
      this.request<InboundMessageOut>('GET', `/v1/inbound-messages/${encodeURIComponent(id)}`, { query, ...options }),
    /** With edits (`body` or `set`, `headers`, `resign`): a new message, the edited copy (docs/api.md, Edited replays). */
    replay: (id: string, edits?: InboundReplayIn) =>
      this.request<InboundReplayOut>('POST', `/v1/inbound-messages/${encodeURIComponent(id)}/replay`, edits === undefined ? {} : { body: edits }),
    attempts: (id: string) => this.request<AttemptOut[]>('GET', `/v1/inbound-messages/${encodeURIComponent(id)}/attempts`),
    /**
     * `resultId` goes as the Idempotency-Key header: a report sent again under it is recorded once
     * (and a server that predates result ids ignores the header, where it would refuse `body.result_id`).
     */
    result: (id: string, body: InboundResultIn, options: { resultId?: string } = {}) =>
      this.request<InboundMessageOut>('POST', `/v1/inbound-messages/${encodeURIComponent(id)}/result`, { body, ...idempotencyHeader(options.resultId) }),
    delete: (id: string) => this.request<InboundMessageDeleteOut>('DELETE', `/v1/inbound-messages/${encodeURIComponent(id)}`),
    deleteBatch: (messageIds: readonly string[]) =>
      this.request<InboundMessageDeleteBatchOut>('POST', '/v1/inbound-messages/delete-batch', { body: { message_ids: messageIds } }),
  };

  /** Inbound logs (GET /v1/inbound-logs), newest first; pass `meta.next_cursor` back as `cursor`. */
  readonly inboundLogs = {
    list: (query: Partial<InboundLogsQuery> = {}) =>
      this.request<InboundLogRecordOut[], PageMetaWithMore>('GET', '/v1/inbound-logs', { query }),
  };

  readonly pullEndpoints = {
    create: (body: PullEndpointCreateIn) => this.request<PullEndpointCreateOut>('POST', '/v1/pull-endpoints', { body }),
    list: (query: Partial<EndpointListQuery> = {}) =>
      this.request<PullEndpointOut[], PageMeta>('GET', '/v1/pull-endpoints', { query }),
    get: (id: string) => this.request<PullEndpointOut>('GET', `/v1/pull-endpoints/${encodeURIComponent(id)}`),
    update: (id: string, body: PullEndpointUpdateIn) =>
      this.request<PullEndpointOut>('PATCH', `/v1/pull-endpoints/${encodeURIComponent(id)}`, { body }),
    pause: (id: string) => this.request<PauseOut>('POST', `/v1/pull-endpoints/${encodeURIComponent(id)}/pause`),
    resume: (id: string) => this.request<PauseOut>('POST', `/v1/pull-endpoints/${encodeURIComponent(id)}/resume`),
    delete: (id: string) => this.request<EndpointDeleteOut>('DELETE', `/v1/pull-endpoints/${encodeURIComponent(id)}`),
    /** Requests its ingest URL refused, newest first; pass `meta.next_cursor` back as `cursor`. */
    rejections: (id: string, query: Partial<RejectionsQuery> = {}) =>
      this.request<RejectionOut[], PageMetaWithMore>('GET', `/v1/pull-endpoints/${encodeURIComponent(id)}/rejections`, { query }),
    /** One refused request, with the start of its body (base64). */
    rejection: (id: string, rejectionId: string) =>
      this.request<RejectionDetailOut>('GET', `/v1/pull-endpoints/${encodeURIComponent(id)}/rejections/${encodeURIComponent(rejectionId)}`),
  };

  /**
   * Events of a pull endpoint. `get` moves a stored event to fetched; `deleteAll` sends its filters
   * as a JSON body and, on DELETE_FAILED / PARTIAL_DELETE_FAILURE, rejects with a HookrelayApiError
   * whose `data` lists what was deleted before the failure.
   */
  readonly pullEvents = {
    list: (endpointId: string, query: PullEventFilterParams & { cursor?: string } = {}) =>
      this.request<PullEventOut[], PullEventsPageMeta>('GET', `/v1/pull-endpoints/${encodeURIComponent(endpointId)}/events`, { query }),
    get: (endpointId: string, eventId: string, options: { bodyEncoding?: 'base64' } = {}) =>
      this.request<PullEventDetailOut>(
        'GET',
        `/v1/pull-endpoints/${encodeURIComponent(endpointId)}/events/${encodeURIComponent(eventId)}`,
        { query: { body_encoding: options.bodyEncoding } },
      ),
    ack: (endpointId: string, eventId: string) =>
      this.request<PullEventAckOut>('POST', `/v1/pull-endpoints/${encodeURIComponent(endpointId)}/events/${encodeURIComponent(eventId)}/ack`),
    ackBatch: (endpointId: string, eventIds: readonly string[]) =>
      this.request<PullEventAckBatchOut>('POST', `/v1/pull-endpoints/${encodeURIComponent(endpointId)}/events/ack-batch`, {
        body: { event_ids: eventIds },
      }),
    delete: (endpointId: string, eventId: string) =>
      this.request<PullEventDeleteOut>('DELETE', `/v1/pull-endpoints/${encodeURIComponent(endpointId)}/events/${encodeURIComponent(eventId)}`),
    deleteBatch: (endpointId: string, eventIds: readonly string[]) =>
      this.request<PullEventDeleteBatchOut>('POST', `/v1/pull-endpoints/${encodeURIComponent(endpointId)}/events/delete-batch`, {
        body: { message_ids: eventIds },
      }),
    deleteAll: (endpointId: string, params: PullEventFilterParams = {}) =>
      this.request<PullDeleteAllOut>('POST', `/v1/pull-endpoints/${encodeURIComponent(endpointId)}/events/delete-all`, { body: params }),
  };

  /**
   * Outbound messages. `create` sends `idempotencyKey` as the Idempotency-Key header: a repeat answers
   * the first message, a different request under the same key rejects with IDEMPOTENCY_CONFLICT.
   */
  readonly messages = {
    create: (body: MessageCreateIn, options: { idempotencyKey?: string } = {}) =>
      this.request<MessageCreateOut>('POST', '/v1/messages', { body, ...idempotencyHeader(options.idempotencyKey) }),
    get: (id: string, options: CallOptions = {}) => this.request<MessageOut>('GET', `/v1/messages/${encodeURIComponent(id)}`, options),
    attempts: (id: string) => this.request<AttemptOut[]>('GET', `/v1/messages/${encodeURIComponent(id)}/attempts`),
    retry: (id: string) => this.request<MessageRetryOut>('POST', `/v1/messages/${encodeURIComponent(id)}/retry`),
    delete: (id: string) => this.request<MessageDeleteOut>('DELETE', `/v1/messages/${encodeURIComponent(id)}`),
    deleteBatch: (messageIds: readonly string[]) =>
      this.request<MessageDeleteBatchOut>('POST', '/v1/messages/delete-batch', { body: { message_ids: messageIds } }),
  };

  /**
   * Events, fanned out to the endpoints subscribed to them. `create` sends `idempotencyKey` as the
   * Idempotency-Key header: a repeat answers the first event without a second fan-out.
   */
  readonly events = {
    create: (body: EventCreateIn, options: { idempotencyKey?: string } = {}) =>
      this.request<EventCreateOut>('POST', '/v1/events', { body, ...idempotencyHeader(options.idempotencyKey) }),
    get: (id: string, options: CallOptions = {}) => this.request<EventOut>('GET', `/v1/events/${encodeURIComponent(id)}`, options),
    /** Newest first; pass `meta.next_cursor` back as `cursor`. */
    list: (query: Partial<EventsQuery> = {}) => this.request<EventSummaryOut[], PageMetaWithMore>('GET', '/v1/events', { query }),
  };

  /**
   * Bulk jobs (docs/api.md, Bulk retries and replays): outbound retries started here, inbound
   * replays started with `inboundEndpoints.startReplay`; both are read, listed and cancelled here.
   */
  readonly bulkJobs = {
    /** How many messages a retry with this filter would take now; starts nothing. */
    countRetry: (filter: BulkRetryFilterIn) => this.request<BulkJobEstimateOut>('POST', '/v1/bulk-retries', { body: { filter, dry_run: true } }),
    startRetry: (filter: BulkRetryFilterIn) => this.request<BulkJobOut>('POST', '/v1/bulk-retries', { body: { filter, dry_run: false } }),
    get: (id: string, options: CallOptions = {}) => this.request<BulkJobOut>('GET', `/v1/bulk-retries/${encodeURIComponent(id)}`, options),
    /** Newest first; pass `meta.next_cursor` back as `cursor`. */
    list: (query: Partial<BulkJobListQuery> = {}) => this.request<BulkJobOut[], PageMetaWithMore>('GET', '/v1/bulk-retries', { query }),
    cancel: (id: string) => this.request<BulkJobOut>('POST', `/v1/bulk-retries/${encodeURIComponent(id)}/cancel`),
  };

  /** Outbound delivery logs, newest first; pass `meta.next_cursor` back as `cursor`. */
  readonly logs = {
    list: (query: Partial<LogsQuery> = {}) => this.request<LogRecordOut[], PageMetaWithMore>('GET', '/v1/logs', { query }),
  };

  /**
   * The event-type catalogue, hookrelay's own `hookrelay.…` types included (docs/api.md, Event
   * types). Lists go by name; pass `meta.next_cursor` back as `cursor`.
   */
  readonly eventTypes = {
    create: (body: EventTypeCreateIn) => this.request<EventTypeOut>('POST', '/v1/event-types', { body }),
    list: (query: Partial<EventTypeListQuery> = {}) => this.request<EventTypeOut[], PageMeta>('GET', '/v1/event-types', { query }),
    get: (name: string) => this.request<EventTypeOut>('GET', `/v1/event-types/${encodeURIComponent(name)}`),
    update: (name: string, body: EventTypeUpdateIn) =>
      this.request<EventTypeOut>('PATCH', `/v1/event-types/${encodeURIComponent(name)}`, { body }),
    delete: (name: string) => this.request<EventTypeDeleteOut>('DELETE', `/v1/event-types/${encodeURIComponent(name)}`),
  };

  /**
   * Portal links (docs/api.md, Portal links): made and revoked with an API key; `session` is the
   * one call of a portal token of its own.
   */
  readonly portalLinks = {
    create: (body: PortalLinkCreateIn) => this.request<PortalLinkCreateOut>('POST', '/v1/portal-links', { body }),
    /** Newest first; pass `meta.next_cursor` back as `cursor`. */
    list: (query: Partial<PortalLinkListQuery> = {}) => this.request<PortalLinkOut[], PageMeta>('GET', '/v1/portal-links', { query }),
    revoke: (id: string) => this.request<PortalLinkRevokeOut>('DELETE', `/v1/portal-links/${encodeURIComponent(id)}`),
    session: () => this.request<PortalSessionOut>('GET', '/v1/portal/session'),
  };

  /** Release the connection pool (only when the client created it). */
  async close(): Promise<void> {
    await this.dispatcher?.close();
  }
}
