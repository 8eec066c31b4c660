import { randomUUID } from 'node:crypto';
import type { ResultAckOutcome, StreamResultFrame } from '@hookrelay/shared';
import { HookrelayApiError } from '@hookrelay/shared/client';
import type { ForwardOutcome, ListenApi, ListenerEvents, ListenerTiming, PendingResultFrame, PendingResults, StreamConnection } from './ports.js';
import type { Sleep } from './sleep.js';

/** Results kept until the server acknowledges them: beyond either bound the oldest is dropped. */
export const MAX_PENDING_RESULTS = 1000;
export const MAX_PENDING_RESULT_BYTES = 4 * 1024 * 1024;

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

/** The report of the app's answer to a message, under a new result id; `listener`: the listener's name; `resigned`: it went as the server re-signed it. */
export function resultFrame(messageId: string, outcome: ForwardOutcome, listener: string | undefined, resigned = false): PendingResultFrame {
  const frame: PendingResultFrame = {
    type: 'result',
    message_id: messageId,
    status: outcome.status,
    latency_ms: outcome.latencyMs,
    error: outcome.error,
    result_id: randomUUID(),
  };
  if (listener !== undefined) frame.listener = listener;
  // Only a server that re-signs sends `resigned`, and only it takes the field back.
  if (resigned) frame.resigned = true;
  const response = outcome.response;
  if (response !== undefined) {
    frame.response_headers = response.headers;
    frame.response_body = response.body.toString('base64');
    frame.response_body_truncated = response.truncated;
  }
  return frame;
}

export interface ResultLedgerOptions {
  api: Pick<ListenApi, 'postResult'>;
  events: Pick<ListenerEvents, 'warning'>;
  timing: Pick<ListenerTiming, 'reportFlushMs' | 'reportGraceMs' | 'resultAckTimeoutMs' | 'journalEmptyDelayMs'>;
  /** The listener's stop: from then on results that cannot go on the stream are POSTed at once. */
  halt: AbortSignal;
  /** Results a previous run kept (from the cursor file): sent again first. */
  pending?: readonly PendingResultFrame[] | undefined;
  maxResults?: number | undefined;
  maxBytes?: number | undefined;
  /**
   * Every result the last save listed has been settled for `journalEmptyDelayMs`: the journal is to
   * be emptied (with a save of the cursor file).
   */
  journalStale(): void;
  sleep: Sleep;
  now: () => number;
}

/**
 * The results not known to be recorded, oldest first, by result id: each is kept (and saved with
 * the cursor) until the server acknowledges it (a `result_ack` frame, or a 2xx to its POST), and
 * sent again under the same id after a reconnection, so that a server that died between the report
 * and its commit loses no answer. A server that does not acknowledge results (an older one) has them
 * once they are sent.
 *
 * It sees the connection only as it is handed: a ready stream (`attach` / `detach`) or polling
 * (`setPolling`). Results go on the stream when there is one; by POST while polling or stopping, or
 * when no stream came back within `reportGraceMs`.
 */
export class ResultLedger {
  private readonly pending = new Map<string, PendingResult>();
  /** Results added since the last save started: the next one writes them. */
  private unsaved: PendingResultFrame[] = [];
  private pendingBytes = 0;
  private readonly maxResults: number;
  private readonly maxBytes: number;
  /** Results dropped for the bounds since the pending set was last empty (warned about once). */
  private droppedResults = 0;
  /** How many results the last save of the cursor file listed: removing one then saves again. */
  private savedResults = 0;
  /** Empties the journal once every result it lists has been settled for `journalEmptyDelayMs`. */
  private journalTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Called when a result is settled or the stream ends (a stop waits for the acknowledgements). */
  private readonly ackWaiters = new Set<() => void>();
  /** Runs when the oldest result sent on the stream has waited `resultAckTimeoutMs` for its acknowledgement. */
  private ackTimer: NodeJS.Timeout | undefined;
  /** When a stop stops waiting for the server to have the results: `reportFlushMs` after it began to. */
  private flushDeadline: number | null = null;
  private reporting: Promise<void> | null = null;
  private pumping = false;
  private reportTimer: NodeJS.Timeout | undefined;
  private readonly reportsGivenUp = new AbortController();
  /** The ready stream, and whether its server acknowledges results. */
  private stream: { connection: StreamConnection; acks: boolean } | null = null;
  private polling = false;

  constructor(private readonly options: ResultLedgerOptions) {
    this.maxResults = Math.max(1, options.maxResults ?? MAX_PENDING_RESULTS);
    this.maxBytes = options.maxBytes ?? MAX_PENDING_RESULT_BYTES;
    for (const frame of options.pending ?? []) this.add(frame);
  }

  /** How many results wait for the server. */
  get size(): number {
    return this.pending.size;
  }

  /** The last save of the cursor file listed results. */
  get journaled(): boolean {
    return this.savedResults > 0;
  }

  private get halted(): boolean {
    return this.options.halt.aborted;
  }

  /** Keeps a result until the server has it; beyond the bounds the oldest ones go (a warning says so, once). */
  add(frame: PendingResultFrame): void {
    const entry: PendingResult = { frame, bytes: resultBytes(frame), state: 'waiting', sentAt: 0 };
    this.pending.set(frame.result_id, entry);
    this.unsaved.push(frame);
    this.pendingBytes += entry.bytes;
    while (this.pending.size > this.maxResults || (this.pendingBytes > this.maxBytes && this.pending.size > 1)) {
      const [oldestId, oldest] = this.pending.entries().next().value as [string, PendingResult];
      this.forget(oldestId);
      if (this.droppedResults++ === 0) {
        this.options.events.warning(
          `more results wait for the server's acknowledgement than are kept (${this.maxResults}, ${Math.round(this.maxBytes / 1024)} KiB): ` +
            `the oldest are dropped, beginning with the result of message ${oldest.frame.message_id}, whose status on the server stays as it is`,
        );
      }
    }
  }

  /** What a save of the cursor file writes now: the results added since the last save, and all that wait. */
  journal(): PendingResults {
    const added = this.unsaved;
    this.unsaved = [];
    this.savedResults = this.pending.size;
    const pending = this.pending;
    return { added, count: pending.size, all: () => [...pending.values()].map((p) => p.frame) };
  }

  /** The save of `results` failed: the next save hands over what it added again. */
  saveFailed(results: PendingResults): void {
    this.unsaved = [...results.added, ...this.unsaved];
  }

  /** Results go on `connection`, a stream that is ready (`acks`: its server acknowledges them), until `detach`. */
  attach(connection: StreamConnection, options: { acks: boolean }): void {
    this.stream = { connection, acks: options.acks };
    this.send();
  }

  /** The stream has ended (or never became ready): what it took without acknowledging goes again, on the next stream or by POST. */
  detach(): void {
    this.stream = null;
    for (const entry of this.pending.values()) if (entry.state === 'sent') entry.state = 'waiting';
    clearTimeout(this.ackTimer);
    this.ackTimer = undefined;
    this.notifyAckWaiters();
    this.send();
  }

  /** Whether the listener polls: results then go by POST at once (those kept from before as soon as it starts). */
  setPolling(polling: boolean): void {
    this.polling = polling;
    if (polling) this.send();
  }

  /** The server has settled `resultId` (`result_ack`). */
  acknowledge(resultId: string, outcome: ResultAckOutcome, message: string | undefined): void {
    const entry = this.pending.get(resultId);
    if (entry === undefined) return;
    if (outcome === 'refused') this.options.events.warning(`the server refused the result of message ${entry.frame.message_id}: ${message ?? 'not a valid result'}`);
    this.forget(resultId);
  }

  /** The server has the result (or never will): it is forgotten, and soon also in the cursor file. */
  private forget(id: string): void {
    const entry = this.pending.get(id);
    if (entry === undefined) return;
    this.pending.delete(id);
    this.pendingBytes -= entry.bytes;
    if (this.pending.size === 0) this.droppedResults = 0;
    this.notifyAckWaiters();
    // The journal keeps acknowledged results until none is pending; then it is emptied a moment
    // later, if none is pending still: once for a run of webhooks, not after each answer.
    if (this.pending.size === 0 && this.savedResults > 0 && this.journalTimer === undefined && !this.stopping) {
      this.journalTimer = setTimeout(() => {
        this.journalTimer = undefined;
        if (this.pending.size === 0 && this.savedResults > 0) this.options.journalStale();
      }, this.options.timing.journalEmptyDelayMs);
      this.journalTimer.unref();
    }
  }

  private notifyAckWaiters(): void {
    for (const waiter of this.ackWaiters) waiter();
    this.ackWaiters.clear();
  }

  /** The time left to a stop for its results (acknowledgements, then POSTs): `reportFlushMs` in all. */
  private flushTimeLeft(): number {
    this.flushDeadline ??= this.options.now() + this.options.timing.reportFlushMs;
    return Math.max(0, this.flushDeadline - this.options.now());
  }

  /** Resolves once no result on `connection` awaits its acknowledgement, it has been detached, or the stop's time is up. */
  async acknowledged(connection: StreamConnection): Promise<void> {
    const timeout = new AbortController();
    let expired = false;
    void this.options.sleep(this.flushTimeLeft(), timeout.signal).then((slept) => {
      expired = slept;
      this.notifyAckWaiters();
    });
    try {
      while (!expired && this.stream?.connection === connection && [...this.pending.values()].some((p) => p.state === 'sent')) {
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
      const overdue = this.options.now() - this.options.timing.resultAckTimeoutMs;
      for (const entry of this.pending.values()) if (entry.state === 'sent' && entry.sentAt <= overdue) entry.state = 'waiting';
      this.send();
      this.armAckTimer();
    }, Math.max(0, oldest + this.options.timing.resultAckTimeoutMs - this.options.now()));
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
  send(): void {
    const stream = this.stream;
    let waiting = false;
    for (const [id, entry] of this.pending) {
      if (entry.state !== 'waiting') continue;
      if (stream === null || !stream.connection.sendResult(entry.frame)) {
        waiting = true;
        break;
      }
      if (stream.acks) {
        entry.state = 'sent';
        entry.sentAt = this.options.now();
        this.armAckTimer();
      } else this.forget(id);
    }
    if (!waiting) return;
    if (this.polling || this.halted) {
      this.startPump();
      return;
    }
    if (this.reportTimer === undefined && !this.pumping) {
      this.reportTimer = setTimeout(() => {
        this.reportTimer = undefined;
        this.startPump();
      }, this.options.timing.reportGraceMs);
      this.reportTimer.unref();
    }
  }

  private startPump(): void {
    if (this.reportTimer !== undefined) {
      clearTimeout(this.reportTimer);
      this.reportTimer = undefined;
    }
    if (this.pumping || this.firstWaiting() === undefined) return;
    this.pumping = true;
    this.reporting = this.pump();
  }

  /**
   * POSTs the waiting results one by one, each under its result id (the Idempotency-Key header); a
   * 2xx is the acknowledgement. While the server cannot be reached they are retried (the listener is
   * reconnecting meanwhile); when the stream is back the rest go on it; at shutdown, after
   * `reportFlushMs`, the rest stay pending (the cursor file keeps them).
   */
  private async pump(): Promise<void> {
    for (;;) {
      const next = this.firstWaiting();
      // `pumping` is cleared in the very turn the pump stops, so that a later report starts a new one.
      if (next === undefined || (this.stream !== null && !this.halted) || this.reportsGivenUp.signal.aborted) {
        this.pumping = false;
        if (!this.reportsGivenUp.signal.aborted) this.send();
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
          await this.options.sleep(Math.min(250 * 2 ** attempt, 10_000), this.reportsGivenUp.signal);
        }
      }
    }
  }

  /** At the stop: sends what waits, and gives the POSTs what is left of `reportFlushMs`; then gives up on the rest. */
  async flush(): Promise<void> {
    // The stop's own save empties the journal of what is settled by then.
    this.stopping = true;
    clearTimeout(this.journalTimer);
    this.journalTimer = undefined;
    this.send();
    if (!this.pumping || this.reporting === null) return;
    const timeout = new AbortController();
    await Promise.race([this.reporting, this.options.sleep(this.flushTimeLeft(), timeout.signal)]);
    timeout.abort();
    // Whatever is left is not waited for: the process is ending, and the cursor file keeps it.
    this.reportsGivenUp.abort();
    for (const entry of this.pending.values()) if (entry.state === 'posting') entry.state = 'waiting';
  }
}
