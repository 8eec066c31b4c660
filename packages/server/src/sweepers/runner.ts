import type { FastifyBaseLogger } from 'fastify';
import type { Database, Sql } from '../db/database.js';
import { tryAdvisoryXactLock } from '../db/locks.js';
import { sweepExpiredEndpoints } from '../db/endpoints.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { Backoff } from '../lib/backoff.js';
import { deleteExpiredIdempotencyKeys } from '../db/ingest.js';
import { claimDeletedInboundPayloads, clearInboundPayloadKeys } from '../db/inbound-messages.js';
import type { PayloadStore } from '../storage/payload-store.js';
import type { Span, Tracing } from '../tracing/tracing.js';
import { EMBEDDED_VACUUM, runEmbeddedUpkeep, type RewriteMarks } from './embedded.js';
import { expiredInboundEndpointsSweeper } from './inbound-endpoints.js';
import { deletedPayloadsSweeper } from './payloads.js';
import { deletedPullPayloadsSweeper, expiredPullEndpointsSweeper, expiredPullEventsSweeper } from './pull.js';
import type { Sweeper, SweeperDeps } from './sweeper.js';

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
  expiredPullEndpointsSweeper,
  expiredPullEventsSweeper,
  deletedPullPayloadsSweeper,
];

/** Runs one sweeper under a transaction-scoped try-lock; returns null when another process holds it. */
export async function runSweeperOnce(db: Database, sweeper: Sweeper, deps: SweeperDeps, now = new Date()): Promise<number | null> {
  const committed: (() => void)[] = [];
  const count = await db.sql.begin(async (tx) => {
    if (!(await tryAdvisoryXactLock(tx, sweeper.lockKey))) return null;
    return sweeper.run(tx, now, { ...deps, afterCommit: (fn) => committed.push(fn) });
  });
  for (const fn of committed) fn();
  return count;
}

export interface SweeperHandle {
  stop(): Promise<void>;
}

/** A draining sweeper pauses this many times as long as its last batch took before the next. */
const DRAIN_PAUSE_FACTOR = 9;

/** The longest wait between sweeps while the database is unreachable. */
const MAX_OUTAGE_BACKOFF_MS = 30_000;

/**
 * Runs every sweeper each `intervalMs` until stopped, one round at a time (a slow round delays the
 * next rather than piling up). A sweeper that drains (`drainBatch`) runs again while its batches are
 * full, pausing between them nine times as long as each took, for up to one interval per round; a
 * backlog left then starts the next round at once. On the embedded database each round ends with
 * the upkeep PGlite lacks (vacuum and checkpoint, see embedded.ts), so it too never runs twice at
 * once. While the database is unreachable, rounds back off exponentially and the outage is logged
 * once when it begins and once when it ends; other failures are logged each time, and the remaining
 * sweepers of the round still run.
 */
export function startSweepers(db: Database, deps: SweeperDeps, log: FastifyBaseLogger, intervalMs: number, sweepers = DEFAULT_SWEEPERS): SweeperHandle {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let outage = false;
  const backoff = new Backoff(intervalMs, Math.max(intervalMs, MAX_OUTAGE_BACKOFF_MS));
  const rewriteMarks: RewriteMarks = new Map();

  const tracing = deps.tracing;
  /** One step in a span of its own when tracing is on. */
  const traced = async (name: string, fn: (span: Span | undefined) => Promise<void>): Promise<void> => {
    if (tracing === undefined || !tracing.enabled) return fn(undefined);
    const span = tracing.startSpan('hookrelay.sweeper.run', { attributes: { 'hookrelay.sweeper.name': name } });
    try {
      await fn(span);
    } catch (error) {
      span.fail(error instanceof Error ? error.name : 'sweeper failed');
      throw error;
    } finally {
      span.end();
    }
  };

  let failed = false;
  /** Runs one step of a round; false when the database is unavailable (the round ends). */
  const step = async (name: string, fn: () => Promise<void>): Promise<boolean> => {
    try {
      await fn();
      return true;
    } catch (error) {
      failed = true;
      if (!isDatabaseUnavailable(error)) {
        log.error({ sweeper: name, err: error }, 'sweeper failed');
        return true;
      }
      if (!outage) log.warn({ sweeper: name, err: { message: (error as Error).message } }, 'sweepers: database unavailable; retrying with backoff');
      outage = true;
      return false;
    }
  };

  /**
   * One sweeper's turn in a round: one run, or, for a sweeper that drains, runs while each removes a
   * full batch, each followed by a pause nine times as long as it took, for at most one interval
   * (then the round's other sweepers and the embedded upkeep, which reclaims what was removed, come
   * first).
   * `more`: the turn ended with a full batch.
   */
  const turn = async (sweeper: Sweeper): Promise<{ reachable: boolean; more: boolean }> => {
    const started = performance.now();
    let removed = 0;
    let reachable = true;
    let full = false;
    let more = true;
    while (more && reachable && !stopped) {
      full = false;
      const runStarted = performance.now();
      reachable = await step(sweeper.name, () => traced(sweeper.name, async (span) => {
        const count = await runSweeperOnce(db, sweeper, deps);
        // null: another process holds this sweeper's lock and runs it this round.
        span?.setAttribute('hookrelay.sweeper.skipped', count === null);
        span?.setAttribute('hookrelay.sweeper.removed', count ?? 0);
        removed += count ?? 0;
        full = sweeper.drainBatch !== undefined && count !== null && count >= sweeper.drainBatch;
      }));
      more = full && performance.now() - started < intervalMs;
      // A pause of DRAIN_PAUSE_FACTOR times the batch's own time before the next: a drain takes at
      // most a tenth of the database's time (on the embedded database, its one connection),
      // whatever the batch costs, so that live traffic keeps its latency (BENCHMARKS.md, Message
      // retention).
      if (more && !stopped) await new Promise((resolve) => setTimeout(resolve, DRAIN_PAUSE_FACTOR * (performance.now() - runStarted)));
    }
    if (removed > 0) log.info({ sweeper: sweeper.name, count: removed, ms: Math.round(performance.now() - started) }, 'sweeper removed expired rows');
    return { reachable, more: full };
  };

  /** One round; resolves to the wait before the next one. */
  const round = async (): Promise<number> => {
    failed = false;
    let reachable = true;
    let backlog = false;
    for (const sweeper of sweepers) {
      if (stopped) break;
      const result = await turn(sweeper);
      reachable = result.reachable;
      backlog ||= result.more;
      if (!reachable) break;
    }
    // Last in the round: the space of what the sweepers above deleted is reclaimed at once.
    if (reachable && !stopped && db.backend === 'pglite') {
      await step(EMBEDDED_VACUUM, () => traced(EMBEDDED_VACUUM, async () => {
        for (const report of await runEmbeddedUpkeep(db, () => stopped, rewriteMarks)) {
          if (report.step === EMBEDDED_VACUUM) log.info({ sweeper: report.step, tables: report.tables, full: report.rewritten, analyzed: report.analyzed, ms: report.ms }, 'vacuumed tables of the embedded database');
          else log.info({ sweeper: report.step, wal_bytes: report.walBytes, ms: report.ms }, 'checkpointed the embedded database');
        }
      }));
    }
    if (failed) return backoff.next();
    if (outage) log.info('sweepers: database reachable again');
    outage = false;
    backoff.reset();
    // A drain cut short by its interval goes on in the next round, at once.
    return backlog ? 0 : intervalMs;
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
