import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';

/** Rows one read of a socket's catch-up takes: a full page is followed by the next read at once. */
export const SOCKET_PAGE_SIZE = 100;

export interface CursorPumpOptions {
  socket: WebSocket;
  /** Above this much unsent data the pump waits for the socket to drain before reading more. */
  maxBufferedBytes: number;
  isClosed(): boolean;
  /**
   * Reads one page after the owner's cursor, sends it and moves the cursor: `more` when a full page
   * came back, so another may follow at once.
   */
  readPage(): Promise<'more' | 'done'>;
  /** After each run that read to the end. */
  afterRun?(): void;
  log: FastifyBaseLogger;
  endpointId: string;
  /** Logged once per run of failed reads. */
  failureMessage: string;
}

/**
 * Reads after a socket's cursor, page by page, each time it is woken: a wake-up during a read is
 * remembered and read after it, never lost; a socket with too much unsent data pauses the reading;
 * a failed read (the database is away) is retried every second, with one warning per run of
 * failures, since during an outage every connected socket retries.
 */
export class CursorPump {
  private running = false;
  private pending = false;
  private failing = false;

  constructor(private readonly options: CursorPumpOptions) {}

  /** A read is under way. */
  get reading(): boolean {
    return this.running;
  }

  /** A read is under way or due: what the socket was sent may be behind the endpoint. */
  get busy(): boolean {
    return this.running || this.pending;
  }

  wake(): void {
    this.pending = true;
    if (!this.running) void this.run();
  }

  private async run(): Promise<void> {
    const { socket, maxBufferedBytes, isClosed } = this.options;
    this.running = true;
    try {
      while (this.pending && !isClosed()) {
        this.pending = false;
        let page: 'more' | 'done' = 'more';
        while (page === 'more' && !isClosed()) {
          page = await this.options.readPage();
          this.failing = false;
          while (!isClosed() && socket.bufferedAmount > maxBufferedBytes) await new Promise((r) => setTimeout(r, 10));
        }
      }
      this.options.afterRun?.();
    } catch (error) {
      if (!this.failing) this.options.log.warn({ err: error, inbound_endpoint_id: this.options.endpointId }, this.options.failureMessage);
      this.failing = true;
      setTimeout(() => this.wake(), 1000).unref();
    } finally {
      this.running = false;
    }
  }
}
