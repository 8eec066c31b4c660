import type { CliMessageOut, RejectionOut } from '@hookrelay/shared';
import { LISTEN_PAGE_SIZE } from '@hookrelay/shared/constants';
import { HookrelayApiError } from '@hookrelay/shared/client';
import { CliErrorCode, CliFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { formatDuration } from './duration.js';
import { errorText } from './error-text.js';
import type { ConnectionGap } from './gap.js';
import { ZERO_CURSOR, type ListenApi, type ListenerEvents, type ListenerTiming, type StreamEnd, type TransportMode, type TransportName } from './ports.js';
import type { ResultLedger } from './results.js';
import type { Sleep } from './sleep.js';
import { FATAL_STATUSES } from './stream.js';
import { bodyBytes, type WorkQueue } from './work-queue.js';

/** An API answer no retry can change (bad key, unknown or forward-mode endpoint). */
function isFatal(error: unknown): error is HookrelayApiError {
  return error instanceof HookrelayApiError && FATAL_STATUSES.has(error.status);
}

export interface ConnectionSupervisorOptions {
  mode: TransportMode;
  /** The server filters what it sends: a page may be short while more wait. */
  filtered?: boolean | undefined;
  /** Where the first connection starts (lower case); null: from now, as the server or the endpoint's newest message says. */
  startCursor: string | null;
  /** Give up (exit 7) when the server has been unreachable this long. */
  exitOnDisconnectMs?: number | undefined;
  timing: ListenerTiming;
  api: ListenApi;
  events: ListenerEvents;
  /** Where the messages go, in order, for the processing side. */
  queue: WorkQueue;
  /** Handed each ready stream, and told when polling starts and ends. */
  results: Pick<ResultLedger, 'attach' | 'detach' | 'setPolling' | 'acknowledge' | 'acknowledged'>;
  /** The listener's stop. */
  halt: AbortSignal;
  /** A first run's starting point: saved at once, so that a restart resumes from there even before the first message. */
  saveStart(cursor: string): Promise<void>;
  /** The endpoint's newest message when listening began, past the start: the backlog ends there. */
  backlogEndsAt(id: string): void;
  /** Told when a connection is lost and when one is made again (the gap line). */
  gap: ConnectionGap;
  sleep: Sleep;
  now: () => number;
}

/**
 * The connection side of `hookrelay listen`: the WebSocket, or polling when it cannot be used (auto
 * mode falls back to it and tries the WebSocket again later), reconnection with backoff, flap
 * detection, `--exit-on-disconnect`, and the refused requests shown while polling. It puts messages
 * in the queue and always resumes after the last one it queued, so that nothing is missed and
 * nothing arrives twice.
 */
export class ConnectionSupervisor {
  private readonly timing: ListenerTiming;
  /** The last message queued: where the next connection or page starts. */
  private fetchCursor: string | null;
  /** The endpoint's newest message when the listener started. */
  private latestAtStart: string | null = null;
  /**
   * The newest refused request shown or known when listening began (null: none yet; undefined:
   * not read yet), so that polling shows each later one once, after the stream's or not.
   */
  private lastRejectionId: string | null | undefined = undefined;
  /** When polling last read the refused requests (`now()`); a catch-up's pages do not read them each. */
  private rejectionsReadAt = -Infinity;
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
  /** The open stream's last stall (`stalled`): when it began, and the last message queued then. */
  private stall: { since: number; cursor: string | null; at: number } | null = null;
  /**
   * During an outage, the endpoint's newest message as the new connection starts: from the stream's
   * ready frame, or read before a page (undefined: not known).
   */
  private newestBeforeConnect: string | null | undefined;

  constructor(private readonly options: ConnectionSupervisorOptions) {
    this.timing = options.timing;
    this.fetchCursor = options.startCursor;
    this.retryDelay = this.timing.reconnectInitialMs;
    this.wsRetryDelay = this.timing.wsRetryInitialMs;
  }

  private get halted(): boolean {
    return this.options.halt.aborted;
  }

  /**
   * Connects, and keeps connected, until the listener halts (or a fatal error: rejects with it). A
   * stream open at the halt stays open until `processing` has settled and its results are acknowledged.
   */
  async run(processing: Promise<void>): Promise<void> {
    if (!(await this.prepare())) return;
    let polling = this.options.mode === 'poll';
    while (!this.halted) {
      if (polling) {
        await this.poll();
        if (this.halted) return;
        polling = false; // time to try the WebSocket again (auto mode only)
        continue;
      }
      const end = await this.streamOnce(processing);
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
            await this.options.queue.drainTo(this.timing.queueLow, this.timing.queueLowBytes);
            continue;
          }
          const reason =
            end.cause === 'heartbeat'
              ? `no heartbeat from the server for ${formatDuration(this.timing.heartbeatTimeoutMs)}: the connection is dead`
              : `the WebSocket closed (${end.code}${end.reason === '' ? '' : ` ${end.reason}`})`;
          // A stream that stalled just before it closed was lost when the stall began (a stopped
          // process reads what was buffered, then the close), with the messages it had then.
          const now = this.options.now();
          const stall = this.stall !== null && now - this.stall.at < this.timing.heartbeatTimeoutMs ? this.stall : null;
          this.markDisconnected(reason, stall ?? { since: end.heardAt ?? now, cursor: this.fetchCursor });
          if (end.openMs < this.timing.flapLifetimeMs) {
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
    if (start !== null && this.latestAtStart !== null && this.latestAtStart > start) this.options.backlogEndsAt(this.latestAtStart);
    return true;
  }

  /**
   * Polling after an outage: the endpoint's newest message, where the catch-up ends; undefined when
   * it cannot be read. No longer than a heartbeat timeout: a pooled connection the outage killed
   * holds the next page no longer than that either.
   */
  private async newestOrUnknown(): Promise<string | null | undefined> {
    try {
      const signal = AbortSignal.any([this.options.halt, AbortSignal.timeout(this.timing.heartbeatTimeoutMs)]);
      return (await this.options.api.latestMessageId(signal))?.toLowerCase() ?? null;
    } catch (error) {
      if (isFatal(error)) throw error;
      return undefined;
    }
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
    this.wsRetryAt = this.options.now() + this.wsRetryDelay;
    this.options.events.fallback({ reason, retryWebSocketMs: this.wsRetryDelay });
    this.wsRetryDelay = Math.min(this.wsRetryDelay * 2, this.timing.wsRetryMaxMs);
  }

  private markConnected(transport: TransportName): void {
    this.disconnectedSince = null;
    this.limitedWarned = false;
    this.retryDelay = this.timing.reconnectInitialMs;
    if (this.connectedVia !== transport) {
      const reconnect = this.options.gap.open;
      this.connectedVia = transport;
      this.options.events.connected({ transport, cursor: this.fetchCursor, ...(reconnect ? { reconnect } : {}) });
      // Results kept from before (a previous run, a stream that went away) go by POST once polling.
      this.options.results.setPolling(transport === 'polling');
      if (reconnect) {
        const report = this.options.gap.reconnected(this.options.now(), this.newestBeforeConnect);
        this.newestBeforeConnect = undefined;
        if (report !== null) this.options.events.reconnected?.(report);
      }
    }
  }

  /** `lost`: when the server was last heard from, and the last message queued then (default: now, and the last one). */
  private markDisconnected(reason: string, lost?: { since: number; cursor: string | null }): void {
    this.disconnectedSince ??= this.options.now();
    this.disconnectReason = reason;
    if (this.connectedVia !== null) {
      this.options.gap.lost(lost?.since ?? this.options.now(), lost === undefined ? this.fetchCursor : lost.cursor);
      this.options.events.disconnected({ transport: this.connectedVia, reason });
      this.connectedVia = null;
      this.options.results.setPolling(false);
    }
    this.checkDisconnectLimit();
  }

  private checkDisconnectLimit(): void {
    const limit = this.options.exitOnDisconnectMs;
    if (limit === undefined || this.disconnectedSince === null) return;
    const down = this.options.now() - this.disconnectedSince;
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
    if (limit !== undefined && this.disconnectedSince !== null) delay = Math.max(0, Math.min(delay, this.disconnectedSince + limit - this.options.now()));
    this.options.events.reconnecting({ delayMs: delay, reason });
    await this.options.sleep(delay, this.options.halt);
    if (!this.halted) this.checkDisconnectLimit();
  }

  /** One WebSocket connection, from its upgrade to its end. */
  private async streamOnce(processing: Promise<void>): Promise<StreamEnd> {
    const { queue, results } = this.options;
    if (this.connectedVia !== 'websocket') this.options.events.connecting({ transport: 'websocket', after: this.fetchCursor });
    let overflow = false;
    this.stall = null;
    const connection = this.options.api.openStream(this.fetchCursor, {
      ready: (cursor, resultAcks, latest) => {
        // Where the catch-up of a reconnection ends: the server says, as the stream starts.
        if (this.options.gap.open) this.newestBeforeConnect = latest;
        if (this.fetchCursor === null) {
          // First run: the server starts "now" and says where that is.
          const start = cursor ?? ZERO_CURSOR;
          this.fetchCursor = start;
          void this.options.saveStart(start);
        }
        this.markConnected('websocket');
        this.wsRetryDelay = this.timing.wsRetryInitialMs;
        results.attach(connection, { acks: resultAcks });
      },
      resultAck: (resultId, outcome, message) => results.acknowledge(resultId, outcome, message),
      message: (message, replay) => {
        const id = message.message_id.toLowerCase();
        // The stream never repeats itself after `after`: an id at or below what it sent is a replay.
        if (replay || this.fetchCursor === null || id <= this.fetchCursor) {
          queue.push({ kind: 'replay', id, message });
          return;
        }
        if (overflow) return;
        // One body larger than the bound is still taken when no other waits: else it could never come.
        const full = queue.length >= this.timing.queueHigh || (queue.bytes > 0 && queue.bytes + bodyBytes(message) > this.timing.queueHighBytes);
        if (full) {
          // Not queued, and the cursor not moved: the next connection starts with this message.
          overflow = true;
          connection.close();
          return;
        }
        this.fetchCursor = id;
        queue.push({ kind: 'sequence', id, message });
      },
      cursor: (id) => {
        // Messages up to `id` were skipped by the filter: the cursor moves past them, in turn.
        if (overflow || this.fetchCursor === null || id <= this.fetchCursor) return;
        this.fetchCursor = id;
        queue.push({ kind: 'cursor', id });
      },
      // Shown at once, beside the deliveries: it is not a message, so it neither queues nor moves the cursor.
      rejection: (rejection) => this.showRejections([rejection]),
      silent: (silentMs) => this.options.events.heartbeatMissing({ silentMs }),
      stalled: (silentMs) => {
        const now = this.options.now();
        this.stall = { since: now - silentMs, cursor: this.fetchCursor, at: now };
      },
    });
    // Stopping: the delivery in flight finishes first, its result goes on this stream, and the
    // stream stays open (a while) for the acknowledgements.
    const onHalt = (): void =>
      void processing
        .then(() => results.acknowledged(connection))
        .then(() => connection.close());
    const halt = this.options.halt;
    if (this.halted) onHalt();
    else halt.addEventListener('abort', onHalt, { once: true });
    try {
      return await connection.ended;
    } finally {
      halt.removeEventListener('abort', onHalt);
      results.detach();
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
    if (this.options.now() - this.rejectionsReadAt < this.timing.pollIntervalMs) return;
    this.rejectionsReadAt = this.options.now();
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
    const { queue } = this.options;
    if (this.connectedVia !== 'polling') this.options.events.connecting({ transport: 'polling', after: this.fetchCursor });
    while (!this.halted) {
      if (this.options.mode === 'auto' && this.options.now() >= this.wsRetryAt) return;
      // A page holds at most LISTEN_PAGE_MAX_BODY_BYTES of bodies past its first message: read
      // below `queueLowBytes`, the queue stays under `queueHighBytes` as it does with the stream.
      if (queue.length >= this.timing.queueLow || queue.bytes >= this.timing.queueLowBytes) {
        await queue.drainTo(this.timing.queueLow - 1, this.timing.queueLowBytes - 1);
        continue;
      }
      if (this.fetchCursor === null) {
        // First run: start from the endpoint's newest message as it was when we started.
        const start = this.latestAtStart ?? ZERO_CURSOR;
        this.fetchCursor = start;
        await this.options.saveStart(start);
      }
      let page: { messages: CliMessageOut[]; cursor: string | null; more?: boolean };
      if (this.options.gap.open) this.newestBeforeConnect = await this.newestOrUnknown();
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
        queue.push({ kind: 'sequence', id, message });
      }
      if (page.cursor !== null && (this.fetchCursor === null || page.cursor > this.fetchCursor)) {
        this.fetchCursor = page.cursor;
        queue.push({ kind: 'cursor', id: page.cursor });
      }
      if (page.more === true || page.messages.length >= LISTEN_PAGE_SIZE) continue;
      // A filtered page stops at a scan limit: while it gets anywhere, more may wait.
      if (this.options.filtered === true && this.fetchCursor !== before) continue;
      let wait = this.timing.pollIntervalMs;
      if (this.options.mode === 'auto') wait = Math.max(0, Math.min(wait, this.wsRetryAt - this.options.now()));
      await this.options.sleep(wait, this.options.halt);
    }
  }
}
