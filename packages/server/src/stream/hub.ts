import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { CliMessageOut, RejectionOut } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import { findLiveInboundMessages } from '../db/inbound-messages.js';
import type { PayloadStore } from '../storage/payload-store.js';
import { CursorPump, SOCKET_PAGE_SIZE } from './cursor-pump.js';
import { streamFrameText } from './frames.js';
import { byReference, PAYLOAD_STORED, readCliMessagesAfter, toCliMessage, toCliMessages, type CommittedInboundMessage, type ResignContext } from './cli-message.js';
import { lateSignature } from '../ingest/resign.js';
import type { SenderSigningCache } from '../ingest/signing-cache.js';
import { matchesFilter, type MessageFilter } from './listen-filter.js';
import { SubscriberRegistry, type Subscriber } from './subscribers.js';
import { NOOP_TRACING, type Span, type Tracing } from '../tracing/tracing.js';

/** A stream's read without a NOTIFY (see StreamHub): one indexed query per connected CLI each time. */
export const STREAM_RECHECK_MS = 10_000;
/** Above this much unsent data a stream waits for the socket to drain before reading more. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

const messageFrame = (message: CliMessageOut): string => streamFrameText({ type: 'message', message });

/** The stream frame of a message this process has just committed (or is committing); a large one names its body. */
export const committedFrame = (row: CommittedInboundMessage): string => messageFrame(toCliMessage(row, byReference(row) ? PAYLOAD_STORED : row.payload, true));

/** How often, at most, a filtered stream tells its CLI that it skipped live messages (a `cursor` frame). */
export const CURSOR_FRAME_INTERVAL_MS = 1000;

/**
 * One connected CLI. It owns its cursor: every wake-up reads the endpoint's messages after it, in
 * id order, so the backlog and live messages join with no gap and no duplicate. Wake-ups during a
 * read are remembered, never lost.
 *
 * With a filter, messages that do not match are skipped and still move the cursor; the CLI learns
 * of a run of skipped messages from a `cursor` frame, sent when a read (the catch-up included) ends
 * on skipped messages, and at most once per CURSOR_FRAME_INTERVAL_MS while live ones are skipped.
 */
export class StreamSubscriber implements Subscriber {
  private readonly pump: CursorPump;
  private started = false;
  /** The last message id sent or skipped (or the start cursor): everything up to it has been considered. */
  private cursor: string | null = null;
  /** The last id the CLI was told of, by a message frame or a cursor frame. */
  private told: string | null = null;
  private lastCursorFrameAt = 0;
  private cursorFrameTimer: NodeJS.Timeout | undefined;
  closed = false;

  constructor(
    readonly endpointId: string,
    private readonly socket: WebSocket,
    private readonly hub: StreamHub,
    readonly filter: MessageFilter | null = null,
  ) {
    this.pump = new CursorPump({
      socket,
      maxBufferedBytes: MAX_BUFFERED_BYTES,
      isClosed: () => this.closed,
      readPage: () => this.readPage(),
      afterRun: () => this.tellSkipped(),
      log: hub.log,
      endpointId,
      failureMessage: 'stream read failed; retrying every second',
    });
  }

  /** Begins reading after `cursor` (null: from the endpoint's first message). */
  start(cursor: string | null): void {
    this.cursor = cursor;
    this.told = cursor;
    this.started = true;
    this.wake();
  }

  /** New messages may exist: read them (now, or after the read in progress, or once started). */
  wake(): void {
    if (this.started) this.pump.wake();
  }

  /**
   * Some process committed messages of this endpoint, the last being `lastId` when the NOTIFY says
   * so: a stream that has already sent up to it has nothing to read.
   */
  committed(lastId: string | undefined): void {
    if (lastId !== undefined && this.started && this.cursor !== null && this.cursor >= lastId) return;
    this.wake();
  }

  /**
   * Sends `frames` (the messages `rows`, committed right after `after`) when nothing can come
   * between: the stream is started, idle, has nothing pending and stands exactly at `after`. Rows it
   * has already sent are skipped; in any other state it reads them back instead.
   */
  deliverCommitted(after: string | null, rows: readonly CommittedInboundMessage[], frame: (index: number) => string): void {
    if (this.closed) return;
    const last = rows[rows.length - 1]!.id;
    if (this.started && this.cursor !== null && this.cursor >= last) return;
    if (!this.started || this.pump.busy || this.cursor !== after || this.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.wake();
      return;
    }
    rows.forEach((row, i) => {
      if (!matchesFilter(this.filter, row)) return;
      const span = this.hub.pushSpan(this.endpointId, row.id, row.trace_context, 'commit');
      this.socket.send(frame(i));
      span.end();
      this.told = row.id;
    });
    this.cursor = last;
    this.tellSkipped();
  }

  send(message: CliMessageOut, traceContext: string | null = null): void {
    if (this.closed) return;
    const span = this.hub.pushSpan(this.endpointId, message.message_id, traceContext, 'read');
    this.socket.send(messageFrame(message));
    span.end();
    this.told = message.message_id;
  }

  /** Whether this stream takes a message (its filter). */
  wants(message: { event_type: string | null; path: string }): boolean {
    return matchesFilter(this.filter, message);
  }

  /** Sends nothing more and ends `cursor` frames (the connection closed, or the process stops). */
  close(): void {
    this.closed = true;
    clearTimeout(this.cursorFrameTimer);
    this.cursorFrameTimer = undefined;
  }

  /**
   * After a read or a delivery: when the stream has skipped messages since the last frame, tells
   * the CLI its cursor now, or once the interval since the last cursor frame has passed.
   */
  private tellSkipped(): void {
    if (this.filter === null || this.closed || this.cursor === null || this.cursor === this.told || this.cursorFrameTimer) return;
    const wait = this.lastCursorFrameAt + CURSOR_FRAME_INTERVAL_MS - Date.now();
    if (wait <= 0) {
      this.sendCursorFrame();
      return;
    }
    this.cursorFrameTimer = setTimeout(() => {
      this.cursorFrameTimer = undefined;
      // Not while a read is under way: its end tells the cursor it reached.
      if (!this.pump.reading) this.sendCursorFrame();
    }, wait);
    this.cursorFrameTimer.unref();
  }

  private sendCursorFrame(): void {
    if (this.closed || this.cursor === null || this.cursor === this.told) return;
    this.socket.send(streamFrameText({ type: 'cursor', cursor: this.cursor }));
    this.told = this.cursor;
    this.lastCursorFrameAt = Date.now();
  }

  /**
   * A replay is marked as one, so the CLI forwards it without taking it as its stream position;
   * a stream that has not sent `ready` yet gets none (its backlog read will bring the message).
   */
  sendReplay(message: CliMessageOut, traceContext: string | null = null): void {
    if (this.closed || !this.started || !this.wants(message)) return;
    const span = this.hub.pushSpan(this.endpointId, message.message_id, traceContext, 'replay');
    this.socket.send(streamFrameText({ type: 'message', replay: true, message }));
    span.end();
  }

  /** A frame outside the message sequence, once the stream has sent `ready`. */
  sendRaw(text: string): void {
    if (!this.closed && this.started) this.socket.send(text);
  }

  private async readPage(): Promise<'more' | 'done'> {
    const read = await readCliMessagesAfter(this.hub.payloadStore, this.hub.db.sql, this.endpointId, this.cursor, SOCKET_PAGE_SIZE, true, {
      filter: this.filter,
      resign: await this.hub.resignContext(this.endpointId),
    });
    if (read.cursor === null || this.closed) return 'done';
    read.messages.forEach((message, i) => this.send(message, read.traceContexts[i] ?? null));
    this.cursor = read.cursor;
    return read.more ? 'more' : 'done';
  }
}

export interface StreamHubOptions {
  /**
   * How often every stream reads after its cursor even without a NOTIFY (default STREAM_RECHECK_MS).
   * The NOTIFY of a commit is sent after it (IngestBatcher), so a process that dies in between
   * never sends it: the check bounds how long another process's CLI can then wait for that message.
   */
  recheckMs?: number;
  /** A span per message frame sent (`hookrelay.stream.push`). */
  tracing?: Tracing;
  /**
   * Late messages go re-signed (ingest/resign.ts): the endpoints' settings and the threshold.
   * Without it, every message goes with the headers it arrived with.
   */
  resign?: { cache: SenderSigningCache; afterSeconds: number };
}

/**
 * The process's connected CLIs by endpoint. The process's one LISTEN on the commit channel (any
 * process's commits: PostgreSQL NOTIFY, in-process on PGlite) calls `committed` for the endpoints
 * concerned, and its LISTEN on the replay channel `replayed`.
 */
export class StreamHub {
  private readonly subscribers: SubscriberRegistry<StreamSubscriber>;

  private readonly tracing: Tracing;
  private readonly resign: StreamHubOptions['resign'];
  /** Per endpoint, the replay push under way: the next one starts after it. */
  private readonly replays = new Map<string, Promise<void>>();

  constructor(
    readonly db: Database,
    readonly payloadStore: PayloadStore,
    readonly log: FastifyBaseLogger,
    options: StreamHubOptions = {},
  ) {
    this.subscribers = new SubscriberRegistry(options.recheckMs ?? STREAM_RECHECK_MS);
    this.tracing = options.tracing ?? NOOP_TRACING;
    this.resign = options.resign;
  }

  /** How a read of `endpointId` re-signs its late messages; null when the hub re-signs none. */
  async resignContext(endpointId: string): Promise<ResignContext | null> {
    if (this.resign === undefined) return null;
    return { signing: await this.resign.cache.get(endpointId), afterSeconds: this.resign.afterSeconds };
  }

  /**
   * The span of one message frame sent to a CLI (`hookrelay.stream.push`), a child of the message's
   * stored context; `source` says how the stream got it: from this process's commit, by reading
   * after its cursor, or as a replay (`poll`: a listen page's message).
   */
  pushSpan(endpointId: string, messageId: string, traceContext: string | null, source: 'commit' | 'read' | 'replay' | 'poll'): Span {
    if (!this.tracing.enabled) return this.tracing.startSpan('');
    return this.tracing.startSpan('hookrelay.stream.push', {
      kind: 'producer',
      parent: traceContext,
      attributes: { 'hookrelay.message.id': messageId, 'hookrelay.inbound_endpoint.id': endpointId, 'hookrelay.stream.source': source },
    });
  }

  start(): void {
    this.subscribers.start();
  }

  stop(): void {
    this.subscribers.stop();
  }

  /**
   * Some process committed messages of `endpointId`, the last being `lastId` when the notice names
   * it (streams already past it skip the read).
   */
  committed(endpointId: string, lastId: string | undefined): void {
    this.subscribers.of(endpointId)?.forEach((s) => s.committed(lastId));
  }

  /** Every stream reads after its cursor: notices sent while the listening connection was re-established are lost. */
  wakeAll(): void {
    this.subscribers.wakeAll();
  }

  /** Whether a stream of this process serves the endpoint (else `publishCommitted` has nothing to do). */
  hasSubscribers(endpointId: string): boolean {
    return this.subscribers.has(endpointId);
  }

  get connectedCount(): number {
    return this.subscribers.count;
  }

  /**
   * Registers a stream before its start cursor is read, so that a commit landing in between still
   * wakes it; the caller then calls `start(cursor)`.
   */
  subscribe(endpointId: string, socket: WebSocket, filter: MessageFilter | null = null): StreamSubscriber {
    return this.subscribers.add(new StreamSubscriber(endpointId, socket, this, filter));
  }

  unsubscribe(subscriber: StreamSubscriber): void {
    this.subscribers.remove(subscriber);
  }

  /**
   * Hands this process's streams of `endpointId` the messages one commit has just stored for it, so
   * that they go out without a read-back. The caller (the ingest path) calls it after the commit,
   * once per commit and endpoint, with:
   * - `after`: the endpoint's last committed message id before this commit (null when it had none),
   *   as read under the endpoint's row lock in the committing transaction;
   * - `rows`: every message of the endpoint that commit stored, in id order (ids above `after`),
   *   with their payload bytes.
   *
   * A stream that stands exactly at `after` and is idle sends them at once and moves its cursor to
   * the last one. Any other stream (catching up, reading, not started yet, behind on a slow socket,
   * or at another cursor) is only woken, and reads them back in order after its cursor; one that has
   * already sent them skips them. So no stream gets a message twice or out of order, whatever the
   * order in which commits, their NOTIFYs and these calls arrive. Rows that break the contract (not
   * in increasing id order, or not above `after`) only wake the streams.
   *
   * It does not replace the NOTIFY: other processes' streams still need it, and a NOTIFY that names
   * the commit's last id (`<endpoint id>:<last id>`) costs the streams served here no read.
   */
  publishCommitted(endpointId: string, after: string | null, rows: readonly CommittedInboundMessage[]): void {
    const targets = this.subscribers.of(endpointId);
    if (targets === undefined || rows.length === 0) return;
    const ordered = rows.every((row, i) => (i === 0 ? after === null || row.id > after : row.id > rows[i - 1]!.id));
    // A late message is re-signed as it is read (a signed timestamp outside the threshold passed the
    // endpoint's wider tolerance): the frame rendered during the commit carries the sender's signature.
    const now = Date.now();
    const resign = this.resign;
    const late = resign !== undefined && rows.some((row) => row.signing !== undefined && lateSignature(row.signing, row, now, resign.afterSeconds) !== null);
    if (!ordered || late) {
      targets.forEach((s) => s.wake());
      return;
    }
    // Rendered once, for the first stream that sends it, unless the ingest rendered it already.
    const frames: (string | undefined)[] = new Array(rows.length);
    const frame = (i: number) => (frames[i] ??= rows[i]!.frame ?? committedFrame(rows[i]!));
    targets.forEach((s) => s.deliverCommitted(after, rows, frame));
  }

  /**
   * A request the endpoint's ingest URL refused: sent to its started streams as it is, beside the
   * messages (no cursor moves, no filter applies: a refusal is what a developer watches for).
   */
  rejected(endpointId: string, rejection: RejectionOut): void {
    this.subscribers.sendRaw(endpointId, () => streamFrameText({ type: 'rejection', rejection }));
  }

  /**
   * Cli-mode messages were replayed: they go again to the started streams of their endpoint that
   * take them, in the order named. The replays of one endpoint go out one notice after another, so
   * that a bulk replay's chunks reach each listener in order however long each read takes.
   */
  replayed(endpointId: string, messageIds: readonly string[]): Promise<void> {
    if (!this.subscribers.has(endpointId)) return Promise.resolve();
    const pushed = (this.replays.get(endpointId) ?? Promise.resolve()).then(() => this.pushReplays(endpointId, messageIds));
    this.replays.set(endpointId, pushed);
    void pushed.then(() => {
      if (this.replays.get(endpointId) === pushed) this.replays.delete(endpointId);
    });
    return pushed;
  }

  private async pushReplays(endpointId: string, messageIds: readonly string[]): Promise<void> {
    if (!this.subscribers.has(endpointId)) return;
    try {
      const rows = await findLiveInboundMessages(this.db.sql, endpointId, messageIds);
      const messages = await toCliMessages(this.payloadStore, this.db.sql, rows, true, await this.resignContext(endpointId));
      messages.forEach((message, i) => this.subscribers.of(endpointId)?.forEach((subscriber) => subscriber.sendReplay(message, rows[i]!.trace_context)));
    } catch (error) {
      this.log.warn({ err: error, inbound_endpoint_id: endpointId }, 'replay push failed');
    }
  }
}
