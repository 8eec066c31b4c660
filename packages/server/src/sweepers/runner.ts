import type { FastifyBaseLogger } from 'fastify';
import type { Database, Sql } from '../db/database.js';
import { sweepExpiredEndpoints } from '../db/endpoints.js';
import { isDatabaseUnavailable } from '../db/errors.js';

export interface Sweeper {
  name: string;
  /** Advisory lock key: one process at a time runs each sweeper across the whole cluster. */
  lockKey: number;
  run(tx: Sql, now: Date): Promise<number>;
}

export const expiredEndpointsSweeper: Sweeper = {
  name: 'expired-endpoints',
  lockKey: 0x73770001,
  async run(tx, now) {
    return (await sweepExpiredEndpoints(tx, now)).length;
  },
};

export const DEFAULT_SWEEPERS: readonly Sweeper[] = [expiredEndpointsSweeper];

/** Runs one sweeper under a transaction-scoped try-lock; returns null when another process holds it. */
export async function runSweeperOnce(db: Database, sweeper: Sweeper, now = new Date()): Promise<number | null> {
  return db.sql.begin(async (tx) => {
    const [lock] = await tx<{ locked: boolean }>`SELECT pg_try_advisory_xact_lock(${sweeper.lockKey}) AS locked`;
    if (!lock?.locked) return null;
    return sweeper.run(tx, now);
  });
}

export interface SweeperHandle {
  stop(): Promise<void>;
}

/** Runs every sweeper each `intervalMs` until stopped; failures are logged once per outage. */
export function startSweepers(db: Database, log: FastifyBaseLogger, intervalMs: number, sweepers = DEFAULT_SWEEPERS): SweeperHandle {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let failing = false;
  const tick = async () => {
    for (const sweeper of sweepers) {
      if (stopped) return;
      try {
        const count = await runSweeperOnce(db, sweeper);
        if (count) log.info({ sweeper: sweeper.name, count }, 'sweeper removed expired rows');
        failing = false;
      } catch (error) {
        if (!failing) log.warn({ sweeper: sweeper.name, err: isDatabaseUnavailable(error) ? { message: (error as Error).message } : error }, 'sweeper failed');
        failing = true;
      }
    }
  };
  const timer = setInterval(() => {
    running = running.then(tick);
  }, intervalMs);
  timer.unref();
  running = running.then(tick);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
