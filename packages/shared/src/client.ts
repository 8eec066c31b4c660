import { Agent, request, type Dispatcher } from 'undici';
import type { ErrorCode, ErrorDetail } from './errors.js';
import { isErrorCode } from './errors.js';
import type { EndpointListQuery, PauseOut, EndpointDeleteOut } from './schemas/common.js';
import type {
  EndpointCreateIn,
  EndpointCreateOut,
  EndpointOut,
  EndpointSummaryOut,
  EndpointUpdateIn,
  RotateSecretOut,
} from './schemas/outbound-endpoints.js';
import type { WhoamiOut } from './schemas/whoami.js';
import type { Meta, PageMeta } from './envelope.js';

/** An answer of the API in the error envelope. `data` is set only where the API sends it (delete-all). */
export class HookrelayApiError extends Error {
  override readonly name = 'HookrelayApiError';
  constructor(
    readonly code: ErrorCode | string,
    message: string,
    readonly status: number,
    readonly requestId: string | undefined,
    readonly details: ErrorDetail[] | undefined = undefined,
    readonly data: unknown = undefined,
    readonly retryAfterSeconds: number | undefined = undefined,
  ) {
    super(message);
  }

  get isKnownCode(): boolean {
    return isErrorCode(this.code);
  }
}

/** The API could not be reached, or answered something that is not the API's envelope. */
export class HookrelayNetworkError extends Error {
  override readonly name = 'HookrelayNetworkError';
  constructor(
    message: string,
    readonly url: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

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

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ApiResponse<T, M = Meta> {
  data: T;
  meta: M;
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

function buildUrl(base: string, path: string, query?: Record<string, QueryValue>): string {
  const url = new URL(path.replace(/^\//, ''), base.endsWith('/') ? base : `${base}/`);
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    url.searchParams.set(key, Array.isArray(value) ? value.join(',') : String(value));
  }
  return url.toString();
}

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
  private readonly dispatcher: Dispatcher;

  constructor(options: ClientOptions) {
    this.apiUrl = options.apiUrl;
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.userAgent = options.userAgent ?? 'hookrelay-client/0.1';
    this.dispatcher = options.dispatcher ?? new Agent({ connect: { timeout: 10_000 } });
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
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method,
        headers,
        body,
        dispatcher: this.dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new HookrelayNetworkError(`could not reach ${this.apiUrl}: ${reason}`, url, { cause });
    }
    const text = await response.body.text();
    let parsed: unknown;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const envelope = parsed as { data?: T; meta?: M; error?: { code?: string; message?: string; details?: ErrorDetail[] } } | undefined;
    if (response.statusCode >= 400 || envelope?.error !== undefined) {
      if (envelope?.error?.code === undefined) {
        throw new HookrelayNetworkError(`${method} ${url} answered HTTP ${response.statusCode} without an API error envelope`, url);
      }
      const meta = envelope.meta as { request_id?: string } | undefined;
      const retryAfter = Number(response.headers['retry-after']);
      throw new HookrelayApiError(
        envelope.error.code,
        envelope.error.message ?? envelope.error.code,
        response.statusCode,
        meta?.request_id,
        envelope.error.details,
        envelope.data,
        Number.isFinite(retryAfter) ? retryAfter : undefined,
      );
    }
    if (envelope === undefined || !('data' in envelope)) {
      throw new HookrelayNetworkError(`${method} ${url} answered HTTP ${response.statusCode} without an API envelope`, url);
    }
    return { data: envelope.data as T, meta: envelope.meta as M, status: response.statusCode, headers: response.headers };
  }

  whoami() {
    return this.request<WhoamiOut>('GET', '/v1/whoami');
  }

  readonly endpoints = {
    create: (body: EndpointCreateIn) => this.request<EndpointCreateOut>('POST', '/v1/endpoints', { body }),
    list: (query: Partial<EndpointListQuery> = {}) =>
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

  /** Release the connection pool (only when the client created it). */
  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}
