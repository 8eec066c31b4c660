import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { newUuidv7 } from '@hookrelay/shared';
import { deliveriesWaiting, releaseBulkJob } from '../db/bulk-jobs.js';
import { BULK_JOBS_CHANNEL } from '../db/channels.js';
import type { Database } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { Backoff } from '../lib/backoff.js';
import { claimJob, runChunk, type ChunkContext, type ClaimedJob } from './claim.js';

/**
 * The bulk job worker of the worker role (docs/operating.md, Bulk retries and replays): takes
 * running jobs one chunk at a time (claim.ts), in turns when several run, and paces itself so that
 * live traffic comes first: a pause of `chunkDelayMs` after each chunk, and no chunk while the
 * delivery queue already holds a chunk's worth of due deliveries. Woken by a NOTIFY when a job is
 * created, and by a slow poll (which also finds the jobs of a worker that died).
 */

export interface BulkJobWorkerOptions {
  /** Messages per chunk (one transaction). */
  chunkSize: number;
  /** Pause after each chunk, and while the delivery queue is busy. */
  chunkDelayMs: number;
  /** How long a claim holds a job before another worker may take it (default 30 s). */
  leaseSeconds?: number;
  /** Fallback poll for lost notifications and expired leases (default 5 s). */
  pollIntervalMs?: number;
  workerId?: string;
}

/** The least time between two looks at a busy delivery queue, whatever the chunk delay. */
const BUSY_QUEUE_RECHECK_MS = 100;

export class BulkJobWorker {
  readonly workerId: string;
  private readonly context: ChunkContext;
  private readonly chunkDelayMs: number;
  private readonly pollIntervalMs: number;
  private running: Promise<void> | null = null;
  private wakePending = false;
  private stopped = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private pausing: { timer: NodeJS.Timeout; resolve: () => void } | null = null;
  private readonly backoff = new Backoff(500, 30_000);
  private counters = { chunks: 0, finished: 0 };

  constructor(
    private readonly deps: { db: Database; log: FastifyBaseLogger },
    options: BulkJobWorkerOptions,
  ) {
    this.workerId = options.workerId ?? `${os.hostname()}:${process.pid}:bulk:${newUuidv7().slice(-12)}`;
    this.context = { sql: deps.db.sql, workerId: this.workerId, leaseSeconds: options.leaseSeconds ?? 30, chunkSize: options.chunkSize };
    this.chunkDelayMs = options.chunkDelayMs;
    this.pollIntervalMs = options.pollIntervalMs ?? 5000;
  }

  /** Counters for tests and logs. */
  stats() {
    return { ...this.counters };
  }

  async start(): Promise<void> {
    this.unlisten = await this.deps.db.listen(BULK_JOBS_CHANNEL, () => this.wake(), () => this.wake());
    this.pollTimer = setInterval(() => this.wake(), this.pollIntervalMs);
    this.pollTimer.unref();
    this.wake();
  }

  /** Stops taking chunks; the chunk in flight commits (or rolls back) first. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.endPause();
    const unlisten = this.unlisten;
    this.unlisten = null;
    await unlisten?.().catch(() => {});
    await this.running;
  }

  /** Looks for a job to work on (coalesces wake-ups into the loop that runs). */
  wake(): void {
    if (this.stopped) return;
    this.wakePending = true;
    if (this.running) return;
    this.running = this.work().finally(() => {
      this.running = null;
      if (this.wakePending) this.wake();
    });
  }

  /** Chunks of one job after another until none is left to claim. */
  private async work(): Promise<void> {
    while (!this.stopped) {
      this.wakePending = false;
      let claimed: ClaimedJob | undefined;
      try {
        // Live traffic first: a chunk waits while the deliveries due now already fill one.
        if (await deliveriesWaiting(this.context.sql, this.context.chunkSize)) {
          await this.pause(Math.max(this.chunkDelayMs, BUSY_QUEUE_RECHECK_MS));
          continue;
        }
        claimed = await claimJob(this.context);
        if (claimed === undefined) return;
        const outcome = await runChunk(this.context, claimed);
        this.counters.chunks++;
        if (outcome === 'finished') this.counters.finished++;
        this.backoff.reset();
      } catch (error) {
        await this.failed(error, claimed);
        continue;
      }
      await this.pause(this.chunkDelayMs);
    }
  }

  /** A chunk that could not run: its transaction rolled back, the job is left for the next claim after a backoff. */
  private async failed(error: unknown, claimed: ClaimedJob | undefined): Promise<void> {
    const unavailable = isDatabaseUnavailable(error);
    this.deps.log.warn({ err: unavailable ? { message: (error as Error).message } : error, bulk_job_id: claimed?.id }, 'bulk job worker: chunk failed; retrying later');
    if (claimed !== undefined && !unavailable) await releaseBulkJob(this.context.sql, claimed.id, claimed.leaseId).catch(() => {});
    await this.pause(this.backoff.next());
  }

  private pause(ms: number): Promise<void> {
    if (this.stopped || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endPause(), ms);
      this.pausing = { timer, resolve };
    });
  }

  private endPause(): void {
    const pausing = this.pausing;
    this.pausing = null;
    if (pausing) {
      clearTimeout(pausing.timer);
      pausing.resolve();
    }
  }
}
