import type { CliMessageOut } from '@hookrelay/shared';

export type WorkItem =
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
export class WorkQueue {
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
