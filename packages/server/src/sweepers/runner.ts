import type { FastifyBaseLogger } from 'fastify';
import type { Database, Sql } from '../db/database.js';
import { tryAdvisoryXactLock } from '../db/locks.js';
import { sweepExpiredEndpoints } from '../db/endpoints.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { Backoff } from '../lib/backoff.js';
import { deleteExpiredIdempotencyKeys } from '../db/ingest.js';
import { claimDeletedInboundPayloads, clearInboundPayloadKeys } from '../db/inbound-messages.js';
import type { PayloadStore } from '../storage/payload-store.js';
import { expiredInboundEndpointsSweeper } from './inbound-endpoints.js';
import { deletedPayloadsSweeper } from './payloads.js';
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

export const deletedInboundPayloadsSweeper = deletedPayloadsSweeper('deleted-inbound-payloads', 0x73770003, claimDeletedInboundPayloads, clearInboundPayloadKeys);

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

/** The longest wait between sweeps while the database is unreachable. */
const MAX_OUTAGE_BACKOFF_MS = 30_000;

/**
 * Runs every sweeper each `intervalMs` until stopped, one round at a time (a slow round delays the
 * next rather than piling up). While the database is unreachable, rounds back off exponentially
 * and the outage is logged once when it begins and once when it ends; other failures are logged
 * each time, and the remaining sweepers of the round still run.
 */
export function startSweepers(db: Database, deps: SweeperDeps, log: FastifyBaseLogger, intervalMs: number, sweepers = DEFAULT_SWEEPERS): SweeperHandle {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let outage = false;
  const backoff = new Backoff(intervalMs, Math.max(intervalMs, MAX_OUTAGE_BACKOFF_MS));

  /** One round; resolves to the wait before the next one. */
  const round = async (): Promise<number> => {
    let failed = false;
    for (const sweeper of sweepers) {
      if (stopped) break;
      try {
        const count = await runSweeperOnce(db, sweeper, deps);
        if (count) log.info({ sweeper: sweeper.name, count }, 'sweeper removed expired rows');
      } catch (error) {
        failed = true;
        if (!isDatabaseUnavailable(error)) {
          log.error({ sweeper: sweeper.name, err: error }, 'sweeper failed');
          continue;
        }
        if (!outage) log.warn({ sweeper: sweeper.name, err: { message: (error as Error).message } }, 'sweepers: database unavailable; retrying with backoff');
        outage = true;
        break;
      }
    }
    if (failed) return backoff.next();
    if (outage) log.info('sweepers: database reachable again');
    outage = false;
    backoff.reset();
    return intervalMs;
  };
  const loop = async (): Promise<void> => {
    const wait = await round();
    if (stopped) return;
    timer = setTimeout(() => {
      running = loop();
    }, wait);
    timer.unref();
  };
  let running: Promise<void> = loop();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
