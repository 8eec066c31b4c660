import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Config } from './config.js';

/**
 * How much log text may wait for stdout. A reader that stops reading (`hookrelay-server start |
 * less`, a stuck log shipper) fills the pipe; a writer that waits for it would hold every request and
 * the shutdown with it. Past this bound lines are dropped instead, and counted
 * (`hookrelay_log_lines_dropped_total`).
 */
export const LOG_BUFFER_CHARS = 4 * 1024 * 1024;
const FLUSH_POLL_MS = 10;

let droppedLines = 0;

/** Log lines dropped by this process because stdout did not take them (see LOG_BUFFER_CHARS). */
export function droppedLogLines(): number {
  return droppedLines;
}

/**
 * Stdout as the log's destination. Node writes to a pipe or socket without blocking and queues what
 * the reader has not taken yet; the queue is bounded here. (pino's own destination writes
 * synchronously and retries a full pipe forever; an asynchronous write from the thread pool would
 * block a pool thread instead, and the exit, which waits for the pool.) Files and terminals are
 * written synchronously by Node, as before.
 */
const stdoutLog = {
  write(text: string): void {
    const stdout = process.stdout;
    if (stdout.destroyed || stdout.writableLength + text.length > LOG_BUFFER_CHARS) {
      droppedLines++;
      return;
    }
    stdout.write(text);
  },
};

let stdoutErrorsIgnored = false;
/** A reader that went away (EPIPE) costs the lines, not the process. */
function ignoreStdoutErrors(): void {
  if (stdoutErrorsIgnored) return;
  stdoutErrorsIgnored = true;
  process.stdout.on('error', () => {});
}

/** Writes a plain line (not JSON) to stdout, queued with the log lines and bounded as they are. */
export function writeStdoutLine(line: string): void {
  ignoreStdoutErrors();
  stdoutLog.write(`${line}\n`);
}

/**
 * Resolves once what was written to stdout so far has left the process, or after `timeoutMs`: an
 * exiting process writes its last lines if stdout takes them, and exits all the same if it does not.
 */
export async function flushLogs(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (process.stdout.writableLength > 0 && !process.stdout.destroyed && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, FLUSH_POLL_MS));
  }
}

/** `%XX` escapes of characters that mean the same escaped or not (RFC 3986 §2.3). */
const ESCAPE = /%([0-9a-f]{2})/gi;
const UNRESERVED = /^[A-Za-z0-9._~-]$/;
/** An API key, whatever follows `hr_`. */
const API_KEY_SHAPE = /hr_[A-Za-z0-9_-]+/gi;
/** An ingest token is 32 hex characters; a run of 32 or more anywhere is taken for one. */
const TOKEN_SHAPE = /[0-9a-f]{32,}/gi;
/** Outbound endpoint ids (`ep_` + 32 hex) are names an operator looks for, not secrets. */
const ENDPOINT_ID_BEFORE = /(?:^|[^A-Za-z0-9_])ep_$/;
/**
 * The secret segment after an ingest prefix: `/in/<token>`, `/pull/<id>/<token>`, in any case, with
 * repeated or backward slashes and `;parameters`, at any depth (`/./in/…`, `/in/../in/…`).
 */
const INGEST_SECRET_SEGMENT = /((?:^|[/\\])(?:in(?:;[^/\\?]*)?[/\\]+|pull(?:;[^/\\?]*)?[/\\]+[^/\\?]*[/\\]+))[^/\\?]*/gi;
/** A path that looks like an ingest URL, routed or not. */
const INGEST_PATH = /(?:^|[/\\])(?:in|pull)(?:$|[/\\;%#])/i;
const TICKET_PARAM = /((?:^|[?&;])ticket=)[^&;]*/gi;

function redactShapes(text: string): string {
  return text.replace(API_KEY_SHAPE, 'hr_[redacted]').replace(TOKEN_SHAPE, (run: string, offset: number, whole: string) =>
    run.length === 32 && ENDPOINT_ID_BEFORE.test(whole.slice(Math.max(0, offset - 4), offset)) ? run : '[redacted]',
  );
}

/**
 * A URL as it may be logged. Secrets are recognised by their shape wherever they are, because the
 * request line is logged before routing and a URL that routes nowhere still carries them: API keys
 * (`hr_…`) and anything shaped like an ingest token (32 hex), the segment after an ingest prefix, the
 * whole query of a URL that looks like an ingest URL (a static token may travel under any name), and
 * stream tickets. Escapes of plain characters are read first, so `%68r_…` is still a key.
 */
export function redactUrl(url: string): string {
  const plain = url.replace(ESCAPE, (escape: string, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : escape;
  });
  const q = plain.indexOf('?');
  const path = q === -1 ? plain : plain.slice(0, q);
  const redactedPath = redactShapes(path.replace(INGEST_SECRET_SEGMENT, '$1[redacted]'));
  if (q === -1) return redactedPath;
  if (INGEST_PATH.test(path) || redactedPath !== path) return `${redactedPath}?[redacted]`;
  return `${redactedPath}${redactShapes(plain.slice(q)).replace(TICKET_PARAM, '$1[redacted]')}`;
}

/** The server's pino settings: JSON at the configured level to stdout (see stdoutLog). */
export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  ignoreStdoutErrors();
  return {
    level: config.logLevel,
    stream: stdoutLog,
    // "level":"info" rather than pino's 30: what a reader and most log shippers expect.
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
    serializers: {
      // The client's address (a trusted proxy's forwarded one, app.ts), else the peer's.
      req: (req: { method: string; url: string; ip?: string; clientAddress?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        remoteAddress: req.clientAddress ?? req.ip,
      }),
      // @fastify/websocket logs the raw URL of an upgrade it refuses as `path` (an ingest URL too).
      path: (value: unknown) => (typeof value === 'string' ? redactUrl(value) : value),
    },
  } as FastifyServerOptions['logger'];
}

/**
 * One access line per request, written when it is answered: method, URL (through the `req`
 * serializer, secrets cut out), peer address, status, duration and request id. Fastify's default
 * writes two (incoming, completed), and the first one holds no status.
 */
export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) super.requestCompleted(error, request, reply);
    else request.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
