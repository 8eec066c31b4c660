import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from 'undici';
import { newUuidv7 } from '@hookrelay/shared';
import type { Config } from '../config.js';
import type { Database, Sql } from '../db/database.js';
import { DELIVERIES_CHANNEL } from '../db/channels.js';
import { markLeasedDelivering, msUntilNextDue, reapExpiredLeases, releaseJobs, restoreStatuses } from '../db/deliveries.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { Backoff } from '../lib/backoff.js';
import type { EnqueueLease } from '../db/messages.js';
import type { SecretBox } from '../security/crypto.js';
import { createGuardedAgent, type Resolver } from '../security/ssrf.js';
import { PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';
import { endAttemptSpan, startAttemptSpan } from './attempt-span.js';
import { EventFanout } from './event-fanout.js';
import { claimDeliveries, ClockOffset, PAYLOAD_UNAVAILABLE_DELAY_MS, type ClaimContext } from './claim.js';
import type { HandedOverDelivery, LocalDeliveryWorker } from './local-worker.js';
import { preparedFromClaim, preparedFromHandoff, type Prepared, type RequestContext } from './prepared.js';
import { ResultWriter, type AttemptResult } from './results.js';
import { SecretCache } from './secret-cache.js';
import type { Metrics } from '../metrics/index.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, sendRequest } from './sender.js';
import type { Tracing } from '../tracing/tracing.js';

/**
 * The delivery worker (docs/architecture.md, Transactions): claims due jobs from the PostgreSQL
 * queue in batches (FOR UPDATE SKIP LOCKED, a lease committed before any request is sent), sends
 * them over one shared guarded undici Agent, and records results in group commits. Any number of
 * workers, in any number of processes, share one database; on PGlite the same code runs in the one
 * process.
 *
 * Lifecycle: idle → running → stopping → stopped. Woken by NOTIFY (new or resumed work), by a timer
 * set to the next due job, and by a slow poll in case a notification was lost. A reaper returns jobs
 * whose lease ran out (a crashed worker's) to the queue.
 *
 * In a process that also takes POST /v1/messages, new messages are leased to this worker by the
 * enqueue's own statement and handed over in memory (local-worker.ts): their first attempt starts
 * right after that commit, with no NOTIFY and no claim transaction.
 *
 * This class holds the lifecycle, the scheduling of claims, the hand-over and the attempts; the
 * claim transaction's steps are claim.ts, and a delivery's request prepared.ts.
 */

export type WorkerState = 'idle' | 'running' | 'stopping' | 'stopped';

export interface DeliveryWorkerOptions {
  /** Deliveries in flight at once (default: config.deliveryConcurrency). */
  concurrency?: number;
  /** Payload bytes of the deliveries in flight at once (default: config.deliveryMaxBytes); one larger payload still goes, alone. */
  maxBytes?: number;
  /** Most jobs claimed per transaction (default 50). */
  batchSize?: number;
  /** Lease of a claimed job (default: config.deliveryLeaseSeconds); must outlast the request timeout. */
  leaseSeconds?: number;
  /** Fallback poll for lost notifications (default 5 s). */
  pollIntervalMs?: number;
  /** How often expired leases are looked for (default min(5 s, lease / 4)). */
  reapIntervalMs?: number;
  /** Whole-attempt deadline (default 15 s). */
  requestTimeoutMs?: number;
  /** TCP + TLS connect deadline (default 5 s). */
  connectTimeoutMs?: number;
  /** Rate-limited jobs whose slot comes within this wait in process; later ones go back to the queue (default 2 s). */
  rateLimitHorizonMs?: number;
  /** On stop, how long in-flight requests may take to finish before they are cut and released (default 20 s). */
  stopGraceMs?: number;
  workerId?: string;
}

export interface DeliveryWorkerDeps {
  db: Database;
  config: Config;
  secretBox: SecretBox;
  payloadStore: PayloadStore;
  resolveHost?: Resolver;
  log: FastifyBaseLogger;
  metrics?: Metrics;
  /** A span per attempt (`hookrelay.delivery.attempt`). */
  tracing?: Tracing;
}

interface Active {
  controller: AbortController;
  sending: boolean;
  wakeWait?: () => void;
}

/**
 * A handed-over message stays `queued` until its attempt's result unless the attempt takes longer
 * than this: then it is marked `delivering`. Most attempts end sooner, and skip that commit.
 */
const HANDED_OVER_DELIVERING_AFTER_MS = 500;

export class DeliveryWorker implements LocalDeliveryWorker {
  readonly workerId: string;
  private stateValue: WorkerState = 'idle';
  private readonly concurrency: number;
  private readonly maxBytes: number;
  private readonly batchSize: number;
  private readonly leaseSeconds: number;
  private readonly pollIntervalMs: number;
  private readonly reapIntervalMs: number;
  private readonly requestTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly horizonMs: number;
  private readonly stopGraceMs: number;
  private readonly sql: Sql;
  private readonly agent: Agent;
  private readonly writer: ResultWriter;
  private readonly active = new Map<Active, Promise<void>>();
  private inFlight = 0;
  /** Payload bytes of the deliveries in flight. */
  private inFlightBytes = 0;
  /** Slots held by enqueues whose statement is running (reserveHandoff). */
  private reserved = 0;
  private cycling: Promise<void> | null = null;
  private wakePending = false;
  private saturated = false;
  private failing = false;
  private readonly claimBackoff = new Backoff(500, 5000);
  private dueTimer: NodeJS.Timeout | null = null;
  private dueAt = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private reapTimer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private stopping: Promise<void> | null = null;
  private counters = { claimed: 0, handedOver: 0, sent: 0, released: 0 };
  private readonly claimContext: ClaimContext;
  private readonly requestContext: RequestContext;

  constructor(
    private readonly deps: DeliveryWorkerDeps,
    options: DeliveryWorkerOptions = {},
  ) {
    const { config } = deps;
    this.workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${newUuidv7().slice(-12)}`;
    this.concurrency = options.concurrency ?? config.deliveryConcurrency;
    this.maxBytes = options.maxBytes ?? config.deliveryMaxBytes;
    this.batchSize = Math.max(1, Math.min(options.batchSize ?? 50, this.concurrency));
    this.leaseSeconds = options.leaseSeconds ?? config.deliveryLeaseSeconds;
    this.pollIntervalMs = options.pollIntervalMs ?? 5000;
    this.reapIntervalMs = options.reapIntervalMs ?? Math.min(5000, (this.leaseSeconds * 1000) / 4);
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.horizonMs = options.rateLimitHorizonMs ?? 2000;
    this.stopGraceMs = options.stopGraceMs ?? 20_000;
    if (this.leaseSeconds * 1000 <= this.requestTimeoutMs + this.horizonMs) {
      throw new Error(`delivery lease (${this.leaseSeconds} s) must outlast the request timeout and rate-limit wait`);
    }
    this.sql = deps.db.sql;
    this.agent = createGuardedAgent({
      allowPrivateNetworks: config.allowPrivateNetworks,
      connectTimeoutMs: this.connectTimeoutMs,
      ...(config.tlsCaFile ? { ca: readFileSync(config.tlsCaFile) } : {}),
      ...(deps.resolveHost ? { resolve: deps.resolveHost } : {}),
    });
    this.writer = new ResultWriter(deps.db, config.retryScheduleSeconds, this.workerId, deps.log, (at) => this.armDue(at.getTime()), {
      pauseAfterSeconds: config.endpointPauseAfterSeconds,
      events: new EventFanout(deps.db, deps.payloadStore),
    });
    this.writer.metrics = deps.metrics;
    const { payloadStore, log } = deps;
    this.claimContext = { sql: this.sql, workerId: this.workerId, leaseSeconds: this.leaseSeconds, horizonMs: this.horizonMs, payloadStore, log, clock: new ClockOffset() };
    this.requestContext = { secrets: new SecretCache(deps.secretBox), payloadStore, sql: this.sql, resignAfterSeconds: deps.config.resignAfterSeconds };
  }

  get state(): WorkerState {
    return this.stateValue;
  }

  /** Counters for tests and logs. */
  stats() {
    return { state: this.stateValue, inFlight: this.inFlight, ...this.counters };
  }

  async start(): Promise<void> {
    if (this.stateValue !== 'idle') throw new Error(`delivery worker cannot start from state ${this.stateValue}`);
    this.stateValue = 'running';
    // A notification sent by an enqueue of this process (payload: this worker's id) was followed by a direct wake.
    this.unlisten = await this.deps.db.listen(DELIVERIES_CHANNEL, (origin) => {
      if (origin !== this.workerId) this.wake();
    }, () => this.wake());
    this.pollTimer = setInterval(() => this.wake(), this.pollIntervalMs);
    this.reapTimer = setInterval(() => void this.reap(), this.reapIntervalMs);
    this.pollTimer.unref();
    this.reapTimer.unref();
    this.deps.log.info({ workerId: this.workerId, concurrency: this.concurrency, leaseSeconds: this.leaseSeconds }, 'delivery worker started');
    this.wake();
  }

  /**
   * Stops taking work, lets in-flight requests finish (up to the grace period), cuts and releases
   * what is left, writes every result, and releases jobs still waiting for a rate-limit slot.
   */
  stop(): Promise<void> {
    if (this.stopping) return this.stopping;
    this.stopping = this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    if (this.stateValue === 'idle') {
      this.stateValue = 'stopped';
      await this.agent.close();
      return;
    }
    this.stateValue = 'stopping';
    for (const timer of [this.pollTimer, this.reapTimer]) if (timer) clearInterval(timer);
    if (this.dueTimer) clearTimeout(this.dueTimer);
    await this.unlisten?.().catch(() => {});
    await this.cycling;
    // Enqueues holding slots finish their statement first: what they hand over is released below.
    const reservedDeadline = Date.now() + this.stopGraceMs;
    while (this.reserved > 0 && Date.now() < reservedDeadline) await new Promise((r) => setTimeout(r, 5));
    for (const entry of this.active.keys()) if (!entry.sending) entry.wakeWait?.();
    const all = () => Promise.allSettled([...this.active.values()]);
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([all(), new Promise((r) => (graceTimer = setTimeout(r, this.stopGraceMs)))]);
    clearTimeout(graceTimer);
    if (this.active.size > 0) {
      this.deps.log.warn({ inFlight: this.active.size }, 'delivery worker: cutting in-flight requests at shutdown; they will be delivered again');
      for (const entry of this.active.keys()) entry.controller.abort();
      await all();
    }
    await this.writer.close();
    await this.agent.destroy();
    this.stateValue = 'stopped';
    this.deps.log.info({ workerId: this.workerId, ...this.counters }, 'delivery worker stopped');
  }

  /** Looks for due work soon (coalesces bursts of notifications into one claim loop). */
  wake(): void {
    if (this.stateValue !== 'running') return;
    if (this.cycling) {
      this.wakePending = true;
      return;
    }
    this.cycling = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.cycle()).finally(() => {
      this.cycling = null;
      if (this.wakePending) {
        this.wakePending = false;
        this.wake();
      }
    });
  }

  private async cycle(): Promise<void> {
    try {
      while (this.stateValue === 'running') {
        this.wakePending = false;
        const capacity = this.concurrency - this.inFlight - this.reserved;
        const bytesLeft = this.maxBytes - this.inFlightBytes;
        if (capacity <= 0 || bytesLeft <= 0) {
          this.saturated = true;
          return;
        }
        const limit = Math.min(this.batchSize, capacity);
        const claimed = await this.claimBatch(limit, bytesLeft);
        if (claimed < limit) break;
      }
      if (this.stateValue !== 'running') return;
      const ms = await msUntilNextDue(this.sql);
      if (ms !== null) this.armDue(Date.now() + Math.max(0, ms));
      if (this.failing) this.deps.log.info('delivery worker: database reachable again');
      this.failing = false;
      this.claimBackoff.reset();
    } catch (error) {
      if (!this.failing) {
        this.deps.log.warn({ err: isDatabaseUnavailable(error) ? { message: (error as Error).message } : error }, 'delivery worker: claim failed');
      }
      this.failing = true;
      this.armDue(Date.now() + this.claimBackoff.next());
    }
  }

  /** Sets the wake-up for the next due job, if sooner than the one already set. */
  private armDue(atMs: number): void {
    if (this.stateValue !== 'running') return;
    const now = Date.now();
    if (atMs - now >= this.pollIntervalMs) return; // the poll comes first
    if (this.dueTimer && this.dueAt <= atMs) return;
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueAt = atMs;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = null;
      this.wake();
    }, Math.max(0, atMs - now));
    this.dueTimer.unref();
  }

  private async reap(): Promise<void> {
    if (this.stateValue !== 'running') return;
    try {
      const count = await reapExpiredLeases(this.sql);
      if (count > 0) {
        this.deps.log.warn({ count }, 'delivery worker: returned deliveries whose lease ran out (a worker stopped without finishing them)');
        this.wake();
      }
    } catch {
      // The claim loop reports database trouble.
    }
  }

  /** One claim transaction (claim.ts); its deliveries are sent once it has committed. Returns the number of jobs claimed. */
  private async claimBatch(limit: number, maxBytes: number): Promise<number> {
    const claim = await claimDeliveries(this.claimContext, limit, maxBytes);
    this.counters.claimed += claim.claimed;
    this.counters.released += claim.released;
    for (const delivery of claim.deliveries) this.dispatch(preparedFromClaim(this.requestContext, claim.leaseId, delivery));
    return claim.claimed;
  }

  reserveHandoff(max: number): EnqueueLease | undefined {
    if (this.stateValue !== 'running' || this.inFlightBytes >= this.maxBytes) return undefined;
    const slots = Math.min(max, this.concurrency - this.inFlight - this.reserved);
    if (slots <= 0) return undefined;
    this.reserved += slots;
    return { workerId: this.workerId, leaseId: newUuidv7(), leaseSeconds: this.leaseSeconds, slots };
  }

  acceptHandoff(lease: EnqueueLease, deliveries: HandedOverDelivery[]): void {
    this.reserved -= lease.slots;
    this.counters.handedOver += deliveries.length;
    const entries = deliveries.map((d) => this.dispatch(preparedFromHandoff(this.requestContext, lease, d)));
    if (entries.length > 0) {
      setTimeout(() => {
        const slow = deliveries.filter((_, i) => this.active.has(entries[i]!)).map((d) => d.messageId);
        if (slow.length === 0 || this.stateValue !== 'running') return;
        markLeasedDelivering(this.sql, lease.leaseId, slow).catch((error: unknown) => {
          this.deps.log.warn({ err: error }, 'delivery worker: could not mark deliveries in flight as delivering');
        });
      }, HANDED_OVER_DELIVERING_AFTER_MS).unref();
    }
    this.wakeIfRoomAgain();
  }

  returnHandoff(lease: EnqueueLease): void {
    this.reserved -= lease.slots;
    this.wakeIfRoomAgain();
  }

  private dispatch(p: Prepared): Active {
    const entry: Active = { controller: new AbortController(), sending: false };
    this.inFlight++;
    this.inFlightBytes += p.bytes;
    const run = this.execute(p, entry).finally(() => {
      this.active.delete(entry);
      this.inFlight--;
      this.inFlightBytes -= p.bytes;
      this.wakeIfRoomAgain();
    });
    this.active.set(entry, run);
    return entry;
  }

  /** After a full claim loop stopped, claims again once a useful batch fits. */
  private wakeIfRoomAgain(): void {
    const room = this.concurrency - this.inFlight - this.reserved >= Math.min(this.batchSize, Math.ceil(this.concurrency / 4));
    // Below the byte budget again: one more payload of any size may go.
    if (this.saturated && room && this.inFlightBytes < this.maxBytes) {
      this.saturated = false;
      this.wake();
    }
  }

  private async execute(p: Prepared, entry: Active): Promise<void> {
    try {
      const wait = p.notBefore - Date.now();
      if (wait > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          entry.wakeWait = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      if (this.stateValue !== 'running') return await this.release(p);
      // setTimeout may fire a millisecond early; a slot is a lower bound.
      while (Date.now() < p.notBefore) await new Promise((r) => setTimeout(r, 1));
      entry.sending = true;
      const prepareStart = performance.now();
      const request = await p.build(Math.floor(Date.now() / 1000));
      const processingMs = Math.round(performance.now() - prepareStart);
      const startedAt = new Date();
      const span = startAttemptSpan(this.deps.tracing, p, request);
      const result = await sendRequest(this.agent, request, {
        timeoutMs: this.requestTimeoutMs,
        connectTimeoutMs: this.connectTimeoutMs,
        signal: entry.controller.signal,
      });
      endAttemptSpan(span, result);
      if (result.aborted) return await this.release(p);
      if (result.bodyError !== null) return await this.postponeUnreadable(p, result.bodyError);
      this.counters.sent++;
      const attempt: AttemptResult = {
        kind: p.kind,
        messageId: p.messageId,
        leaseId: p.leaseId,
        attemptNumber: p.attemptNumber,
        attemptInDelivery: p.attemptInDelivery,
        startedAt,
        finishedAt: new Date(),
        processingMs,
        resigned: request.resigned === true,
        result,
      };
      await this.writer.push(attempt);
    } catch (error) {
      // The signature's pass over a streamed body found it missing or cut short.
      if (error instanceof PayloadUnavailableError && p.blobKey !== null) return await this.postponeUnreadable(p, error);
      this.deps.log.error({ err: error, messageId: p.messageId }, 'delivery worker: delivery failed unexpectedly; it will be retried');
      await this.release(p, 5000);
    }
  }

  /**
   * A streamed body that could not be read from its store is not the receiver's failure: no attempt
   * is recorded, and the delivery is postponed as a payload store outage postpones it (the store has
   * logged an error line naming the file; this one names the blob and its message).
   */
  private async postponeUnreadable(p: Prepared, error: unknown): Promise<void> {
    this.deps.log.warn(
      { err: error, messageId: p.messageId, blobKey: p.blobKey },
      `delivery worker: the body of message ${p.messageId} could not be read from blob ${p.blobKey ?? '?'}; delivery postponed`,
    );
    await this.release(p, PAYLOAD_UNAVAILABLE_DELAY_MS);
  }

  /** Gives a job back without an attempt (shutdown, unexpected error): due again after `delayMs`. */
  private async release(p: Prepared, delayMs = 0): Promise<void> {
    try {
      await this.sql.begin(async (tx) => {
        await releaseJobs(tx, p.leaseId, [{ messageId: p.messageId, delayMs }]);
        await restoreStatuses(tx, p.kind, [{ messageId: p.messageId, status: p.previousStatus }]);
      });
      this.counters.released++;
    } catch (error) {
      // The lease runs out and the reaper returns the job.
      this.deps.log.warn({ err: error, messageId: p.messageId }, 'delivery worker: could not release a delivery; its lease will expire');
    }
  }
}
