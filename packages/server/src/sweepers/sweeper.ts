import type { Sql } from '../db/database.js';
import type { Metrics } from '../metrics/index.js';
import type { PayloadStore } from '../storage/payload-store.js';
import type { Tracing } from '../tracing/tracing.js';

/** What sweepers may need besides their transaction. */
export interface SweeperDeps {
  payloadStore: PayloadStore;
  /** A span per sweeper run (`hookrelay.sweeper.run`). */
  tracing?: Tracing;
  /** The app's counters (message-retention counts what it removed). */
  metrics?: Metrics;
}

/** What one run is handed besides its transaction. */
export interface SweeperRun extends SweeperDeps {
  /** Runs `fn` once the run's transaction has committed (never when it fails): counting what it removed. */
  afterCommit(fn: () => void): void;
}

/** One periodic clean-up, run by runner.ts in a transaction of its own under its advisory lock. */
export interface Sweeper {
  name: string;
  /** Advisory lock key: one process at a time runs each sweeper across the whole cluster. */
  lockKey: number;
  run(tx: Sql, now: Date, deps: SweeperRun): Promise<number>;
  /**
   * A sweeper that drains: while a run returns this many, the round runs it again at once, each run
   * a transaction of its own (a backlog goes in bounded batches, not in one statement nor over many
   * rounds).
   */
  drainBatch?: number;
}
