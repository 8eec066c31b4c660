import type { CliMessageOut } from '@hookrelay/shared';
import { detectProvider } from '@hookrelay/shared/providers';
import { ConnectionSupervisor } from './connection.js';
import { errorText } from './error-text.js';
import { ConnectionGap } from './gap.js';
import { DEFAULT_TIMING, type CursorSink, type Deliverer, type GapReport, type ListenApi, type ListenerEvents, type ListenerTiming, type PendingResultFrame, type TransportMode } from './ports.js';
import { resultFrame, ResultLedger } from './results.js';
import { sleep as defaultSleep, type Sleep } from './sleep.js';
import { WorkQueue } from './work-queue.js';

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

/**
 * `hookrelay listen`'s engine. A connection side (`ConnectionSupervisor`: WebSocket, or polling,
 * with fallback and reconnection) puts messages in a queue; the processing side here forwards them
 * one at a time, in order, then saves the cursor and hands the app's answer to the `ResultLedger`,
 * which reports it. The connection side always resumes after the last message it queued, so that
 * nothing is missed and nothing arrives twice; what was queued but not forwarded when the listener
 * stops is fetched again on the next start, from the saved cursor.
 */
export class Listener {
  private readonly halt = new AbortController();
  private readonly queue = new WorkQueue(this.halt.signal);
  private readonly results: ResultLedger;
  private readonly connection: ConnectionSupervisor;
  private failure: unknown;

  /** The last message forwarded (what the cursor file says). */
  private processed: string | null = null;
  private catchUp: { target: string; count: number } | null = null;
  /** A lost connection's gap, summed up once what arrived meanwhile is forwarded. */
  private readonly gap = new ConnectionGap();
  private saving: Promise<void> = Promise.resolve();
  private saveWarned = false;
  /** The processing side; the stream stays open until it has finished (its last result goes there). */
  private processing: Promise<void> = Promise.resolve();
  /** While set, nothing is forwarded: messages wait in the queue, in order (`p`). */
  private pauseGate: { promise: Promise<void>; open: () => void } | null = null;
  /** The last message forwarded, for `r`. */
  private lastMessage: CliMessageOut | null = null;

  constructor(private readonly options: ListenerOptions) {
    const timing = { ...DEFAULT_TIMING, ...options.timing };
    const sleep = options.sleep ?? defaultSleep;
    const now = options.now ?? Date.now;
    this.results = new ResultLedger({
      api: options.api,
      events: options.events,
      timing,
      halt: this.halt.signal,
      pending: options.pendingResults,
      maxResults: options.maxPendingResults,
      maxBytes: options.maxPendingResultBytes,
      journalStale: () => {
        if (this.processed !== null) void this.commit(this.processed);
      },
      sleep,
      now,
    });
    this.connection = new ConnectionSupervisor({
      mode: options.mode,
      filtered: options.filtered,
      startCursor: options.startCursor?.toLowerCase() ?? null,
      exitOnDisconnectMs: options.exitOnDisconnectMs,
      timing,
      api: options.api,
      events: options.events,
      queue: this.queue,
      results: this.results,
      halt: this.halt.signal,
      saveStart: (cursor) => this.commit(cursor),
      backlogEndsAt: (target) => {
        this.catchUp = { target, count: 0 };
      },
      gap: this.gap,
      sleep,
      now,
    });
  }

  private get halted(): boolean {
    return this.halt.signal.aborted;
  }

  /** The cursor the listener stands at (for the last words when it stops). */
  get cursor(): string | null {
    return this.processed;
  }

  /** The id of the last message forwarded (for `r` among several listeners); null before the first. */
  get lastForwardedId(): string | null {
    return this.lastMessage?.message_id.toLowerCase() ?? null;
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
      if (start !== null) await this.commit(start);
      const fail = (error: unknown): void => {
        this.failure ??= error;
        this.halt.abort();
      };
      this.processing = this.process().catch(fail);
      await Promise.all([this.processing, this.connection.run(this.processing).catch(fail)]);
      await this.saving;
      await this.results.flush();
      // The cursor file keeps what is left, for the next start.
      if (this.processed !== null && (this.results.size > 0 || this.results.journaled)) await this.commit(this.processed);
      if (this.results.size > 0) {
        const count = this.results.size;
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
        this.reportGap(this.gap.passed(item.id));
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
        this.reportGap(this.gap.forwarding(item.id));
      }
      const outcome = await this.options.deliverer.deliver(item.message, this.halt.signal);
      // Stopped while holding it for an unreachable app: not processed, delivered on the next start.
      if (outcome === null) return false;
      // A message no route takes never reached an app: there is no answer to report. The result is
      // pending before the save, so that the cursor never moves past a message without its answer.
      const reported = outcome.target !== null;
      if (reported) {
        this.lastMessage = item.message;
        this.results.add(resultFrame(item.message.message_id, outcome, this.options.name, item.message.resigned === true));
      }
      if (item.kind === 'sequence') await this.commit(item.id);
      else if (reported && this.processed !== null) await this.commit(this.processed);
      if (reported) this.results.send();
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
        provider: detectProvider(item.message.raw_headers),
        event_type: item.message.event_type ?? null,
        resigned: item.message.resigned === true,
        signed_at: item.message.signed_at,
        resign_skipped: item.message.resign_skipped,
        ...(item.message.edited === true ? { edited: true, signed: item.message.signed === true } : {}),
      });
      if (item.kind === 'sequence' && this.catchUp !== null && item.id <= this.catchUp.target) {
        this.catchUp.count += 1;
        if (item.id === this.catchUp.target) this.caughtUp();
      }
      if (item.kind === 'sequence') this.reportGap(this.gap.forwarded(item.id));
    }
  }

  private reportGap(report: GapReport | null): void {
    if (report !== null) this.options.events.reconnected?.(report);
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
      const results = this.results.journal();
      return this.options.cursors.save(cursor, results).catch((error: unknown) => {
        // Not kept: the next save hands them over again.
        this.results.saveFailed(results);
        if (!this.saveWarned) {
          this.saveWarned = true;
          this.options.events.warning(`cannot save the cursor (${errorText(error)}); a restart would resume from an older message`);
        }
      });
    });
    return this.saving;
  }
}
