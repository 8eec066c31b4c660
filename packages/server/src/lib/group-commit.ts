/**
 * What a failed commit does to its batch (`GroupCommitOptions.onFailure`).
 *
 * - `fail`: every item of the batch fails with `error`.
 * - `split`: each item is committed again on its own, in order, so that one bad item fails only its
 *   own caller; a failure of one of them goes through `onFailure` again (a batch of one that asks to
 *   split fails instead).
 * - `retry`: the batch is committed again after `delayMs`, together with items that queued meanwhile
 *   (within the batch limits), so that nothing queued behind it overtakes it.
 */
export type FailureAction = { action: 'fail'; error: unknown } | { action: 'split' } | { action: 'retry'; delayMs: number };

export interface GroupCommitOptions<T, R> {
  /** Writes one batch; resolves with one outcome per item, in the items' order. */
  commit: (items: T[]) => Promise<readonly R[]>;
  /** Most items in one batch (default 500). */
  maxBatch?: number;
  /** The size an item adds to a batch, counted against `maxBatchSize` (a batch always takes its first item). */
  sizeOf?: (item: T) => number;
  maxBatchSize?: number;
  /** Items with the same key never share a batch: a batch ends before a second item of a key it holds. */
  keyOf?: (item: T) => string;
  /** Batches committing at once (default 1). */
  maxInFlight?: number;
  /** How long an item enqueued with `canWait` may be held for others to share its commit (default 0). */
  lingerMs?: number;
  /**
   * Decides what a failed commit does (default: the whole batch fails). `failures` counts the
   * batch's consecutive failed commits, 1 for the first.
   */
  onFailure?: (error: unknown, batch: readonly T[], failures: number) => FailureAction;
}

interface Pending<T, R> {
  item: T;
  canWait: boolean;
  resolve(outcome: R): void;
  reject(error: unknown): void;
}

const failWhole = (error: unknown): FailureAction => ({ action: 'fail', error });

/**
 * Group commit: items queue while a batch is being written, and the next batch takes them all, so
 * that many callers share one transaction and one WAL flush while each still waits for the commit
 * that holds its own item. A batch starts in the turn of the event loop after its first item
 * arrives, so that the items of one turn (one socket read, one burst of requests) go together; items
 * that queued while `maxInFlight` batches were committing go as soon as one of them ends. Each
 * caller's promise settles with its own item's outcome.
 *
 * An item enqueued with `canWait` (nobody waits on its answer) may be held up to `lingerMs` for
 * company; one that someone waits on, a full batch, or `idle()` sends the held ones at once.
 */
export class GroupCommit<T, R> {
  private readonly queue: Pending<T, R>[] = [];
  /** Queued items that may not be held for the linger. */
  private urgent = 0;
  private joining = false;
  private lingering: NodeJS.Timeout | null = null;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly commit: (items: T[]) => Promise<readonly R[]>;
  private readonly maxBatch: number;
  private readonly sizeOf: ((item: T) => number) | undefined;
  private readonly maxBatchSize: number;
  private readonly keyOf: ((item: T) => string) | undefined;
  private readonly maxInFlight: number;
  private readonly lingerMs: number;
  private readonly onFailure: (error: unknown, batch: readonly T[], failures: number) => FailureAction;

  constructor(options: GroupCommitOptions<T, R>) {
    this.commit = options.commit;
    this.maxBatch = Math.max(1, options.maxBatch ?? 500);
    this.sizeOf = options.sizeOf;
    this.maxBatchSize = options.maxBatchSize ?? Infinity;
    this.keyOf = options.keyOf;
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 1);
    this.lingerMs = options.lingerMs ?? 0;
    this.onFailure = options.onFailure ?? failWhole;
  }

  /** Resolves with the item's outcome once the commit that holds it is done. */
  enqueue(item: T, canWait = false): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, canWait, resolve, reject });
      if (!canWait) this.urgent++;
      this.schedule();
    });
  }

  /** Whether anything is queued, held or being committed. */
  get busy(): boolean {
    return this.inFlight > 0 || this.queue.length > 0 || this.joining;
  }

  /** Resolves once everything queued so far is settled (graceful stop); held items go at once. */
  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.joining || this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    if (this.urgent > 0 || this.idleWaiters.length > 0 || this.queue.length >= this.maxBatch || this.lingerMs <= 0) {
      if (this.lingering !== null) clearTimeout(this.lingering);
      this.lingering = null;
      this.joining = true;
      setImmediate(() => {
        this.joining = false;
        this.launch();
      });
    } else {
      this.lingering ??= setTimeout(() => {
        this.lingering = null;
        this.launch();
      }, this.lingerMs);
    }
  }

  private launch(): void {
    if (this.lingering !== null) {
      clearTimeout(this.lingering);
      this.lingering = null;
    }
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight) {
      this.inFlight++;
      void this.run(this.take()).finally(() => {
        this.inFlight--;
        this.afterBatch();
      });
    }
    this.settleIdleWaiters();
  }

  /** What queued during the commit goes at once if someone waits on it, else after the linger. */
  private afterBatch(): void {
    if (this.queue.length > 0 && (this.urgent > 0 || this.idleWaiters.length > 0 || this.queue.length >= this.maxBatch || this.lingerMs <= 0)) {
      this.launch();
      return;
    }
    this.schedule();
    this.settleIdleWaiters();
  }

  private settleIdleWaiters(): void {
    if (this.idleWaiters.length === 0 || this.busy) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Takes from the head of the queue what fits after `batch` (a batch being retried). */
  private take(batch?: Pending<T, R>[]): Pending<T, R>[] {
    const { queue, sizeOf, keyOf } = this;
    const held = batch?.length ?? 0;
    let size = 0;
    let keys: Set<string> | undefined;
    if (sizeOf && batch) for (const p of batch) size += sizeOf(p.item);
    if (keyOf) keys = new Set(batch?.map((p) => keyOf(p.item)));
    let count = 0;
    while (count < queue.length && held + count < this.maxBatch) {
      const item = queue[count]!.item;
      if (sizeOf) {
        const itemSize = sizeOf(item);
        if (held + count > 0 && size + itemSize > this.maxBatchSize) break;
        size += itemSize;
      }
      if (keys) {
        const key = keyOf!(item);
        if (keys.has(key)) break;
        keys.add(key);
      }
      count++;
    }
    const taken = queue.splice(0, count);
    for (const p of taken) if (!p.canWait) this.urgent--;
    return batch ? batch.concat(taken) : taken;
  }

  /** Commits one batch until each of its items is settled. */
  private async run(batch: Pending<T, R>[]): Promise<void> {
    let failures = 0;
    for (;;) {
      try {
        const outcomes = await this.commit(batch.map((p) => p.item));
        for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outcomes[i]!);
        return;
      } catch (error) {
        failures++;
        let decision: FailureAction;
        try {
          decision = this.onFailure(error, batch.map((p) => p.item), failures);
        } catch (policyError) {
          decision = failWhole(policyError);
        }
        if (decision.action === 'retry') {
          await new Promise((resolve) => setTimeout(resolve, decision.delayMs));
          batch = this.take(batch);
          continue;
        }
        if (decision.action === 'split' && batch.length > 1) {
          for (const pending of batch) await this.run([pending]);
          return;
        }
        const reason = decision.action === 'fail' ? decision.error : error;
        for (const pending of batch) pending.reject(reason);
        return;
      }
    }
  }
}
