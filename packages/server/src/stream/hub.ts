import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { CliMessageOut } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import { findLiveInboundMessage, listInboundMessagesAfter } from '../db/inbound-messages.js';
import { INBOUND_MESSAGES_CHANNEL } from '../ingest/batcher.js';
import type { PayloadStore } from '../storage/payload-store.js';
import { toCliMessages } from './cli-message.js';

/** NOTIFY channel: a cli-mode message was replayed (payload: `<endpoint id>:<message id>`). */
export const INBOUND_REPLAY_CHANNEL = 'hookrelay_inbound_replay';

const PAGE_SIZE = 100;
/** Above this much unsent data a stream waits for the socket to drain before reading more. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/**
 * One connected CLI. It owns its cursor: every wake-up reads the endpoint's messages after it, in
 * id order, so the backlog and live messages join with no gap and no duplicate. Wake-ups during a
 * read are remembered, never lost.
 */
export class StreamSubscriber {
  private pumping = false;
  private dirty = false;
  private started = false;
  private cursor: string | null = null;
  closed = false;

  constructor(
    readonly endpointId: string,
    private readonly socket: WebSocket,
    private readonly hub: StreamHub,
  ) {}

  /** Begins reading after `cursor` (null: from the endpoint's first message). */
  start(cursor: string | null): void {
    this.cursor = cursor;
    this.started = true;
    this.wake();
  }

  /** New messages may exist: read them (now, or after the read in progress, or once started). */
  wake(): void {
    this.dirty = true;
    if (this.started && !this.pumping) void this.pump();
  }

  send(message: CliMessageOut): void {
    if (!this.closed) this.socket.send(JSON.stringify({ type: 'message', message }));
  }

  /**
   * A replay is marked as one, so the CLI forwards it without taking it as its stream position;
   * a stream that has not sent `ready` yet gets none (its backlog read will bring the message).
   */
  sendReplay(message: CliMessageOut): void {
    if (!this.closed && this.started) this.socket.send(JSON.stringify({ type: 'message', replay: true, message }));
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      while (this.dirty && !this.closed) {
        this.dirty = false;
        for (;;) {
          const rows = await listInboundMessagesAfter(this.hub.db.sql, this.endpointId, this.cursor, PAGE_SIZE);
          if (rows.length === 0 || this.closed) break;
          const messages = await toCliMessages(this.hub.payloadStore, this.hub.db.sql, rows, true);
          for (const message of messages) this.send(message);
          this.cursor = rows[rows.length - 1]!.id;
          while (!this.closed && this.socket.bufferedAmount > MAX_BUFFERED_BYTES) await new Promise((r) => setTimeout(r, 10));
          if (rows.length < PAGE_SIZE) break;
        }
      }
    } catch (error) {
      this.hub.log.warn({ err: error, inbound_endpoint_id: this.endpointId }, 'stream read failed; retrying on the next wake-up');
      // A transient database error: try again shortly rather than leaving the CLI behind.
      setTimeout(() => this.wake(), 1000).unref();
    } finally {
      this.pumping = false;
    }
  }
}

/**
 * The process's connected CLIs by endpoint. One LISTEN per process hears commits of any process
 * (PostgreSQL NOTIFY; in-process on PGlite) and wakes the streams of the endpoints concerned.
 */
export class StreamHub {
  private readonly subscribers = new Map<string, Set<StreamSubscriber>>();
  private unlisten: (() => Promise<void>)[] = [];

  constructor(
    readonly db: Database,
    readonly payloadStore: PayloadStore,
    readonly log: FastifyBaseLogger,
  ) {}

  async start(): Promise<void> {
    this.unlisten.push(
      await this.db.listen(INBOUND_MESSAGES_CHANNEL, (payload) => {
        for (const endpointId of payload.split(',')) this.subscribers.get(endpointId)?.forEach((s) => s.wake());
      }),
      await this.db.listen(INBOUND_REPLAY_CHANNEL, (payload) => void this.pushReplay(payload)),
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.unlisten.map((u) => u().catch(() => {})));
    this.unlisten = [];
    this.subscribers.forEach((set) => set.forEach((s) => (s.closed = true)));
    this.subscribers.clear();
  }

  get connectedCount(): number {
    let n = 0;
    this.subscribers.forEach((set) => (n += set.size));
    return n;
  }

  /**
   * Registers a stream before its start cursor is read, so that a commit landing in between still
   * wakes it; the caller then calls `start(cursor)`.
   */
  subscribe(endpointId: string, socket: WebSocket): StreamSubscriber {
    const subscriber = new StreamSubscriber(endpointId, socket, this);
    const set = this.subscribers.get(endpointId) ?? new Set();
    set.add(subscriber);
    this.subscribers.set(endpointId, set);
    return subscriber;
  }

  unsubscribe(subscriber: StreamSubscriber): void {
    subscriber.closed = true;
    const set = this.subscribers.get(subscriber.endpointId);
    set?.delete(subscriber);
    if (set?.size === 0) this.subscribers.delete(subscriber.endpointId);
  }

  private async pushReplay(payload: string): Promise<void> {
    const [endpointId, messageId] = payload.split(':');
    const targets = endpointId ? this.subscribers.get(endpointId) : undefined;
    if (!endpointId || !messageId || !targets || targets.size === 0) return;
    try {
      const row = await findLiveInboundMessage(this.db.sql, endpointId, messageId);
      if (!row) return;
      const [message] = await toCliMessages(this.payloadStore, this.db.sql, [row], true);
      if (message) targets.forEach((subscriber) => subscriber.sendReplay(message));
    } catch (error) {
      this.log.warn({ err: error, inbound_endpoint_id: endpointId }, 'replay push failed');
    }
  }
}
