import type { FastifyBaseLogger } from 'fastify';
import type { Database, Sql } from '../db/database.js';
import { tryAdvisoryXactLock } from '../db/locks.js';
import { sweepExpiredEndpoints } from '../db/endpoints.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { deleteExpiredIdempotencyKeys } from '../db/ingest.js';
import { claimDeletedInboundPayloads, clearInboundPayloadKeys } from '../db/inbound-messages.js';
import type { PayloadStore } from '../storage/payload-store.js';
import { expiredInboundEndpointsSweeper } from './inbound-endpoints.js';
import { deletedPullPayloadsSweeper, expiredPullEventsSweeper } from './pull.js';

/** What sweepers may need besides their transaction. */
export interface SweeperDeps {
  payloadStore: PayloadStore;
}

export interface Sweeper {
  name: string;
  /** Advisory lock key: one process at a time runs each sweeper across the whole cluster. */
  lockKey: number;
  run(tx: Sql, now: Date, deps: SweeperDeps): Promise<number>;
}

export const expiredEndpointsSweeper: Sweeper = {
  name: 'expired-endpoints',
  lockKey: 0x73770001,
  async run(tx, now) {
    return (await sweepExpiredEndpoints(tx, now)).length;
  },
};

/** Payloads of soft-deleted inbound messages: already unreachable, now removed from the store. */
export const deletedInboundPayloadsSweeper: Sweeper = {
  name: 'deleted-inbound-payloads',
  lockKey: 0x73770003,
  async run(tx, _now, deps) {
    const claimed = await claimDeletedInboundPayloads(tx, 500);
    await deps.payloadStore.deleteMany(tx, claimed.map((c) => c.payload_key));
    await clearInboundPayloadKeys(tx, claimed.map((c) => c.id));
    return claimed.length;
  },
};

/** Idempotency keys older than their 24 h window. */
export const expiredIdempotencyKeysSweeper: Sweeper = {
  name: 'expired-idempotency-keys',
  lockKey: 0x73770004,
  async run(tx, now) {
    return deleteExpiredIdempotencyKeys(tx, now);
  },
};

export const DEFAULT_SWEEPERS: readonly Sweeper[] = [
  expiredEndpointsSweeper,
  expiredInboundEndpointsSweeper,
  deletedInboundPayloadsSweeper,
  expiredIdempotencyKeysSweeper,
  expiredPullEventsSweeper,
  deletedPullPayloadsSweeper,
];

/** Runs one sweeper under a transaction-scoped try-lock; returns null when another process holds it. */
export async function runSweeperOnce(db: Database, sweeper: Sweeper, deps: SweeperDeps, now = new Date()): Promise<number | null> {
  return db.sql.begin(async (tx) => {
    if (!(await tryAdvisoryXactLock(tx, sweeper.lockKey))) return null;
    return sweeper.run(tx, now, deps);
  });
}

export interface SweeperHandle {
  stop(): Promise<void>;
}

/** Runs every sweeper each `intervalMs` until stopped; failures are logged once per outage. */
export function startSweepers(db: Database, deps: SweeperDeps, log: FastifyBaseLogger, intervalMs: number, sweepers = DEFAULT_SWEEPERS): SweeperHandle {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let failing = false;
  const tick = async () => {
    for (const sweeper of sweepers) {
      if (stopped) return;
      try {
        const count = await runSweeperOnce(db, sweeper, deps);
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
