import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { rootCertificates } from 'node:tls';
import type { CliMessageOut } from '@hookrelay/shared';
import { sha256Hex } from '@hookrelay/shared/digest';
import { Agent, type Dispatcher } from 'undici';
import { formatDuration } from './duration.js';
import { errorCode, errorText } from './error-text.js';
import { forwardHeaders } from './forward-headers.js';
import type { CapturedResponse, ForwardOutcome } from './ports.js';
import { chooseRoute, type ForwardRoute } from './routes.js';
import { sleep as defaultSleep, type Sleep } from './sleep.js';
import { forwardPath } from './target.js';

/** The certificates an https:// app is checked against (`--ca-file`, `--insecure`). */
export interface TlsSettings {
  /** PEM of `--ca-file`, trusted besides the system's CAs. */
  ca?: Buffer | undefined;
  /** `--insecure`: no certificate check (loopback targets only). */
  insecure: boolean;
}

/** The message fields the forwarder reads (a stream frame's or a listen page's message). */
export type ForwardableMessage = Pick<
  CliMessageOut,
  'message_id' | 'method' | 'path' | 'query' | 'raw_headers' | 'payload_sha256' | 'size_bytes' | 'body' | 'body_encoding' | 'body_error' | 'body_url'
> & { event_type?: string | null | undefined };

/** A body the server sends by reference, as its download arrives. */
export interface BodyStream extends AsyncIterable<Buffer> {
  destroy(): void;
}

/**
 * The download of a body sent by reference failed. `unreachable`: no answer from the API (or a
 * proxy's), retried like an unreachable app; `server`: the API answered with an error (its payload
 * store could not be read), retried a few times; `refused`: never retried.
 */
export class BodyFetchError extends Error {
  readonly code: string;
  constructor(
    message: string,
    readonly kind: 'unreachable' | 'server' | 'refused',
  ) {
    super(message);
    this.code = { unreachable: 'BODY_FETCH_FAILED', server: 'BODY_FETCH_SERVER_ERROR', refused: 'BODY_FETCH_REFUSED' }[kind];
  }
}

/**
 * Downloads of a body that did not match its `payload_sha256`, or that the server answered with an
 * error, before the message is reported failed (the server's copy will not get better by waiting).
 */
export const MAX_BODY_MISMATCHES = 3;

/** Bounds of the captured headers, as the server stores them: 100 pairs, 16 KiB in all. */
export const MAX_CAPTURED_HEADERS = 100;
export const MAX_CAPTURED_HEADER_BYTES = 16 * 1024;
/** What is read of an answer's body beyond the captured bytes, to free the connection, before it is cut. */
const DRAIN_LIMIT = 4 * 1024 * 1024;

/** Node's header object as `[name, value]` pairs, within the bounds above. */
export function capturedHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): [string, string][] {
  const pairs: [string, string][] = [];
  let bytes = 0;
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      bytes += Buffer.byteLength(name) + Buffer.byteLength(one);
      if (pairs.length >= MAX_CAPTURED_HEADERS || bytes > MAX_CAPTURED_HEADER_BYTES) return pairs;
      pairs.push([name, one]);
    }
  }
  return pairs;
}

export interface HoldInfo {
  messageId: string;
  error: string;
  /** What failed: the app (unreachable), or the download of the body from the server. */
  cause?: 'app' | 'body';
  attempt: number;
  heldMs: number;
  nextRetryMs: number;
  /** The route's target, for people. */
  target: string;
}

export interface ForwarderOptions {
  /** The first route that takes a message forwards it. */
  routes: readonly ForwardRoute[];
  preserveHost: boolean;
  /** Per attempt: the app's whole answer must come within this; 0: no limit. */
  timeoutMs: number;
  tls?: TlsSettings | undefined;
  /** How many bytes of each answer's body to keep (0: none, and no headers either). */
  captureResponseBytes?: number | undefined;
  /** How long one message may be held while the app is unreachable; undefined: without end. */
  maxWaitMs?: number | undefined;
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** The message again with a base64 body (after `payload_unavailable`, or a body embedded as JSON). */
  refetch?: (messageId: string) => Promise<ForwardableMessage | null>;
  /**
   * Opens the download of a body sent by reference (`body_url`): null when the server no longer has
   * it; throws a BodyFetchError otherwise.
   */
  openBody?: (bodyUrl: string) => Promise<BodyStream | null>;
  onHold?: (info: HoldInfo) => void;
  onResume?: (info: { messageId: string; heldMs: number; attempt: number; target: string }) => void;
  dispatcher?: Dispatcher;
  sleep?: Sleep;
}

/** Errors where nothing (usable) reached the app: it is down, restarting or not there yet. */
const RETRYABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  // The body's download from the server broke off or did not match: the body is fetched again.
  'BODY_FETCH_FAILED',
  'BODY_FETCH_SERVER_ERROR',
  'PAYLOAD_SHA256_MISMATCH',
]);

/** Failed downloads of a body that count towards MAX_BODY_MISMATCHES. */
const BOUNDED_BODY_FAILURES = new Set(['PAYLOAD_SHA256_MISMATCH', 'BODY_FETCH_SERVER_ERROR']);
const BODY_FAILURES = new Set(['BODY_FETCH_FAILED', ...BOUNDED_BODY_FAILURES]);

export function isRetryable(error: unknown): boolean {
  const code = errorCode(error);
  return code !== undefined && RETRYABLE_CODES.has(code);
}

type Body = { bytes: Buffer } | { url: string } | { error: string; refetch: boolean };

const NO_LONGER_STORED = 'the payload is no longer stored (deleted); nothing was forwarded';

/** The exact payload bytes of a message, where to download them, or why they cannot be had. */
export function messageBody(message: ForwardableMessage): Body {
  if (message.body_error !== undefined) return { error: 'the payload is unavailable on the server (storage error)', refetch: true };
  if (message.body === undefined) {
    if (typeof message.body_url === 'string') return { url: message.body_url };
    return message.size_bytes === 0 ? { bytes: Buffer.alloc(0) } : { error: NO_LONGER_STORED, refetch: false };
  }
  if (message.body_encoding === 'base64' && typeof message.body === 'string') return { bytes: Buffer.from(message.body, 'base64') };
  // A JSON body embedded as a value cannot give back the original bytes: ask for them.
  return { error: 'the payload came as JSON, not as its original bytes', refetch: true };
}

interface Attempt {
  status: number | null;
  latencyMs: number;
  error: unknown;
  response?: CapturedResponse | undefined;
}

const withCode = (message: string, code: string): Error => Object.assign(new Error(message), { code });

/**
 * The bytes of a download as they arrive, checked against the message's size and SHA-256: the last
 * chunk is held back until the download has ended and matched, so that the app never gets a
 * whole request with the wrong body (the request is cut instead). A failure is also left in
 * `failure`, since the request's own error may not be it.
 */
async function* checkedBody(source: BodyStream, sha256: string, size: number, failure: { error?: Error }): AsyncGenerator<Buffer> {
  const hash = createHash('sha256');
  let held: Buffer | null = null;
  let seen = 0;
  try {
    for await (const chunk of source) {
      seen += chunk.length;
      if (seen > size) break;
      hash.update(chunk);
      if (held !== null) yield held;
      held = chunk;
    }
  } catch (error) {
    failure.error = withCode(`the body's download from the server broke off after ${seen} of ${size} bytes (${errorText(error)})`, 'BODY_FETCH_FAILED');
    throw failure.error;
  }
  if (seen !== size) {
    failure.error = withCode(`the body's download from the server had ${seen > size ? 'more' : 'fewer'} bytes than its ${size}`, 'BODY_FETCH_FAILED');
    throw failure.error;
  }
  const actual = hash.digest('hex');
  if (actual !== sha256.toLowerCase()) {
    failure.error = withCode(`payload_sha256 mismatch (expected ${sha256}, got ${actual}): not forwarded`, 'PAYLOAD_SHA256_MISMATCH');
    throw failure.error;
  }
  if (held !== null) yield held;
}

/** Reads an answer's body: the first `keep` bytes are kept, the rest (up to a bound) read and dropped. */
async function readBody(body: AsyncIterable<Buffer>, keep: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let kept = 0;
  let seen = 0;
  for await (const chunk of body) {
    seen += chunk.length;
    if (kept < keep) {
      const part = chunk.length <= keep - kept ? chunk : chunk.subarray(0, keep - kept);
      chunks.push(part);
      kept += part.length;
    }
    if (seen > DRAIN_LIMIT) break;
  }
  return { bytes: Buffer.concat(chunks, kept), truncated: seen > kept };
}

/** The TLS options of connections to the app: `--ca-file` added to the system's CAs, or `--insecure`. */
function connectOptions(tls: TlsSettings | undefined): { ca?: string[]; rejectUnauthorized?: boolean } {
  if (tls === undefined) return {};
  if (tls.insecure) return { rejectUnauthorized: false };
  return tls.ca === undefined ? {} : { ca: [...rootCertificates, tls.ca.toString('utf8')] };
}

/**
 * Sends messages to the local app exactly as they were received: method, sub-path and query
 * appended to the target, the original header lines (less hop-by-hop ones) and the exact bytes,
 * checked against `payload_sha256` first. While the app cannot be reached it holds the message and
 * retries (250 ms doubling to 5 s), so that nothing is skipped; an HTTP answer of any status is final.
 */
export class Forwarder {
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly sleep: Sleep;

  constructor(private readonly options: ForwarderOptions) {
    this.ownsDispatcher = options.dispatcher === undefined;
    this.dispatcher =
      options.dispatcher ??
      new Agent({ connect: { timeout: 10_000, ...connectOptions(options.tls) }, autoSelectFamily: true, keepAliveTimeout: 4_000 });
    this.sleep = options.sleep ?? defaultSleep;
  }

  /**
   * Forwards one message. Resolves to null only when `signal` aborted while the message was held
   * (the app unreachable): it was not processed and must be delivered again on the next start.
   * An attempt already in flight is always finished.
   */
  async deliver(message: ForwardableMessage, signal: AbortSignal): Promise<ForwardOutcome | null> {
    const choice = chooseRoute(this.options.routes, message);
    if (choice === null) {
      const event = typeof message.event_type === 'string' ? `, event ${message.event_type}` : '';
      return { status: null, latencyMs: 0, error: `no route takes this message (path ${message.path}${event}): skipped`, attempt: 0, target: null };
    }
    const route = choice.route;
    const target = route.target;
    const first = messageBody(message);
    // Only a body the server could not give is asked for again (an await the usual message skips).
    const body = 'error' in first && first.refetch ? await this.refetchBody(message, first, signal) : first;
    if (body === null) return null;
    if ('error' in body) return { status: null, latencyMs: 0, error: body.error, attempt: 0, target: target.display };
    // A body sent by reference is checked as it streams (checkedBody).
    const actual = 'bytes' in body ? sha256Hex(body.bytes) : null;
    if (actual !== null && actual !== message.payload_sha256.toLowerCase()) {
      return {
        status: null,
        latencyMs: 0,
        error: `payload_sha256 mismatch (expected ${message.payload_sha256}, got ${actual}): not forwarded`,
        attempt: 0,
        target: target.display,
      };
    }

    const headers = forwardHeaders(message.raw_headers, {
      host: this.options.preserveHost ? null : target.host,
      bodyLength: 'bytes' in body ? body.bytes.length : message.size_bytes,
    });
    const path = forwardPath(target, choice.path, message.query);
    const retryMax = this.options.retryMaxMs ?? 5_000;
    let delay = this.options.retryInitialMs ?? 250;
    const heldSince = performance.now();
    let attempt = 0;
    let badDownloads = 0;
    for (;;) {
      attempt += 1;
      let result: Attempt;
      if ('bytes' in body) result = await this.send(target.origin, message.method, path, headers, body.bytes);
      else {
        const streamed = await this.sendReferenced(message, body.url, target.origin, path, headers);
        // Nothing reached the app: reported as a message whose body is gone, or as the refusal.
        if ('final' in streamed) return { status: null, latencyMs: 0, error: streamed.final, attempt: attempt - 1, target: target.display };
        result = streamed;
        if (BOUNDED_BODY_FAILURES.has(errorCode(result.error) ?? '') && ++badDownloads >= MAX_BODY_MISMATCHES) {
          return { status: null, latencyMs: result.latencyMs, error: errorText(result.error), attempt, target: target.display };
        }
      }
      if (result.error === null || !isRetryable(result.error)) {
        if (attempt > 1) this.options.onResume?.({ messageId: message.message_id, heldMs: Math.round(performance.now() - heldSince), attempt, target: target.display });
        return {
          status: result.status,
          latencyMs: result.latencyMs,
          error: result.error === null ? null : errorText(result.error),
          attempt,
          target: target.display,
          response: result.response,
        };
      }
      const heldMs = performance.now() - heldSince;
      const maxWait = this.options.maxWaitMs;
      if (maxWait !== undefined && heldMs >= maxWait) {
        return {
          status: null,
          latencyMs: result.latencyMs,
          error: `${errorText(result.error)} (gave up after ${formatDuration(heldMs)} and ${attempt} attempts: --max-wait)`,
          attempt,
          target: target.display,
        };
      }
      const wait = maxWait === undefined ? delay : Math.min(delay, Math.max(0, maxWait - heldMs));
      const cause = BODY_FAILURES.has(errorCode(result.error) ?? '') ? 'body' : 'app';
      this.options.onHold?.({ messageId: message.message_id, error: errorText(result.error), cause, attempt, heldMs: Math.round(heldMs), nextRetryMs: wait, target: target.display });
      if (!(await this.sleep(wait, signal))) return null;
      delay = Math.min(delay * 2, retryMax);
    }
  }

  private async refetchBody(message: ForwardableMessage, first: Body, signal: AbortSignal): Promise<Body | null> {
    let body = first;
    // A storage hiccup on the server: ask for the message again a few times before giving up.
    for (let tries = 0; 'error' in body && body.refetch && this.options.refetch !== undefined && tries < 3; tries++) {
      if (tries > 0 && !(await this.sleep(1000 * tries, signal))) return null;
      const again = await this.options.refetch(message.message_id).catch(() => null);
      if (again !== null) body = messageBody(again);
    }
    return body;
  }

  /**
   * One attempt with a body sent by reference: its download opened, streamed to the app as it
   * arrives, checked as it goes. `final`: nothing was sent and nothing will be (the body is gone,
   * or its download is refused); otherwise the attempt, whose error is the download's when it failed.
   */
  private async sendReferenced(
    message: ForwardableMessage,
    bodyUrl: string,
    origin: string,
    path: string,
    headers: string[],
  ): Promise<Attempt | { final: string }> {
    const open = this.options.openBody;
    if (open === undefined) return { final: 'the body was sent by reference, and this forwarder cannot download it: nothing was forwarded' };
    const started = performance.now();
    let source: BodyStream | null;
    try {
      source = await open(bodyUrl);
    } catch (error) {
      if (error instanceof BodyFetchError && error.kind === 'refused') return { final: `${error.message}; nothing was forwarded` };
      return { status: null, latencyMs: Math.round(performance.now() - started), error };
    }
    if (source === null) return { final: NO_LONGER_STORED };
    const failure: { error?: Error } = {};
    const body = Readable.from(checkedBody(source, message.payload_sha256, message.size_bytes, failure), { objectMode: false });
    try {
      const result = await this.send(origin, message.method, path, headers, body);
      // The app's answer is final, even if the download broke off after it.
      return result.status === null && failure.error !== undefined ? { ...result, error: failure.error } : result;
    } finally {
      body.destroy();
      source.destroy();
    }
  }

  private async send(origin: string, method: string, path: string, headers: string[], bytes: Buffer | Readable): Promise<Attempt> {
    const started = performance.now();
    // 0 is undici's "no limit" too: a developer may sit on a breakpoint as long as they like.
    const timeoutMs = this.options.timeoutMs;
    // undici's own timers are cheap but tick about once a second: below that, an abort signal.
    const deadline = timeoutMs > 0 && timeoutMs < 1000 ? AbortSignal.timeout(timeoutMs) : undefined;
    const keep = this.options.captureResponseBytes ?? 0;
    try {
      const response = await this.dispatcher.request({
        origin,
        path,
        method: method as Dispatcher.HttpMethod,
        headers,
        body: Buffer.isBuffer(bytes) && bytes.length === 0 ? null : bytes,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: deadline,
      });
      // The answer is read to its end (what is not captured is dropped): the connection is then free
      // for the next message. The status is the app's answer even if its body breaks off: never send
      // the message twice for that.
      if (keep === 0) {
        await response.body.dump({ limit: DRAIN_LIMIT }).catch(() => {});
        return { status: response.statusCode, latencyMs: Math.round(performance.now() - started), error: null };
      }
      const read = await readBody(response.body, keep).catch(() => ({ bytes: Buffer.alloc(0), truncated: true }));
      if (!response.body.destroyed) response.body.destroy();
      return {
        status: response.statusCode,
        latencyMs: Math.round(performance.now() - started),
        error: null,
        response: { headers: capturedHeaders(response.headers), body: read.bytes, truncated: read.truncated },
      };
    } catch (error) {
      const latencyMs = Math.round(performance.now() - started);
      const code = errorCode(error);
      if (deadline?.aborted === true || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
        // It may have reached the app: final, like an error status, never sent twice.
        return { status: null, latencyMs, error: Object.assign(new Error(`no answer within ${formatDuration(timeoutMs)} (--timeout)`), { code: 'TIMEOUT' }) };
      }
      return { status: null, latencyMs, error };
    }
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.destroy().catch(() => {});
  }
}
