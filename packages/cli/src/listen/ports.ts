import type { CliMessageOut, RejectionOut, ResultAckOutcome, StreamResultFrame } from '@hookrelay/shared';
import type { HookrelayApiError } from '@hookrelay/shared/client';
import type { CapturedResponse, DeliveryRecord, GapReport } from '../format/listen.js';

export type { CapturedResponse, DeliveryRecord, GapReport };

/**
 * What the listener needs of the world and tells it: the server (HTTP and the stream), the app, the
 * cursor file and the output, with the timings it runs by. The modules around the listener (the
 * forwarder, the stream, the cursor store, the output and its formatters, the flags) meet it here.
 */

export type TransportMode = 'auto' | 'ws' | 'poll';
export type TransportName = 'websocket' | 'polling';

/** The cursor before every UUIDv7: `after=` it means "from the endpoint's first message". */
export const ZERO_CURSOR = '00000000-0000-7000-8000-000000000000';

/** What the listener needs of the server. */
export interface ListenApi {
  /** The endpoint's newest message id (null when it has none), from GET /v1/inbound-endpoints/{id}; `signal` ends the request. */
  latestMessageId(signal?: AbortSignal): Promise<string | null>;
  /**
   * One page after `after` (null: from the first message), bodies as base64. `cursor`: the last
   * message the page considered, skipped by a filter or not (null when none): the next `after`.
   */
  /** `more`: the page stopped at a limit, so more messages may wait now. */
  listen(after: string | null): Promise<{ messages: CliMessageOut[]; cursor: string | null; more?: boolean }>;
  postResult(frame: StreamResultFrame): Promise<void>;
  openStream(after: string | null, handlers: StreamHandlers): StreamConnection;
  /** The endpoint's newest refused requests, newest first (polling shows the new ones); absent: none shown. */
  recentRejections?(): Promise<RejectionOut[]>;
}

export interface Deliverer {
  deliver(message: CliMessageOut, signal: AbortSignal): Promise<ForwardOutcome | null>;
}

/**
 * The results the server has not acknowledged yet, as a save hands them over: what was added since
 * the previous save (so that a save costs what it adds, however many wait), how many wait, and all
 * of them, oldest first, for a store that rewrites them whole.
 */
export interface PendingResults {
  added: readonly PendingResultFrame[];
  count: number;
  all(): readonly PendingResultFrame[];
}

export interface CursorSink {
  /** Saves the cursor, and before it the results the server has not acknowledged yet. */
  save(cursor: string, results: PendingResults): Promise<void>;
}


export interface ListenerEvents {
  connecting(info: { transport: TransportName; after: string | null }): void;
  /** `reconnect`: it ends an outage, which `reconnected` sums up (then no line of its own). */
  connected(info: { transport: TransportName; cursor: string | null; reconnect?: boolean }): void;
  disconnected(info: { transport: TransportName; reason: string }): void;
  reconnecting(info: { delayMs: number; reason: string }): void;
  fallback(info: { reason: string; retryWebSocketMs: number }): void;
  heartbeatMissing(info: { silentMs: number }): void;
  delivery(record: DeliveryRecord): void;
  caughtUp(info: { count: number }): void;
  /** The listener is back after a lost connection and has forwarded what arrived meanwhile. */
  reconnected?(report: GapReport): void;
  warning(text: string): void;
  /** A request the endpoint's ingest URL refused, as the stream announced it. */
  rejected?(rejection: RejectionOut): void;
  /** Forwarding paused (`p`) or resumed; `waiting`: messages received and not yet forwarded. */
  paused?(info: { paused: boolean; waiting: number }): void;
}

export interface ListenerTiming {
  reconnectInitialMs: number;
  reconnectMaxMs: number;
  pollIntervalMs: number;
  /** In auto mode, how soon polling tries the WebSocket again (doubling up to the max). */
  wsRetryInitialMs: number;
  wsRetryMaxMs: number;
  /** A connection closed before this age counts as a drop; `flapLimit` drops within `flapWindowMs` mean polling. */
  flapLifetimeMs: number;
  flapWindowMs: number;
  flapLimit: number;
  /** Messages received but not yet forwarded: above `queueHigh` the stream is closed until the queue is down to `queueLow`. */
  queueHigh: number;
  queueLow: number;
  /**
   * The same in bytes of the bodies the queued messages carry (a body sent by reference carries
   * none): a message that would take the queue past `queueHighBytes` closes the stream, and polling
   * reads no page while the queue holds `queueLowBytes` or more.
   */
  queueHighBytes: number;
  queueLowBytes: number;
  /** How long, at shutdown, results not yet reported may take. */
  reportFlushMs: number;
  /** How long results wait for the stream to come back before they are POSTed. */
  reportGraceMs: number;
  heartbeatTimeoutMs: number;
  /**
   * A result the open stream took is sent on it again when no acknowledgement came for this long (the
   * server stayed up but could not record it: its database was away).
   */
  resultAckTimeoutMs: number;
  /**
   * How long after every journaled result is settled the journal is emptied: once for a run of
   * acknowledgements, not after each (a restart in between sends them again, and the server records
   * each result once).
   */
  journalEmptyDelayMs: number;
}

export const DEFAULT_TIMING: ListenerTiming = {
  reconnectInitialMs: 1_000,
  reconnectMaxMs: 15_000,
  pollIntervalMs: 1_000,
  wsRetryInitialMs: 30_000,
  wsRetryMaxMs: 300_000,
  flapLifetimeMs: 30_000,
  flapWindowMs: 120_000,
  flapLimit: 3,
  queueHigh: 1_000,
  queueLow: 100,
  queueHighBytes: 64 * 1024 * 1024,
  queueLowBytes: 16 * 1024 * 1024,
  reportFlushMs: 5_000,
  reportGraceMs: 3_000,
  heartbeatTimeoutMs: 45_000,
  journalEmptyDelayMs: 1_000,
  resultAckTimeoutMs: 30_000,
};

/** A result as the listener keeps it: always with its id. */
export type PendingResultFrame = StreamResultFrame & { result_id: string };


/** What became of one message: the app's answer, or why there is none. */
export interface ForwardOutcome {
  /** The app's HTTP status; null when it gave none. */
  status: number | null;
  latencyMs: number;
  error: string | null;
  /** Attempts made (0 when the message could not be sent at all). */
  attempt: number;
  /** The target of the route that took the message (`http://localhost:4000/x`); null when no route did. */
  target: string | null;
  /** Set when the app answered. */
  response?: CapturedResponse | undefined;
}

/** How one stream connection ended. */
export type StreamEnd =
  /** The upgrade was refused in the API's envelope with 400/401/403/404/410: the command cannot go on. */
  | { kind: 'fatal'; error: HookrelayApiError }
  /**
   * The upgrade was refused 429 in the API's envelope: the key, its project or the server has as
   * many sockets open as the server allows (`error.retryAfterSeconds`: the server's Retry-After).
   */
  | { kind: 'limited'; error: HookrelayApiError }
  /** The upgrade was answered with another HTTP status (a proxy that refuses WebSockets, a 5xx). */
  | { kind: 'refused'; status: number; message: string }
  /** The server closed the open stream because the API key was revoked: no retry can succeed. */
  | { kind: 'revoked'; code: number; reason: string }
  /** No connection, or it broke before the upgrade completed. */
  | { kind: 'unreachable'; message: string }
  /** An open stream closed: by the server or the network, by our heartbeat watch, or by us. */
  | { kind: 'closed'; code: number; reason: string; openMs: number; cause: 'server' | 'heartbeat' | 'client'; /** When the server was last heard from (`Date.now()`). */ heardAt?: number };

export interface StreamHandlers {
  /**
   * `resultAcks`: the server acknowledges each result (by its `result_id`) once it is committed.
   * `latest`: the endpoint's newest message as the stream started (undefined: the server does not say).
   */
  ready(cursor: string | null, resultAcks: boolean, latest?: string | null): void;
  /** The server has settled the result `resultId` (recorded, or never to be). */
  resultAck?(resultId: string, outcome: ResultAckOutcome, message: string | undefined): void;
  /** `replay`: the server marked the frame as a replay (a newer server may; see docs/cli.md). */
  message(message: CliMessageOut, replay: boolean): void;
  /** With a filter: every message up to `cursor` was considered, none after the last message frame matched. */
  cursor?(cursor: string): void;
  /** A request the endpoint's ingest URL refused (not a message: no cursor, no result). */
  rejection?(rejection: RejectionOut): void;
  /** Nothing (ping or frame) heard for `silentMs`: shown as a warning before the connection is dropped. */
  silent(silentMs: number): void;
  /**
   * Something was heard after a silence past the heartbeat timeout, which the watch did not get to
   * end (the process was stopped, or its event loop held): called before the frame is handled.
   */
  stalled?(silentMs: number): void;
}

export interface StreamConnection {
  readonly ended: Promise<StreamEnd>;
  /**
   * False when the socket is not open (the caller then reports over HTTP). Without acknowledgements
   * from the server (an older one), the frame goes without its `result_id`, which such a server refuses.
   */
  sendResult(frame: StreamResultFrame): boolean;
  close(): void;
}
