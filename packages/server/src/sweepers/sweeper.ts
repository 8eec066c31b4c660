import type { Sql } from '../db/database.js';
import type { PayloadStore } from '../storage/payload-store.js';
import type { Tracing } from '../tracing/tracing.js';

/** What sweepers may need besides their transaction. */
export interface SweeperDeps {
  payloadStore: PayloadStore;
  /** A span per sweeper run (`hookrelay.sweeper.run`). */
  tracing?: Tracing;
}

/** One periodic clean-up, run by runner.ts in a transaction of its own under its advisory lock. */
export interface Sweeper {
  name: string;
  /** Advisory lock key: one process at a time runs each sweeper across the whole cluster. */
  lockKey: number;
  run(tx: Sql, now: Date, deps: SweeperDeps): Promise<number>;
}
