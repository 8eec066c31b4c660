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
  body: Buffer;
}

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
    };
  };
  try {
    const response = await request(outgoing.url, {
      dispatcher: agent,
      method: outgoing.method,
      headers: outgoing.headers,
      ...(outgoing.body.length > 0 || !['GET', 'HEAD'].includes(outgoing.method) ? { body: outgoing.body } : {}),
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
    };
  } catch (error) {
    return failure(error);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onShutdown);
  }
}
