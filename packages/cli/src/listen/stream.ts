import type { IncomingMessage } from 'node:http';
import {
  RESULT_ACK_BATCHES_HEADER,
  RESULT_ACK_BATCHES_VALUE,
  RESULT_ACKS_MAX,
  RESULT_ACK_OUTCOMES,
  StreamServerFrame,
  type CliMessageOut,
  type ListenFilter,
  type RejectionOut,
  type ResultAckOutcome,
  type StreamMessageFrame,
  type StreamResultAckFrame,
  type StreamResultAcksFrame,
  type StreamResultFrame,
} from '@hookrelay/shared';
import { UUID_PATTERN } from '@hookrelay/shared/ids';
import { HookrelayApiError } from '@hookrelay/shared/client';
import { KEY_REVOKED_CLOSE, STREAM_FRAME_MAX_BYTES } from '@hookrelay/shared/sockets';
import WebSocket from 'ws';
import { errorText } from './error-text.js';
import type { StreamConnection, StreamEnd, StreamHandlers } from './ports.js';

export interface StreamOptions {
  apiUrl: string;
  apiKey: string;
  endpointId: string;
  after: string | null;
  filter?: ListenFilter | undefined;
  userAgent: string;
  handshakeTimeoutMs: number;
  /** No ping or frame for this long: the connection is dead even without a FIN; it is terminated. */
  heartbeatTimeoutMs: number;
  /** No ping or frame for this long: warn (once per silence). */
  heartbeatWarnMs: number;
}

/** API answers (an upgrade's, a listen page's) that no retry can change: bad key, unknown or forward-mode endpoint. */
export const FATAL_STATUSES: ReadonlySet<number> = new Set([400, 401, 403, 404, 410]);
const MAX_ERROR_BODY = 64 * 1024;

/** `ws(s)://host[/prefix]/v1/inbound-endpoints/{id}/stream[?after=…][&events=…][&path=…]`, from the API address. */
export function streamUrl(apiUrl: string, endpointId: string, after: string | null, filter: ListenFilter = {}): string {
  const base = apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`;
  const url = new URL(`v1/inbound-endpoints/${encodeURIComponent(endpointId)}/stream`, base);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  if (after !== null) url.searchParams.set('after', after);
  if (filter.events !== undefined) url.searchParams.set('events', filter.events);
  if (filter.path !== undefined) url.searchParams.set('path', filter.path);
  return url.toString();
}

function readErrorBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const done = (): void => {
      clearTimeout(timer);
      resolve(text);
    };
    const timer = setTimeout(done, 5_000);
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      if (text.length < MAX_ERROR_BODY) text += chunk;
    });
    res.on('end', done);
    res.on('error', done);
    res.on('close', done);
  });
}

/** The API's error envelope in an upgrade answer, if that is what it is. */
function apiError(status: number, text: string, retryAfter: string | undefined): HookrelayApiError | undefined {
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown }; meta?: { request_id?: unknown } };
    const code = parsed.error?.code;
    if (typeof code !== 'string') return undefined;
    const message = typeof parsed.error?.message === 'string' ? parsed.error.message : code;
    const requestId = typeof parsed.meta?.request_id === 'string' ? parsed.meta.request_id : undefined;
    const retryAfterSeconds = retryAfter !== undefined && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined;
    return new HookrelayApiError(code, message, status, requestId, Array.isArray(parsed.error?.details) ? (parsed.error.details as never) : undefined, undefined, retryAfterSeconds);
  } catch {
    return undefined;
  }
}

/**
 * A message frame as far as the listener reads it: checked by hand rather than by the schema, since
 * it comes once per webhook, and so that a message of an older server (without a field added since)
 * is still forwarded.
 */
function isMessageFrame(frame: { type: unknown; message?: unknown }): frame is StreamMessageFrame {
  const m = frame.message as Partial<CliMessageOut> | null | undefined;
  return (
    typeof m === 'object' &&
    m !== null &&
    typeof m.message_id === 'string' &&
    typeof m.method === 'string' &&
    typeof m.path === 'string' &&
    typeof m.query === 'string' &&
    typeof m.payload_sha256 === 'string' &&
    Array.isArray(m.raw_headers)
  );
}

const ACK_OUTCOMES: ReadonlySet<unknown> = new Set(RESULT_ACK_OUTCOMES);

/**
 * An acknowledgement frame, checked by hand to the letter of its shared schema (the tests hold the
 * two in step): it too comes once per webhook, where parsing with the schema costs more than the
 * rest of taking it.
 */
function isResultAckFrame(frame: { type: unknown }): frame is StreamResultAckFrame {
  return isAck(frame);
}

function isAck(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const f = value as { result_id?: unknown; outcome?: unknown; message?: unknown };
  return typeof f.result_id === 'string' && UUID_PATTERN.test(f.result_id) && ACK_OUTCOMES.has(f.outcome) && (f.message === undefined || typeof f.message === 'string');
}

/** A batch of acknowledgements, checked by hand as one is, to the letter of its shared schema. */
function isResultAcksFrame(frame: { type: unknown }): frame is StreamResultAcksFrame {
  const { acks } = frame as { acks?: unknown };
  return Array.isArray(acks) && acks.length >= 1 && acks.length <= RESULT_ACKS_MAX && acks.every(isAck);
}

/**
 * A frame of the stream's server side, or undefined for anything else (not JSON, a type this CLI
 * does not know, a frame that breaks its schema). Every other frame is checked against the shared
 * schema: a cursor the listener would act on is never a malformed one.
 */
export function readServerFrame(text: string): StreamServerFrame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const frame = value as { type: unknown; message?: unknown };
  if (frame.type === 'message') return isMessageFrame(frame) ? frame : undefined;
  if (frame.type === 'result_ack') return isResultAckFrame(frame) ? frame : undefined;
  if (frame.type === 'result_acks') return isResultAcksFrame(frame) ? frame : undefined;
  const checked = StreamServerFrame.safeParse(value);
  return checked.success ? checked.data : undefined;
}

/**
 * One WebSocket connection to the endpoint's stream. The API key travels in the upgrade's
 * Authorization header. The server pings every 15 s; any ping or frame counts as a heartbeat, and a
 * connection silent for `heartbeatTimeoutMs` is terminated (a peer that vanished without a FIN).
 */
export function openStream(options: StreamOptions, handlers: StreamHandlers): StreamConnection {
  const socket = new WebSocket(streamUrl(options.apiUrl, options.endpointId, options.after, options.filter), {
    // Acknowledgements in batches, one frame per commit (a server that predates them ignores the header).
    headers: { authorization: `Bearer ${options.apiKey}`, 'user-agent': options.userAgent, [RESULT_ACK_BATCHES_HEADER]: RESULT_ACK_BATCHES_VALUE },
    handshakeTimeout: options.handshakeTimeoutMs,
    perMessageDeflate: false,
    followRedirects: false,
    // A message frame holds a whole body as base64: up to the largest ingest limit a server allows.
    maxPayload: STREAM_FRAME_MAX_BYTES,
  });
  let opened = false;
  let openedAt = 0;
  let lastHeard = Date.now();
  let warned = false;
  let cause: 'server' | 'heartbeat' | 'client' = 'server';
  let settled = false;
  let resultAcks = false;
  let resolveEnded!: (end: StreamEnd) => void;
  const ended = new Promise<StreamEnd>((resolve) => (resolveEnded = resolve));
  let closeTimer: NodeJS.Timeout | undefined;

  const heartbeat = setInterval(
    () => {
      if (!opened || settled) return;
      const silent = Date.now() - lastHeard;
      if (silent >= options.heartbeatTimeoutMs) {
        cause = 'heartbeat';
        socket.terminate();
      } else if (silent >= options.heartbeatWarnMs && !warned) {
        warned = true;
        handlers.silent(silent);
      }
    },
    Math.max(50, Math.min(1000, Math.floor(options.heartbeatTimeoutMs / 5))),
  );

  const finish = (end: StreamEnd): void => {
    if (settled) return;
    settled = true;
    clearInterval(heartbeat);
    if (closeTimer !== undefined) clearTimeout(closeTimer);
    resolveEnded(end);
  };
  const heard = (): void => {
    const now = Date.now();
    if (opened && !settled && now - lastHeard >= options.heartbeatTimeoutMs) handlers.stalled?.(now - lastHeard);
    lastHeard = now;
    warned = false;
  };

  socket.on('unexpected-response', (request, response) => {
    const status = response.statusCode ?? 0;
    void readErrorBody(response).then((text) => {
      const retryAfter = response.headers['retry-after'];
      const error = apiError(status, text, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
      if (error !== undefined && FATAL_STATUSES.has(status)) finish({ kind: 'fatal', error });
      else if (error !== undefined && status === 429) finish({ kind: 'limited', error });
      else finish({ kind: 'refused', status, message: error?.message ?? `HTTP ${status}` });
      request.destroy();
      socket.terminate();
    });
  });
  socket.on('open', () => {
    // The upgrade's time is no silence of the open stream.
    openedAt = Date.now();
    lastHeard = openedAt;
    warned = false;
    opened = true;
  });
  socket.on('ping', heard);
  socket.on('pong', heard);
  socket.on('message', (data, isBinary) => {
    heard();
    if (isBinary || settled) return;
    const frame = readServerFrame(data.toString());
    switch (frame?.type) {
      case 'ready':
        resultAcks = frame.result_acks === true;
        handlers.ready(frame.cursor?.toLowerCase() ?? null, resultAcks, frame.latest_message_id === undefined ? undefined : (frame.latest_message_id?.toLowerCase() ?? null));
        break;
      case 'message':
        handlers.message(frame.message, frame.replay === true);
        break;
      case 'cursor':
        handlers.cursor?.(frame.cursor.toLowerCase());
        break;
      case 'result_ack':
        handlers.resultAck?.(frame.result_id.toLowerCase(), frame.outcome, frame.message);
        break;
      case 'result_acks':
        for (const ack of frame.acks) handlers.resultAck?.(ack.result_id.toLowerCase(), ack.outcome, ack.message);
        break;
      case 'rejection':
        handlers.rejection?.(frame.rejection);
        break;
    }
  });
  socket.on('error', (error) => {
    // Before the upgrade completes this is the only news; after it, 'close' follows with the code.
    if (!opened) finish({ kind: 'unreachable', message: errorText(error) });
  });
  socket.on('close', (code, reason) => {
    if (!opened) finish({ kind: 'unreachable', message: `the connection closed during the upgrade (${code})` });
    else if (code === KEY_REVOKED_CLOSE.code) finish({ kind: 'revoked', code, reason: reason.toString() });
    else finish({ kind: 'closed', code, reason: reason.toString(), openMs: Date.now() - openedAt, cause, heardAt: lastHeard });
  });

  return {
    ended,
    sendResult(frame) {
      if (socket.readyState !== WebSocket.OPEN) return false;
      if (resultAcks || frame.result_id === undefined) socket.send(JSON.stringify(frame));
      else {
        const { result_id: _resultId, ...withoutId } = frame;
        socket.send(JSON.stringify(withoutId));
      }
      return true;
    },
    close() {
      if (settled) return;
      cause = 'client';
      if (socket.readyState === WebSocket.CONNECTING) {
        socket.terminate();
        return;
      }
      socket.close(1000, 'listener stopping');
      // A peer that does not answer the close handshake is not waited for long.
      closeTimer = setTimeout(() => socket.terminate(), 2_000);
    },
  };
}
