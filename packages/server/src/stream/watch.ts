import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { RejectionOut } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import { listEndpointMessagesAfter } from '../db/inbound-messages.js';
import { toInboundEndpointMessageOut } from '../views/endpoint-message.js';
import { CursorPump, SOCKET_PAGE_SIZE } from './cursor-pump.js';
import { watchFrameText } from './frames.js';
import { STREAM_RECHECK_MS } from './hub.js';
import { SubscriberRegistry, type Subscriber } from './subscribers.js';

/** Above this much unsent data a watcher waits for the socket to drain before reading more. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/**
 * One page watching an endpoint: it sends the summary of every message committed after its start
 * cursor, in id order. Unlike a CLI stream it delivers nothing, takes no results and is not counted
 * as a listener; it works the same for cli- and forward-mode endpoints.
 */
export class Watcher implements Subscriber {
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

  close(): void {
    this.closed = true;
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
  private readonly watchers: SubscriberRegistry<Watcher>;

  constructor(
    readonly db: Database,
    readonly log: FastifyBaseLogger,
    recheckMs = STREAM_RECHECK_MS,
  ) {
    this.watchers = new SubscriberRegistry(recheckMs);
  }

  start(): void {
    this.watchers.start();
  }

  stop(): void {
    this.watchers.stop();
  }

  /** Starts a watcher after `cursor` (the endpoint's last message when the page connected). */
  watch(endpointId: string, socket: WebSocket, cursor: string | null): Watcher {
    return this.watchers.add(new Watcher(endpointId, socket, this, cursor));
  }

  unwatch(watcher: Watcher): void {
    this.watchers.remove(watcher);
  }

  /** Some process committed messages of `endpointId`. */
  committed(endpointId: string): void {
    this.watchers.of(endpointId)?.forEach((w) => w.wake());
  }

  /** Whether a page watches the endpoint. */
  hasWatchers(endpointId: string): boolean {
    return this.watchers.has(endpointId);
  }

  /** A request the endpoint's ingest URL refused, to every page watching it. */
  rejected(endpointId: string, rejection: RejectionOut): void {
    this.watchers.sendRaw(endpointId, () => watchFrameText({ type: 'rejection', rejection }));
  }

  /** Every watcher reads after its cursor (notices may have been lost). */
  wakeAll(): void {
    this.watchers.wakeAll();
  }
}
