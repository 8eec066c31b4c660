import type { Readable } from 'node:stream';
import { request, type Agent, type Dispatcher } from 'undici';
import { isBlockedAddressError } from '../security/ssrf.js';

/** Per-attempt limits (docs/api.md, How a delivery is sent). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** How much of a receiver's answer is kept with the attempt. */
export const RESPONSE_BODY_LIMIT_BYTES = 20 * 1024;

export interface OutgoingRequest {
  url: string;
  method: Dispatcher.HttpMethod;
  headers: Record<string, string | string[]>;
  body: Buffer | StreamedBody;
  /** A forward-mode request whose sender's signature was made again now (ingest/resign.ts). */
  resigned?: boolean;
}

/**
 * A body read from its store while it is sent, never held whole: `size` bytes (the request's
 * Content-Length), from a fresh pass of `open()` for each attempt.
 */
export interface StreamedBody {
  size: number;
  open(): AsyncIterable<Uint8Array>;
}

export const isStreamedBody = (body: Buffer | StreamedBody): body is StreamedBody => !Buffer.isBuffer(body);

export interface SendResult {
  /** The HTTP status, or null when no answer came (refused, timed out, blocked…). */
  status: number | null;
  /** Response headers (lowercase names); empty without an answer. */
  headers: Record<string, string | string[] | undefined>;
  /** Up to RESPONSE_BODY_LIMIT_BYTES of the answer, as text. */
  body: string | null;
  /** From dispatch until the answer (headers and the recorded part of the body) was read. */
  latencyMs: number;
  /** Why it failed when there is no status; null otherwise. */
  error: string | null;
  /** The send was cut short by the caller (shutdown), not by the receiver or a timeout. */
  aborted: boolean;
  /**
   * A streamed body could not be read (before the request or while it was sent): what the
   * receiver answered, if anything, is not about this delivery. Null otherwise.
   */
  bodyError: unknown;
}

export class ShutdownAbort extends Error {
  override readonly name = 'ShutdownAbort';
}

/** A readable reason for a failed send, for `last_error` and the attempt row. */
export function describeSendError(error: unknown, timeoutMs: number, connectTimeoutMs: number): string {
  if (isBlockedAddressError(error)) {
    let current: unknown = error;
    while (current && typeof current === 'object' && (current as { code?: unknown }).code !== 'ERR_HOOKRELAY_BLOCKED_ADDRESS') current = (current as { cause?: unknown }).cause;
    return `blocked: ${(current as Error).message}`;
  }
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `connect timeout: no connection within ${connectTimeoutMs} ms`;
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return `timeout: no complete answer within ${timeoutMs} ms`;
    case 'ECONNREFUSED':
      return 'connection refused (ECONNREFUSED)';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return `connection closed by the receiver (${String(code)})`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `DNS lookup failed (${String(code)})`;
    default:
      break;
  }
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('DEPTH_ZERO') || code.startsWith('SELF_SIGNED'))) {
    return `TLS error: ${message} (${code})`;
  }
  return typeof code === 'string' ? `${message} (${code})` : message;
}

/**
 * Sends one delivery attempt over the shared Agent: no redirects (undici's `request` never follows
 * them), a connect timeout from the Agent, and one overall deadline covering connect, headers and the
 * recorded part of the body. Never throws: every outcome is a SendResult.
 */
export async function sendRequest(
  agent: Agent,
  outgoing: OutgoingRequest,
  options: { timeoutMs: number; connectTimeoutMs: number; signal?: AbortSignal },
): Promise<SendResult> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new Error('deadline')), options.timeoutMs);
  const onShutdown = () => deadline.abort(new ShutdownAbort('worker shutting down'));
  options.signal?.addEventListener('abort', onShutdown, { once: true });
  const started = performance.now();
  const elapsed = () => Math.max(0, Math.round(performance.now() - started));
  let bodyError: unknown = null;
  const failure = (error: unknown): SendResult => {
    const aborted = options.signal?.aborted === true;
    const timedOut = !aborted && deadline.signal.aborted;
    return {
      status: null,
      headers: {},
      body: null,
      latencyMs: elapsed(),
      error: aborted
        ? 'aborted: worker shutting down'
        : timedOut
          ? `timeout: no complete answer within ${options.timeoutMs} ms`
          : describeSendError(error, options.timeoutMs, options.connectTimeoutMs),
      aborted,
      bodyError,
    };
  };
  try {
    const source = outgoing.body;
    const streamed = isStreamedBody(source);
    // undici sends an async iterable piece by piece, waiting for the socket to drain after each
    // (its documented body types include AsyncIterable; its typings do not yet).
    const body = streamed ? ((await sendable(source, deadline.signal, (error) => (bodyError ??= error))) as unknown as Readable) : source;
    const response = await request(outgoing.url, {
      dispatcher: agent,
      method: outgoing.method,
      headers: streamed ? { ...outgoing.headers, 'content-length': String(source.size) } : outgoing.headers,
      ...(streamed || source.length > 0 || !['GET', 'HEAD'].includes(outgoing.method) ? { body } : {}),
      signal: deadline.signal,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        const room = RESPONSE_BODY_LIMIT_BYTES - size;
        chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
        size += Math.min(chunk.length, room);
        if (size >= RESPONSE_BODY_LIMIT_BYTES) break; // the rest is not read: the socket is dropped
      }
    } catch (error) {
      // The status arrived; a body cut short by the deadline or the receiver is still an answer.
      if (options.signal?.aborted) return failure(error);
    }
    return {
      status: response.statusCode,
      headers: response.headers,
      body: Buffer.concat(chunks, size).toString('utf8'),
      latencyMs: elapsed(),
      error: null,
      aborted: false,
      bodyError,
    };
  } catch (error) {
    return failure(error);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onShutdown);
  }
}

/**
 * A streamed body as undici sends it. Its first piece is read before the request goes out, so that
 * a body missing from its store fails before any byte reaches the receiver; a piece that cannot be
 * read later, or a body that ends short of (or runs past) its size, fails the request midway. Every
 * such failure is passed to `onError`; the store's stream is closed however the request ends.
 */
async function sendable(body: StreamedBody, signal: AbortSignal, onError: (error: unknown) => void): Promise<AsyncIterable<Uint8Array>> {
  const pieces = body.open()[Symbol.asyncIterator]();
  let first: IteratorResult<Uint8Array>;
  try {
    first = await untilAborted(pieces.next(), signal);
  } catch (error) {
    if (!signal.aborted) onError(error);
    // A read still pending ends first: the stream is closed after it.
    pieces.return?.().catch(() => undefined);
    throw error;
  }
  return (async function* () {
    let sent = 0;
    try {
      for (let next = first; next.done !== true; next = await pieces.next()) {
        sent += next.value.length;
        if (sent > body.size) throw new Error(`the body runs past its ${body.size} bytes`);
        yield next.value;
      }
    } catch (error) {
      onError(error);
      throw error;
    } finally {
      await pieces.return?.().catch(() => undefined);
    }
    if (sent !== body.size) {
      const error = new Error(`the body ended at byte ${sent} of its ${body.size}`);
      onError(error);
      throw error;
    }
  })();
}

/** `promise`, or a rejection with the signal's reason once it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
