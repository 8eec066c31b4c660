import { randomUUID } from 'node:crypto';
import { LISTEN_PAGE_SIZE, type CliMessageOut, type RejectionOut, type ResultAckOutcome, type StreamResultFrame } from '@hookrelay/shared';
import { HookrelayApiError } from '@hookrelay/shared/client';
import { CliErrorCode, CliFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { formatDuration } from './duration.js';
import { errorText, type CapturedResponse, type ForwardOutcome } from './forwarder.js';
import { sleep as defaultSleep, type Sleep } from './sleep.js';
import { FATAL_STATUSES, type StreamConnection, type StreamEnd, type StreamHandlers } from './stream.js';

export type TransportMode = 'auto' | 'ws' | 'poll';
export type TransportName = 'websocket' | 'polling';

/** The cursor before every UUIDv7: `after=` it means "from the endpoint's first message". */
export const ZERO_CURSOR = '00000000-0000-7000-8000-000000000000';

/** What the listener needs of the server. */
export interface ListenApi {
  /** The endpoint's newest message id (null when it has none), from GET /v1/inbound-endpoints/{id}. */
  latestMessageId(): Promise<string | null>;
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

/** Results kept until the server acknowledges them: beyond either bound the oldest is dropped. */
export const MAX_PENDING_RESULTS = 1000;
export const MAX_PENDING_RESULT_BYTES = 4 * 1024 * 1024;

/** One processed message, as `--json` prints it (plus what people see). */
export interface DeliveryRecord {
  message_id: string;
  /** The stored cursor after this delivery (a replay leaves it where it was). */
  cursor: string | null;
  method: string;
  path: string;
  query: string;
  status: number | null;
  latency_ms: number;
  attempt: number;
  error: string | null;
  replay: boolean;
  /** Where the message went (the target of the route that took it); null when no route did (then nothing was sent or reported). */
  target: string | null;
  /** What the app answered besides its status, when it answered and capture is on. */
  response?: CapturedResponse | undefined;
}

export interface ListenerEvents {
  connecting(info: { transport: TransportName; after: string | null }): void;
  connected(info: { transport: TransportName; cursor: string | null }): void;
  disconnected(info: { transport: TransportName; reason: string }): void;
  reconnecting(info: { delayMs: number; reason: string }): void;
  fallback(info: { reason: string; retryWebSocketMs: number }): void;
  heartbeatMissing(info: { silentMs: number }): void;
  delivery(record: DeliveryRecord): void;
  caughtUp(info: { count: number }): void;
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
  resultAckTimeoutMs: 30_000,
};

export interface ListenerOptions {
  mode: TransportMode;
  /** The listener's name (its cursor slot), sent with each result. */
  name?: string | undefined;
  /** The server filters what it sends (`--events`, `--path`): a page may be short while more wait. */
  filtered?: boolean | undefined;
  /** Start after this id (a stored cursor, --since, --from-start); null: from now (first run, --skip-backlog). */
  startCursor: string | null;
  /** Results a previous run kept (from the cursor file): sent again first. */
  pendingResults?: readonly PendingResultFrame[] | undefined;
  /** Bounds of the results waiting for the server's acknowledgement (tests make them small). */
  maxPendingResults?: number;
  maxPendingResultBytes?: number;
  /** Give up (exit 7) when the server has been unreachable this long. */
  exitOnDisconnectMs?: number | undefined;
  timing?: Partial<ListenerTiming>;
  api: ListenApi;
  deliverer: Deliverer;
  cursors: CursorSink;
  events: ListenerEvents;
  sleep?: Sleep;
  now?: () => number;
}

type WorkItem =
  /** `sequence`: the stream's (or a page's) next message, which moves the cursor; `replay`: pushed again on request. */
  | { kind: 'sequence' | 'replay'; id: string; message: CliMessageOut }
  /** The server skipped messages up to `id` (a filter): the cursor moves there once what came before is done. */
  | { kind: 'cursor'; id: string };

/** The body bytes a message holds while it waits: its size when the body came with it, none when by reference. */
export function bodyBytes(message: CliMessageOut): number {
  return message.body === undefined ? 0 : message.size_bytes;
}

const itemBytes = (item: WorkItem): number => (item.kind === 'cursor' ? 0 : bodyBytes(item.message));

/**
 * The messages received and not yet forwarded, in order. Waits end when `halt` aborts: one listener
 * for the queue's life, since a wait for every message would add and remove one each time.
 */
class WorkQueue {
  private items: WorkItem[] = [];
  private head = 0;
  /** The body bytes of the waiting items. */
  bytes = 0;
  private waiters: (() => void)[] = [];
  /**
   * The processing side, while it waits for an item: called once, synchronously, by the next push
   * (or when `halt` aborts). A resumed `await` would run only after the WebSocket's read has
   * unwound; called here, the message's request to the app leaves at once.
   */
  private idle: (() => void) | null = null;

  constructor(private readonly halt: AbortSignal) {
    halt.addEventListener(
      'abort',
      () => {
        this.wake();
        this.resume();
      },
      { once: true },
    );
  }

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: WorkItem): void {
    this.items.push(item);
    this.bytes += itemBytes(item);
    this.wake();
    this.resume();
  }

  /** Puts `item` before every waiting one (a replay asked for by hand). */
  pushFront(item: WorkItem): void {
    this.bytes += itemBytes(item);
    if (this.head > 0) {
      this.head -= 1;
      this.items[this.head] = item;
    } else {
      this.items.unshift(item);
    }
    this.wake();
    this.resume();
  }

  /** Calls `resume` on the next push (or at once when an item waits or `halt` has aborted). */
  whenReady(resume: () => void): void {
    if (this.length > 0 || this.halt.aborted) resume();
    else this.idle = resume;
  }

  private resume(): void {
    const idle = this.idle;
    this.idle = null;
    idle?.();
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }

  /** The next item, if one waits. */
  shift(): WorkItem | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head]!;
    this.head += 1;
    this.bytes -= itemBytes(item);
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    this.wake();
    return item;
  }

  private wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Resolves once at most `count` items and `bytes` body bytes wait (or the queue's `halt` signal aborts). */
  async drainTo(count: number, bytes: number): Promise<void> {
    while (!this.halt.aborted && (this.length > count || this.bytes > bytes)) await this.wait();
  }
}

/** A result as the listener keeps it: always with its id. */
export type PendingResultFrame = StreamResultFrame & { result_id: string };

/** A result the server may not have recorded yet. */
interface PendingResult {
  frame: PendingResultFrame;
  /** About what it takes in memory and in the cursor file. */
  bytes: number;
  /** `waiting`: to be sent; `sent`: on the open stream, its acknowledgement awaited; `posting`: in a POST now. */
  state: 'waiting' | 'sent' | 'posting';
  /** When it was last sent on the stream. */
  sentAt: number;
}

/** The size of a result's record, without serialising it: the answer's bytes and a fixed part. */
function resultBytes(frame: StreamResultFrame): number {
  let bytes = 400 + (frame.error?.length ?? 0) + (frame.response_body?.length ?? 0) + (frame.listener?.length ?? 0);
  for (const [name, value] of frame.response_headers ?? []) bytes += name.length + value.length + 6;
  return bytes;
}

/** An API answer no retry can change (bad key, unknown or forward-mode endpoint). */
export function isFatal(error: unknown): error is HookrelayApiError {
  return error instanceof HookrelayApiError && FATAL_STATUSES.has(error.status);
}

/**
 * `hookrelay listen`'s engine. A connection side (WebSocket, or polling, with fallback and
 * reconnection) puts messages in a queue; a processing side forwards them one at a time, in order,
 * then saves the cursor and reports the app's answer. The connection side always resumes after the
 * last message it queued, so that nothing is missed and nothing arrives twice; what was queued but
 * not forwarded when the listener stops is fetched again on the next start, from the saved cursor.
 */
export class Listener {
  private readonly timing: ListenerTiming;
  private readonly sleep: Sleep;
  private readonly now: () => number;
  private readonly halt = new AbortController();
  private readonly queue = new WorkQueue(this.halt.signal);
  private failure: unknown;

  /** The last message forwarded (what the cursor file says). */
  private processed: string | null = null;
  /** The last message queued: where the next connection or page starts. */
  private fetchCursor: string | null = null;
  /** The endpoint's newest message when the listener started: the backlog ends there. */
  private latestAtStart: string | null = null;
  /**
   * The newest refused request shown or known when listening began (null: none yet; undefined:
   * not read yet), so that polling shows each later one once, after the stream's or not.
   */
  private lastRejectionId: string | null | undefined = undefined;
  /** When polling last read the refused requests (`now()`); a catch-up's pages do not read them each. */
  private rejectionsReadAt = -Infinity;
  private catchUp: { target: string; count: number } | null = null;

  private stream: StreamConnection | null = null;
  private connectedVia: TransportName | null = null;
  private disconnectedSince: number | null = null;
  /** Why the last attempt to be connected failed: the server down, or refusing (a socket limit, an upgrade). */
  private disconnectReason = '';
  private retryDelay: number;
  private wsRetryDelay: number;
  private wsRetryAt = 0;
  private drops: number[] = [];
  /** The refusal of a stream over the server's socket limits was shown (once until a connection works). */
  private limitedWarned = false;

  private saving: Promise<void> = Promise.resolve();
  private saveWarned = false;
  /**
   * Results not known to be recorded, oldest first, by result id: each is kept (and saved with the
   * cursor) until the server acknowledges it (a `result_ack` frame, or a 2xx to its POST), and sent
   * again under the same id after a reconnection, so that a server that died between the report and
   * its commit loses no answer. A server that does not acknowledge results (an older one) has them
   * once they are sent.
   */
  private readonly pending = new Map<string, PendingResult>();
  /** Results added since the last save started: the next one writes them. */
  private unsaved: PendingResultFrame[] = [];
  private pendingBytes = 0;
  private readonly maxPendingResults: number;
  private readonly maxPendingResultBytes: number;
  /** Results dropped for the bounds since the pending set was last empty (warned about once). */
  private droppedResults = 0;
  /** How many results the last save of the cursor file listed: removing one then saves again. */
  private savedResults = 0;
  private resaveScheduled = false;
  /** Called when a result is settled or the stream ends (a stop waits for the acknowledgements). */
  private readonly ackWaiters = new Set<() => void>();
  /** Runs when the oldest result sent on the stream has waited `resultAckTimeoutMs` for its acknowledgement. */
  private ackTimer: NodeJS.Timeout | undefined;
  /** When a stop stops waiting for the server to have the results: `reportFlushMs` after it began to. */
  private flushDeadline: number | null = null;
  private reporting: Promise<void> | null = null;
  private pumping = false;
  private reportTimer: NodeJS.Timeout | undefined;
  /** The open stream has said `ready`: results can go on it. */
  private streamReady = false;
  /** The open stream's server acknowledges results. */
  private streamAcks = false;
  /** The processing side; the stream stays open until it has finished (its last result goes there). */
  private processing: Promise<void> = Promise.resolve();
  private readonly reportsGivenUp = new AbortController();
  /** While set, nothing is forwarded: messages wait in the queue, in order (`p`). */
  private pauseGate: { promise: Promise<void>; open: () => void } | null = null;
  /** The last message forwarded, for `r`. */
  private lastMessage: CliMessageOut | null = null;

  constructor(private readonly options: ListenerOptions) {
    this.timing = { ...DEFAULT_TIMING, ...options.timing };
    this.sleep = options.sleep ?? defaultSleep;
    this.now = options.now ?? Date.now;
    this.retryDelay = this.timing.reconnectInitialMs;
    this.wsRetryDelay = this.timing.wsRetryInitialMs;
    this.maxPendingResults = Math.max(1, options.maxPendingResults ?? MAX_PENDING_RESULTS);
    this.maxPendingResultBytes = options.maxPendingResultBytes ?? MAX_PENDING_RESULT_BYTES;
    for (const frame of options.pendingResults ?? []) this.addPending(frame);
  }

  private get halted(): boolean {
    return this.halt.signal.aborted;
  }

  /** The cursor the listener stands at (for the last words when it stops). */
  get cursor(): string | null {
    return this.processed;
  }

  /** What waits to be forwarded: items (messages and cursor moves), and the bytes of the bodies they hold. */
  get queued(): { items: number; bytes: number } {
    return { items: this.queue.length, bytes: this.queue.bytes };
  }

  /**
   * Listens until `stop` aborts (then finishes the delivery in flight and returns) or a fatal error
   * (rejects with it: bad key, unknown endpoint, forward mode, --exit-on-disconnect).
   */
  async run(stop: AbortSignal): Promise<void> {
    const onStop = (): void => this.halt.abort();
    if (stop.aborted) onStop();
    stop.addEventListener('abort', onStop, { once: true });
    try {
      const start = this.options.startCursor?.toLowerCase() ?? null;
      if (start !== null) {
        this.processed = start;
        this.fetchCursor = start;
        await this.commit(start);
      }
      const fail = (error: unknown): void => {
        this.failure ??= error;
        this.halt.abort();
      };
      this.processing = this.process().catch(fail);
      await Promise.all([this.processing, this.manage().catch(fail)]);
      await this.saving;
      await this.flushReports();
      // The cursor file keeps what is left, for the next start.
      if (this.processed !== null && (this.pending.size > 0 || this.savedResults > 0)) await this.commit(this.processed);
      if (this.pending.size > 0) {
        const count = this.pending.size;
        this.options.events.warning(
          `${count === 1 ? '1 result was' : `${count} results were`} not acknowledged by the server: kept in the cursor file, sent again when this listener next starts`,
        );
      }
      if (this.failure !== undefined) throw this.failure;
    } finally {
      stop.removeEventListener('abort', onStop);
    }
  }

  // ---- interactive control ----------------------------------------------------------------------

  get paused(): boolean {
    return this.pauseGate !== null;
  }

  /** Pauses forwarding after the delivery in flight, or resumes it. Returns whether it is now paused. */
  togglePause(): boolean {
    if (this.pauseGate !== null) {
      const gate = this.pauseGate;
      this.pauseGate = null;
      gate.open();
    } else {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      this.pauseGate = { promise, open };
    }
    this.options.events.paused?.({ paused: this.pauseGate !== null, waiting: this.queue.length });
    return this.pauseGate !== null;
  }

  /** Forwards the last forwarded message again, next (the cursor does not move). False when there is none yet. */
  replayLast(): boolean {
    const message = this.lastMessage;
    if (message === null) return false;
    this.queue.pushFront({ kind: 'replay', id: message.message_id.toLowerCase(), message });
    return true;
  }

  private async waitWhilePaused(): Promise<void> {
    while (this.pauseGate !== null && !this.halted) {
      const gate = this.pauseGate.promise;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.halt.signal.removeEventListener('abort', done);
          resolve();
        };
        void gate.then(done);
        this.halt.signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  // ---- processing side ------------------------------------------------------------------------

  /**
   * The processing side: resolves once the listener halts, after the delivery in flight. Between
   * items it holds no pending promise: the queue calls it back when one arrives.
   */
  private process(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const run = (): void => {
        this.processWaiting().then((going) => (going ? this.queue.whenReady(run) : resolve()), reject);
      };
      this.queue.whenReady(run);
    });
  }

  /**
   * Forwards what waits in the queue, one at a time; resolves to true once it is empty, to false
   * when the listener halts. Runs synchronously up to the app request of the first message.
   */
  private async processWaiting(): Promise<boolean> {
    for (;;) {
      if (this.pauseGate !== null) await this.waitWhilePaused();
      if (this.halted) return false;
      const item = this.queue.shift();
      if (item === undefined) return true;
      if (item.kind === 'cursor') {
        if (this.processed === null || item.id > this.processed) await this.commit(item.id);
        if (this.catchUp !== null && item.id >= this.catchUp.target) this.caughtUp();
        continue;
      }
      if (this.pauseGate !== null) {
        // Paused while waiting for it: it goes back first in line, so that a replay asked for
        // during the pause still comes before it.
        this.queue.pushFront(item);
        continue;
      }
      if (item.kind === 'sequence') {
        // Already forwarded (cannot happen with a correct server; never forward the stream twice).
        if (this.processed !== null && item.id <= this.processed) continue;
        if (this.catchUp !== null && item.id > this.catchUp.target) this.caughtUp();
      }
      const outcome = await this.options.deliverer.deliver(item.message, this.halt.signal);
      // Stopped while holding it for an unreachable app: not processed, delivered on the next start.
      if (outcome === null) return false;
      // A message no route takes never reached an app: there is no answer to report. The result is
      // pending before the save, so that the cursor never moves past a message without its answer.
      const reported = outcome.target !== null;
      if (reported) {
        this.lastMessage = item.message;
        this.addPending(this.resultFrame(item.message.message_id, outcome));
      }
      if (item.kind === 'sequence') await this.commit(item.id);
      else if (reported && this.processed !== null) await this.commit(this.processed);
      if (reported) this.sendReports();
      this.options.events.delivery({
        message_id: item.message.message_id,
        cursor: this.processed,
        method: item.message.method,
        path: item.message.path,
        query: item.message.query,
        status: outcome.status,
        latency_ms: outcome.latencyMs,
        attempt: outcome.attempt,
        error: outcome.error,
        replay: item.kind === 'replay',
        target: outcome.target,
        response: outcome.response,
      });
      if (item.kind === 'sequence' && this.catchUp !== null && item.id <= this.catchUp.target) {
        this.catchUp.count += 1;
        if (item.id === this.catchUp.target) this.caughtUp();
      }
    }
  }

  private resultFrame(messageId: string, outcome: ForwardOutcome): PendingResultFrame {
    const frame: PendingResultFrame = {
      type: 'result',
      message_id: messageId,
      status: outcome.status,
      latency_ms: outcome.latencyMs,
      error: outcome.error,
      result_id: randomUUID(),
    };
    if (this.options.name !== undefined) frame.listener = this.options.name;
    const response = outcome.response;
    if (response !== undefined) {
      frame.response_headers = response.headers;
      frame.response_body = response.body.toString('base64');
      frame.response_body_truncated = response.truncated;
    }
    return frame;
  }

  private caughtUp(): void {
    if (this.catchUp === null) return;
    this.options.events.caughtUp({ count: this.catchUp.count });
    this.catchUp = null;
  }

  /**
   * Saves are chained: one file, written in cursor order. Each save writes the results pending at
   * that moment along with the cursor.
   */
  private commit(cursor: string): Promise<void> {
    this.processed = cursor;
    this.saving = this.saving.then(() => {
      const added = this.unsaved;
      this.unsaved = [];
      this.savedResults = this.pending.size;
      const pending = this.pending;
      const results: PendingResults = { added, count: pending.size, all: () => [...pending.values()].map((p) => p.frame) };
      return this.options.cursors.save(cursor, results).catch((error: unknown) => {
        // Not kept: the next save hands them over again.
        this.unsaved = [...added, ...this.unsaved];
        if (!this.saveWarned) {
          this.saveWarned = true;
          this.options.events.warning(`cannot save the cursor (${errorText(error)}); a restart would resume from an older message`);
        }
      });
    });
    return this.saving;
  }

  /** Keeps a result until the server has it; beyond the bounds the oldest ones go (a warning says so, once). */
  private addPending(frame: PendingResultFrame): void {
    const entry: PendingResult = { frame, bytes: resultBytes(frame), state: 'waiting', sentAt: 0 };
    this.pending.set(frame.result_id, entry);
    this.unsaved.push(frame);
    this.pendingBytes += entry.bytes;
    while (this.pending.size > this.maxPendingResults || (this.pendingBytes > this.maxPendingResultBytes && this.pending.size > 1)) {
      const [oldestId, oldest] = this.pending.entries().next().value as [string, PendingResult];
      this.forget(oldestId);
      if (this.droppedResults++ === 0) {
        this.options.events.warning(
          `more results wait for the server's acknowledgement than are kept (${this.maxPendingResults}, ${Math.round(this.maxPendingResultBytes / 1024)} KiB): ` +
            `the oldest are dropped, beginning with the result of message ${oldest.frame.message_id}, whose status on the server stays as it is`,
        );
      }
    }
  }

  /** The server has the result (or never will): it is forgotten, and soon also in the cursor file. */
  private forget(id: string): void {
    const entry = this.pending.get(id);
    if (entry === undefined) return;
    this.pending.delete(id);
    this.pendingBytes -= entry.bytes;
    if (this.pending.size === 0) this.droppedResults = 0;
    this.notifyAckWaiters();
    // The journal keeps acknowledged results until none is pending; then it is emptied soon after,
    // not with the next message, so that a crash meanwhile does not send them again.
    if (this.pending.size === 0 && this.savedResults > 0 && !this.resaveScheduled && this.processed !== null) {
      this.resaveScheduled = true;
      setImmediate(() => {
        this.resaveScheduled = false;
        if (this.processed !== null && this.savedResults > 0) void this.commit(this.processed);
      });
    }
  }

  private onResultAck(resultId: string, outcome: ResultAckOutcome, message: string | undefined): void {
    const entry = this.pending.get(resultId);
    if (entry === undefined) return;
    if (outcome === 'refused') this.options.events.warning(`the server refused the result of message ${entry.frame.message_id}: ${message ?? 'not a valid result'}`);
    this.forget(resultId);
  }

  private notifyAckWaiters(): void {
    for (const waiter of this.ackWaiters) waiter();
    this.ackWaiters.clear();
  }

  /** The time left to a stop for its results (acknowledgements, then POSTs): `reportFlushMs` in all. */
  private flushTimeLeft(): number {
    this.flushDeadline ??= this.now() + this.timing.reportFlushMs;
    return Math.max(0, this.flushDeadline - this.now());
  }

  /** Resolves once no result on `connection` awaits its acknowledgement, it has closed, or the stop's time is up. */
  private async acknowledged(connection: StreamConnection): Promise<void> {
    const timeout = new AbortController();
    let expired = false;
    void this.sleep(this.flushTimeLeft(), timeout.signal).then((slept) => {
      expired = slept;
      this.notifyAckWaiters();
    });
    try {
      while (!expired && this.stream === connection && [...this.pending.values()].some((p) => p.state === 'sent')) {
        await new Promise<void>((resolve) => this.ackWaiters.add(resolve));
      }
    } finally {
      timeout.abort();
    }
  }

  /** Sends again, on the same stream, the results whose acknowledgement is overdue. */
  private armAckTimer(): void {
    if (this.ackTimer !== undefined) return;
    let oldest = Infinity;
    for (const entry of this.pending.values()) if (entry.state === 'sent' && entry.sentAt < oldest) oldest = entry.sentAt;
    if (oldest === Infinity) return;
    this.ackTimer = setTimeout(() => {
      this.ackTimer = undefined;
      const overdue = this.now() - this.timing.resultAckTimeoutMs;
      for (const entry of this.pending.values()) if (entry.state === 'sent' && entry.sentAt <= overdue) entry.state = 'waiting';
      this.sendReports();
      this.armAckTimer();
    }, Math.max(0, oldest + this.timing.resultAckTimeoutMs - this.now()));
    this.ackTimer.unref();
  }

  /** The first result that waits to be sent, if any. */
  private firstWaiting(): [string, PendingResult] | undefined {
    for (const entry of this.pending) if (entry[1].state === 'waiting') return entry;
    return undefined;
  }

  /**
   * Sends the results that wait, in order: on the stream once it is ready (cheap, and what the stream
   * is for); over HTTP (POST /v1/inbound-messages/{id}/result) when polling or stopping, or when the
   * stream has not come back within `reportGraceMs` (it is reconnecting, or closed while the queue drains).
   */
  private sendReports(): void {
    const stream = this.streamReady ? this.stream : null;
    let waiting = false;
    for (const [id, entry] of this.pending) {
      if (entry.state !== 'waiting') continue;
      if (stream === null || !stream.sendResult(entry.frame)) {
        waiting = true;
        break;
      }
      if (this.streamAcks) {
        entry.state = 'sent';
        entry.sentAt = this.now();
        this.armAckTimer();
      } else this.forget(id);
    }
    if (!waiting) return;
    if (this.connectedVia === 'polling' || this.halted) {
      this.startReportPump();
      return;
    }
    if (this.reportTimer === undefined && !this.pumping) {
      this.reportTimer = setTimeout(() => {
        this.reportTimer = undefined;
        this.startReportPump();
      }, this.timing.reportGraceMs);
      this.reportTimer.unref();
    }
  }

  private startReportPump(): void {
    if (this.reportTimer !== undefined) {
      clearTimeout(this.reportTimer);
      this.reportTimer = undefined;
    }
    if (this.pumping || this.firstWaiting() === undefined) return;
    this.pumping = true;
    this.reporting = this.pumpReports();
  }

  /**
   * POSTs the waiting results one by one, each under its result id (the Idempotency-Key header); a
   * 2xx is the acknowledgement. While the server cannot be reached they are retried (the listener is
   * reconnecting meanwhile); when the stream is back the rest go on it; at shutdown, after
   * `reportFlushMs`, the rest stay pending (the cursor file keeps them).
   */
  private async pumpReports(): Promise<void> {
    for (;;) {
      const next = this.firstWaiting();
      // `pumping` is cleared in the very turn the pump stops, so that a later report starts a new one.
      if (next === undefined || (this.stream !== null && !this.halted && this.streamReady) || this.reportsGivenUp.signal.aborted) {
        this.pumping = false;
        if (!this.reportsGivenUp.signal.aborted) this.sendReports();
        return;
      }
      const [id, entry] = next;
      entry.state = 'posting';
      for (let attempt = 1; ; attempt++) {
        try {
          await this.options.api.postResult(entry.frame);
          this.forget(id);
          break;
        } catch (error) {
          // A message deleted meanwhile, or a report the server refuses: nothing to retry.
          if (error instanceof HookrelayApiError && error.status < 500 && error.status !== 429) {
            this.forget(id);
            break;
          }
          if (this.reportsGivenUp.signal.aborted) {
            entry.state = 'waiting';
            this.pumping = false;
            return;
          }
          await this.sleep(Math.min(250 * 2 ** attempt, 10_000), this.reportsGivenUp.signal);
        }
      }
    }
  }

  private async flushReports(): Promise<void> {
    this.sendReports();
    if (!this.pumping || this.reporting === null) return;
    const timeout = new AbortController();
    await Promise.race([this.reporting, this.sleep(this.flushTimeLeft(), timeout.signal)]);
    timeout.abort();
    // Whatever is left is not waited for: the process is ending, and the cursor file keeps it.
    this.reportsGivenUp.abort();
    for (const entry of this.pending.values()) if (entry.state === 'posting') entry.state = 'waiting';
  }

  // ---- connection side ------------------------------------------------------------------------

  private async manage(): Promise<void> {
    if (!(await this.prepare())) return;
    let polling = this.options.mode === 'poll';
    while (!this.halted) {
      if (polling) {
        await this.poll();
        if (this.halted) return;
        polling = false; // time to try the WebSocket again (auto mode only)
        continue;
      }
      const end = await this.streamOnce();
      if (this.halted) return;
      switch (end.kind) {
        case 'fatal':
          throw end.error;
        case 'revoked':
          // Answered like any other refusal of the key (exit 3), and never by reconnecting or polling with it.
          throw new HookrelayApiError(
            'UNAUTHORIZED',
            `the API key was revoked while listening: the server closed the stream (${end.code}${end.reason === '' ? '' : ` ${end.reason}`})`,
            401,
            undefined,
          );
        case 'limited': {
          // The server allows no more sockets for now: polling instead would go around the limit its
          // operator set, so the WebSocket is tried again, no sooner than the server asked.
          const reason = `the server refused the stream: ${end.error.message}`;
          if (!this.limitedWarned) this.options.events.warning(reason);
          this.limitedWarned = true;
          this.markDisconnected(reason);
          await this.backoff('too many open streams', (end.error.retryAfterSeconds ?? 0) * 1000);
          break;
        }
        case 'refused':
          if (this.options.mode === 'auto') {
            polling = true;
            this.fallBack(`the WebSocket upgrade was refused (HTTP ${end.status}${end.message === `HTTP ${end.status}` ? '' : `: ${end.message}`})`);
            continue;
          }
          this.markDisconnected(`the WebSocket upgrade was refused (HTTP ${end.status})`);
          await this.backoff(`HTTP ${end.status}`);
          break;
        case 'unreachable':
          // The server answers plain HTTP but the WebSocket cannot get through: poll.
          if (this.options.mode === 'auto' && (await this.httpReachable())) {
            polling = true;
            this.fallBack(`the WebSocket could not connect (${end.message})`);
            continue;
          }
          this.markDisconnected(end.message);
          await this.backoff(end.message);
          break;
        case 'closed': {
          if (end.cause === 'client') {
            // We closed it to let the queue drain (a long backlog, a slow app): resume when it has.
            await this.queue.drainTo(this.timing.queueLow, this.timing.queueLowBytes);
            continue;
          }
          const reason =
            end.cause === 'heartbeat'
              ? `no heartbeat from the server for ${formatDuration(this.timing.heartbeatTimeoutMs)}: the connection is dead`
              : `the WebSocket closed (${end.code}${end.reason === '' ? '' : ` ${end.reason}`})`;
          this.markDisconnected(reason);
          if (end.openMs < this.timing.flapLifetimeMs) {
            const now = this.now();
            this.drops = [...this.drops.filter((at) => now - at < this.timing.flapWindowMs), now];
            if (this.options.mode === 'auto' && this.drops.length >= this.timing.flapLimit) {
              this.drops = [];
              polling = true;
              this.fallBack(`the WebSocket dropped ${this.timing.flapLimit} times in ${formatDuration(this.timing.flapWindowMs)}`);
              continue;
            }
          } else {
            this.retryDelay = this.timing.reconnectInitialMs;
          }
          await this.backoff(reason);
          break;
        }
      }
    }
  }

  /** Reads the endpoint's newest id (and with it checks key and endpoint), retrying while the server is unreachable. */
  private async prepare(): Promise<boolean> {
    this.options.events.connecting({ transport: this.options.mode === 'poll' ? 'polling' : 'websocket', after: this.fetchCursor });
    for (;;) {
      if (this.halted) return false;
      try {
        this.latestAtStart = (await this.options.api.latestMessageId())?.toLowerCase() ?? null;
        break;
      } catch (error) {
        if (isFatal(error)) throw error;
        this.markDisconnected(errorText(error));
        await this.backoff(errorText(error));
      }
    }
    const start = this.fetchCursor;
    if (start !== null && this.latestAtStart !== null && this.latestAtStart > start) this.catchUp = { target: this.latestAtStart, count: 0 };
    return true;
  }

  private async httpReachable(): Promise<boolean> {
    try {
      await this.options.api.latestMessageId();
      return true;
    } catch (error) {
      if (isFatal(error)) throw error;
      return false;
    }
  }

  private fallBack(reason: string): void {
    this.wsRetryAt = this.now() + this.wsRetryDelay;
    this.options.events.fallback({ reason, retryWebSocketMs: this.wsRetryDelay });
    this.wsRetryDelay = Math.min(this.wsRetryDelay * 2, this.timing.wsRetryMaxMs);
  }

  private markConnected(transport: TransportName): void {
    this.disconnectedSince = null;
    this.limitedWarned = false;
    this.retryDelay = this.timing.reconnectInitialMs;
    if (this.connectedVia !== transport) {
      this.connectedVia = transport;
      this.options.events.connected({ transport, cursor: this.fetchCursor });
      // Results kept from before (a previous run, a stream that went away) go by POST now.
      if (transport === 'polling') this.sendReports();
    }
  }

  private markDisconnected(reason: string): void {
    this.disconnectedSince ??= this.now();
    this.disconnectReason = reason;
    if (this.connectedVia !== null) {
      this.options.events.disconnected({ transport: this.connectedVia, reason });
      this.connectedVia = null;
    }
    this.checkDisconnectLimit();
  }

  private checkDisconnectLimit(): void {
    const limit = this.options.exitOnDisconnectMs;
    if (limit === undefined || this.disconnectedSince === null) return;
    const down = this.now() - this.disconnectedSince;
    if (down >= limit) {
      throw new CliFailure(
        CliErrorCode.NETWORK_ERROR,
        `no connection to the server for ${formatDuration(down)} (--exit-on-disconnect ${formatDuration(limit)}); last: ${this.disconnectReason}`,
        ExitCode.NETWORK,
        'Nothing was lost: the next `hookrelay listen` resumes after the last message forwarded.',
      );
    }
  }

  /** Waits before the next attempt: the reconnect delay (doubling), or `minDelayMs` when longer. */
  private async backoff(reason: string, minDelayMs = 0): Promise<void> {
    let delay = Math.max(this.retryDelay, minDelayMs);
    this.retryDelay = Math.min(this.retryDelay * 2, this.timing.reconnectMaxMs);
    const limit = this.options.exitOnDisconnectMs;
    if (limit !== undefined && this.disconnectedSince !== null) delay = Math.max(0, Math.min(delay, this.disconnectedSince + limit - this.now()));
    this.options.events.reconnecting({ delayMs: delay, reason });
    await this.sleep(delay, this.halt.signal);
    if (!this.halted) this.checkDisconnectLimit();
  }

  /** One WebSocket connection, from its upgrade to its end. */
  private async streamOnce(): Promise<StreamEnd> {
    if (this.connectedVia !== 'websocket') this.options.events.connecting({ transport: 'websocket', after: this.fetchCursor });
    let overflow = false;
    const connection = this.options.api.openStream(this.fetchCursor, {
      ready: (cursor, resultAcks) => {
        if (this.fetchCursor === null) {
          // First run: the server starts "now" and says where that is. Saved at once, so that a
          // restart resumes from here even before the first message.
          const start = cursor ?? ZERO_CURSOR;
          this.fetchCursor = start;
          void this.commit(start);
        }
        this.markConnected('websocket');
        this.wsRetryDelay = this.timing.wsRetryInitialMs;
        this.streamReady = true;
        this.streamAcks = resultAcks;
        this.sendReports();
      },
      resultAck: (resultId, outcome, message) => this.onResultAck(resultId, outcome, message),
      message: (message, replay) => {
        const id = message.message_id.toLowerCase();
        // The stream never repeats itself after `after`: an id at or below what it sent is a replay.
        if (replay || this.fetchCursor === null || id <= this.fetchCursor) {
          this.queue.push({ kind: 'replay', id, message });
          return;
        }
        if (overflow) return;
        // One body larger than the bound is still taken when no other waits: else it could never come.
        const full = this.queue.length >= this.timing.queueHigh || (this.queue.bytes > 0 && this.queue.bytes + bodyBytes(message) > this.timing.queueHighBytes);
        if (full) {
          // Not queued, and the cursor not moved: the next connection starts with this message.
          overflow = true;
          connection.close();
          return;
        }
        this.fetchCursor = id;
        this.queue.push({ kind: 'sequence', id, message });
      },
      cursor: (id) => {
        // Messages up to `id` were skipped by the filter: the cursor moves past them, in turn.
        if (overflow || this.fetchCursor === null || id <= this.fetchCursor) return;
        this.fetchCursor = id;
        this.queue.push({ kind: 'cursor', id });
      },
      // Shown at once, beside the deliveries: it is not a message, so it neither queues nor moves the cursor.
      rejection: (rejection) => this.showRejections([rejection]),
      silent: (silentMs) => this.options.events.heartbeatMissing({ silentMs }),
    });
    this.stream = connection;
    this.streamReady = false;
    this.streamAcks = false;
    // Stopping: the delivery in flight finishes first, its result goes on this stream, and the
    // stream stays open (a while) for the acknowledgements.
    const onHalt = (): void =>
      void this.processing
        .then(() => this.acknowledged(connection))
        .then(() => connection.close());
    if (this.halted) onHalt();
    else this.halt.signal.addEventListener('abort', onHalt, { once: true });
    try {
      return await connection.ended;
    } finally {
      this.halt.signal.removeEventListener('abort', onHalt);
      if (this.stream === connection) {
        this.stream = null;
        this.streamReady = false;
        this.streamAcks = false;
        // What this stream took without acknowledging goes again, on the next stream or by POST.
        for (const entry of this.pending.values()) if (entry.state === 'sent') entry.state = 'waiting';
        clearTimeout(this.ackTimer);
        this.ackTimer = undefined;
        this.notifyAckWaiters();
        this.sendReports();
      }
    }
  }

  /** Shows refused requests newer than the last one shown, oldest first. */
  private showRejections(rejections: readonly RejectionOut[]): void {
    const fresh = rejections.filter((r) => this.lastRejectionId == null || r.id > this.lastRejectionId).sort((a, b) => (a.id < b.id ? -1 : 1));
    for (const rejection of fresh) {
      this.lastRejectionId = rejection.id;
      this.options.events.rejected?.(rejection);
    }
  }

  /**
   * While polling, the refused requests since the last read (the stream pushes them). Those from
   * before listening began are not shown; a failed read only skips a turn.
   */
  private async pollRejections(): Promise<void> {
    const read = this.options.api.recentRejections;
    if (read === undefined || this.options.events.rejected === undefined) return;
    // At most once a poll interval: pages of a backlog follow each other at once, and each would
    // otherwise wait for one more request before its messages are forwarded.
    if (this.now() - this.rejectionsReadAt < this.timing.pollIntervalMs) return;
    this.rejectionsReadAt = this.now();
    let recent: RejectionOut[];
    try {
      recent = await read.call(this.options.api);
    } catch {
      return;
    }
    if (this.lastRejectionId === undefined) {
      this.lastRejectionId = recent.reduce<string | null>((newest, r) => (newest === null || r.id > newest ? r.id : newest), null);
      return;
    }
    this.showRejections(recent);
  }

  /** Polls until halted or, in auto mode, until it is time to try the WebSocket again. */
  private async poll(): Promise<void> {
    if (this.connectedVia !== 'polling') this.options.events.connecting({ transport: 'polling', after: this.fetchCursor });
    while (!this.halted) {
      if (this.options.mode === 'auto' && this.now() >= this.wsRetryAt) return;
      // A page holds at most LISTEN_PAGE_MAX_BODY_BYTES of bodies past its first message: read
      // below `queueLowBytes`, the queue stays under `queueHighBytes` as it does with the stream.
      if (this.queue.length >= this.timing.queueLow || this.queue.bytes >= this.timing.queueLowBytes) {
        await this.queue.drainTo(this.timing.queueLow - 1, this.timing.queueLowBytes - 1);
        continue;
      }
      if (this.fetchCursor === null) {
        // First run: start from the endpoint's newest message as it was when we started.
        const start = this.latestAtStart ?? ZERO_CURSOR;
        this.fetchCursor = start;
        await this.commit(start);
      }
      let page: { messages: CliMessageOut[]; cursor: string | null; more?: boolean };
      try {
        page = await this.options.api.listen(this.fetchCursor);
      } catch (error) {
        if (isFatal(error)) throw error;
        this.markDisconnected(errorText(error));
        await this.backoff(errorText(error));
        continue;
      }
      this.markConnected('polling');
      await this.pollRejections();
      const before = this.fetchCursor;
      for (const message of page.messages) {
        const id = message.message_id.toLowerCase();
        if (this.fetchCursor !== null && id <= this.fetchCursor) continue;
        this.fetchCursor = id;
        this.queue.push({ kind: 'sequence', id, message });
      }
      if (page.cursor !== null && (this.fetchCursor === null || page.cursor > this.fetchCursor)) {
        this.fetchCursor = page.cursor;
        this.queue.push({ kind: 'cursor', id: page.cursor });
      }
      if (page.more === true || page.messages.length >= LISTEN_PAGE_SIZE) continue;
      // A filtered page stops at a scan limit: while it gets anywhere, more may wait.
      if (this.options.filtered === true && this.fetchCursor !== before) continue;
      let wait = this.timing.pollIntervalMs;
      if (this.options.mode === 'auto') wait = Math.max(0, Math.min(wait, this.wsRetryAt - this.now()));
      await this.sleep(wait, this.halt.signal);
    }
  }
}
