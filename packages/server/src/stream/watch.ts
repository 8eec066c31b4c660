import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { RejectionOut } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import { listEndpointMessagesAfter } from '../db/inbound-messages.js';
import { toInboundEndpointMessageOut } from '../views/endpoint-message.js';
import { CursorPump, SOCKET_PAGE_SIZE } from './cursor-pump.js';
import { watchFrameText } from './frames.js';
import { STREAM_RECHECK_MS } from './hub.js';

/** Above this much unsent data a watcher waits for the socket to drain before reading more. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/**
 * One page watching an endpoint: it sends the summary of every message committed after its start
 * cursor, in id order. Unlike a CLI stream it delivers nothing, takes no results and is not counted
 * as a listener; it works the same for cli- and forward-mode endpoints.
 */
export class Watcher {
  private readonly pump: CursorPump;
  closed = false;

  constructor(
    readonly endpointId: string,
    private readonly socket: WebSocket,
    private readonly hub: WatchHub,
    private cursor: string | null,
  ) {
    this.pump = new CursorPump({
      socket,
      maxBufferedBytes: MAX_BUFFERED_BYTES,
      isClosed: () => this.closed,
      readPage: () => this.readPage(),
      log: hub.log,
      endpointId,
      failureMessage: 'watch read failed; retrying every second',
    });
  }

  wake(): void {
    this.pump.wake();
  }

  /** A frame outside the message sequence. */
  sendRaw(text: string): void {
    if (!this.closed) this.socket.send(text);
  }

  private async readPage(): Promise<'more' | 'done'> {
    const rows = await listEndpointMessagesAfter(this.hub.db.sql, this.endpointId, this.cursor, SOCKET_PAGE_SIZE);
    if (rows.length === 0 || this.closed) return 'done';
    for (const row of rows) this.socket.send(watchFrameText({ type: 'message', message: toInboundEndpointMessageOut(row, []) }));
    this.cursor = rows[rows.length - 1]!.id;
    return rows.length < SOCKET_PAGE_SIZE ? 'done' : 'more';
  }
}

/**
 * The process's watching pages by endpoint. The commit notices the CLI streams hear (any process's
 * ingestion) wake its watchers too (`committed`), and like the streams it reads after each
 * watcher's cursor now and then in case a notice was lost.
 */
export class WatchHub {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private recheckTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly db: Database,
    readonly log: FastifyBaseLogger,
    private readonly recheckMs = STREAM_RECHECK_MS,
  ) {}

  start(): void {
    this.recheckTimer = setInterval(() => this.wakeAll(), this.recheckMs);
    this.recheckTimer.unref();
  }

  stop(): void {
    clearInterval(this.recheckTimer);
    this.watchers.forEach((set) => set.forEach((w) => (w.closed = true)));
    this.watchers.clear();
  }

  /** Starts a watcher after `cursor` (the endpoint's last message when the page connected). */
  watch(endpointId: string, socket: WebSocket, cursor: string | null): Watcher {
    const watcher = new Watcher(endpointId, socket, this, cursor);
    const set = this.watchers.get(endpointId) ?? new Set();
    set.add(watcher);
    this.watchers.set(endpointId, set);
    return watcher;
  }

  unwatch(watcher: Watcher): void {
    watcher.closed = true;
    const set = this.watchers.get(watcher.endpointId);
    set?.delete(watcher);
    if (set?.size === 0) this.watchers.delete(watcher.endpointId);
  }

  /** Some process committed messages of `endpointId`. */
  committed(endpointId: string): void {
    this.watchers.get(endpointId)?.forEach((w) => w.wake());
  }

  /** Whether a page watches the endpoint. */
  hasWatchers(endpointId: string): boolean {
    return (this.watchers.get(endpointId)?.size ?? 0) > 0;
  }

  /** A request the endpoint's ingest URL refused, to every page watching it. */
  rejected(endpointId: string, rejection: RejectionOut): void {
    const targets = this.watchers.get(endpointId);
    if (!targets || targets.size === 0) return;
    const text = watchFrameText({ type: 'rejection', rejection });
    targets.forEach((w) => w.sendRaw(text));
  }

  /** Every watcher reads after its cursor (notices may have been lost). */
  wakeAll(): void {
    this.watchers.forEach((set) => set.forEach((w) => w.wake()));
  }
}
