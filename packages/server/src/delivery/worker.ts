import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from 'undici';
import { newUuidv7 } from '@hookrelay/shared';
import type { Config } from '../config.js';
import type { Database, Sql } from '../db/database.js';
import { DELIVERIES_CHANNEL } from '../db/channels.js';
import {
  ENDPOINT_DELETED_ERROR,
  INBOUND_ENDPOINT_DELETED_ERROR,
  claimDueJobs,
  deleteJobs,
  failWithoutAttempt,
  loadInboundContexts,
  loadOutboundContexts,
  lockPausedEndpoints,
  lockRateLimit,
  markDelivering,
  markLeasedDelivering,
  msUntilNextDue,
  parkJobs,
  reapExpiredLeases,
  releaseJobs,
  restoreStatuses,
  returnInboundToCli,
  saveRateLimitTat,
  type ClaimedJob,
  type DeliveryKind,
  type DeliveryStatus,
  type InboundDeliveryContext,
  type OutboundDeliveryContext,
} from '../db/deliveries.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { Backoff } from '../lib/backoff.js';
import type { EnqueueLease } from '../db/messages.js';
import type { SecretBox } from '../security/crypto.js';
import { createGuardedAgent, type Resolver } from '../security/ssrf.js';
import { isBlobKey } from '../storage/blob-store.js';
import { openPayload, PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';
import type { HandedOverDelivery, LocalDeliveryWorker } from './local-worker.js';
import { reserveSlots } from './rate-limit.js';
import { buildForwardRequest, buildOutboundRequest } from './request.js';
import { ResultWriter, type AttemptResult } from './results.js';
import type { Metrics } from '../metrics/index.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS, sendRequest, type OutgoingRequest, type SendResult, type StreamedBody } from './sender.js';
import type { Span, Tracing } from '../tracing/tracing.js';

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

/** One claimed delivery, ready to send once its rate-limit slot comes. */
interface Prepared {
  kind: DeliveryKind;
  messageId: string;
  leaseId: string;
  previousStatus: DeliveryStatus;
  attemptNumber: number;
  attemptInDelivery: number;
  /** Local time (Date.now()) before which it must not be sent: its rate-limit slot; 0 = at once. */
  notBefore: number;
  /** The message's stored `traceparent` (inbound messages; null for outbound ones). */
  traceContext: string | null;
  /**
   * The payload's size, counted against the byte budget until the delivery ends. A streamed body
   * holds only a few pieces in memory, but counts its size all the same: what the budget bounds
   * for it is the bytes being read from the store and sent at once, which all share the store's
   * throughput. Counted by its buffer, as many large bodies as the concurrency allows would stream
   * at once, each too slowly to end within the request timeout, and be cut and sent again.
   */
  bytes: number;
  /** The blob a streamed body is read from at each attempt; null when the payload is held. */
  blobKey: string | null;
  build(timestamp: number): OutgoingRequest | Promise<OutgoingRequest>;
}

/** A forward-mode body in the blob store: read at each attempt, not in the claim. */
interface BlobPayload {
  key: string;
  size: number;
}

/** A delivery's payload as the claim leaves it: the bytes, or where to stream them from. */
type Payload = Buffer | BlobPayload;

type DeliveryContext = OutboundDeliveryContext | InboundDeliveryContext;

const isOutbound = (c: DeliveryContext): c is OutboundDeliveryContext => 'rate_limit_rps' in c;

/** A job given back to the queue without an attempt, due again after `delayMs`. */
interface Release {
  messageId: string;
  delayMs: number;
}

/** A claim's messages, as loaded with their endpoints, and the job each was claimed by. */
interface ClaimContexts {
  /** Outbound first, then inbound. */
  all: DeliveryContext[];
  jobOf(c: DeliveryContext): ClaimedJob;
  kindOf(c: DeliveryContext): DeliveryKind;
}

async function loadContexts(tx: Sql, jobs: ClaimedJob[], inlinePayloads: boolean): Promise<ClaimContexts> {
  const byId = new Map(jobs.map((j) => [j.message_id, j]));
  const ids = (kind: DeliveryKind) => jobs.filter((j) => j.kind === kind).map((j) => j.message_id);
  const [outbound, inbound] = await Promise.all([loadOutboundContexts(tx, ids('outbound'), inlinePayloads), loadInboundContexts(tx, ids('inbound'), inlinePayloads)]);
  return { all: [...outbound, ...inbound], jobOf: (c) => byId.get(c.id)!, kindOf: (c) => byId.get(c.id)!.kind };
}

/**
 * Where each claimed job goes before any payload is read: jobs of messages that no longer exist are
 * dropped, messages of a gone endpoint fail, inbound messages of an endpoint that no longer forwards
 * go back to the CLI, outbound messages of a paused endpoint are candidates for parking, and the rest
 * are ready to send.
 */
function triage(jobs: ClaimedJob[], contexts: ClaimContexts) {
  const found = new Set(contexts.all.map((c) => c.id));
  const drop = jobs.filter((j) => !found.has(j.message_id)).map((j) => j.message_id);
  const gone: Record<DeliveryKind, string[]> = { outbound: [], inbound: [] };
  const toCli: string[] = [];
  const paused: OutboundDeliveryContext[] = [];
  const ready: DeliveryContext[] = [];
  for (const c of contexts.all) {
    if (c.deleted) drop.push(c.id);
    else if (!c.live) gone[contexts.kindOf(c)].push(c.id);
    else if (!isOutbound(c) && c.mode !== 'forward') toCli.push(c.id);
    else if (isOutbound(c) && c.paused) paused.push(c);
    else ready.push(c);
  }
  return { drop, gone, toCli, paused, ready };
}

/** The ready deliveries whose payload is at hand (or streams), and the messages whose payload is no longer stored. */
function splitByPayload(ready: DeliveryContext[], payloads: Map<string, Payload>, contexts: ClaimContexts) {
  const noPayload: Record<DeliveryKind, string[]> = { outbound: [], inbound: [] };
  const deliverable: DeliveryContext[] = [];
  for (const c of ready) {
    if (c.payload_key !== null && payloads.has(c.payload_key)) deliverable.push(c);
    else noPayload[contexts.kindOf(c)].push(c.id);
  }
  return { deliverable, noPayload };
}

/**
 * Marks `delivering` the deliverable messages not released back to the queue; those deleted
 * meanwhile are not marked, and are not sent.
 */
async function markSending(tx: Sql, deliverable: DeliveryContext[], release: Release[], contexts: ClaimContexts) {
  const released = new Set(release.map((r) => r.messageId));
  const sendNow = deliverable.filter((c) => !released.has(c.id));
  const liveOut = await markDelivering(tx, 'outbound', sendNow.filter((c) => contexts.kindOf(c) === 'outbound').map((c) => c.id));
  const liveIn = await markDelivering(tx, 'inbound', sendNow.filter((c) => contexts.kindOf(c) === 'inbound').map((c) => c.id));
  const sending = sendNow.filter((c) => liveOut.has(c.id) || liveIn.has(c.id));
  const deletedMeanwhile = sendNow.filter((c) => !liveOut.has(c.id) && !liveIn.has(c.id)).map((c) => c.id);
  return { sending, deletedMeanwhile };
}

/** The claimed jobs that send nothing now, settled in the claim's transaction. */
interface Unsent {
  /** Messages deleted (or never found): the job goes, the message stays as it is. */
  drop: string[];
  /** Messages whose endpoint is gone: failed without an attempt. */
  gone: Record<DeliveryKind, string[]>;
  /** Inbound messages whose endpoint no longer forwards: back to the CLI. */
  toCli: string[];
  /** Messages whose payload is no longer stored: failed without an attempt. */
  noPayload: Record<DeliveryKind, string[]>;
  /** Messages deleted between the triage and `delivering`: the job goes. */
  deletedMeanwhile: string[];
  release: Release[];
}

/** A claimed outbound message in the shape the enqueue hands over, so that one builder makes both requests. */
function outboundDeliveryOf(c: OutboundDeliveryContext, body: Buffer): HandedOverDelivery {
  return { messageId: c.id, url: c.url, headers: c.headers, contentType: c.content_type, eventType: c.event_type, secrets: c.secrets, body };
}

interface Active {
  controller: AbortController;
  sending: boolean;
  wakeWait?: () => void;
}

const SECRET_CACHE_SIZE = 1000;

/** How long a delivery whose payload could not be read waits before it is tried again. */
const PAYLOAD_UNAVAILABLE_DELAY_MS = 10_000;

/**
 * A handed-over message stays `queued` until its attempt's result unless the attempt takes longer
 * than this: then it is marked `delivering`. Most attempts end sooner, and skip that commit.
 */
const HANDED_OVER_DELIVERING_AFTER_MS = 500;

/**
 * Maps database times to local times. Each observation pairs a database clock reading with the local
 * time its answer was seen; the smallest difference of recent ones is the best estimate (the others
 * include network and event-loop delay), as NTP does. Every worker then waits for the same database
 * instant, so a rate limit holds between workers and between claims.
 */
export class ClockOffset {
  private readonly samples: number[] = [];

  /** Records a reading and returns the database → local conversion. */
  observe(databaseMs: number, localMs: number): (databaseTime: number) => number {
    this.samples.push(localMs - databaseMs);
    if (this.samples.length > 32) this.samples.shift();
    const offset = Math.min(...this.samples);
    return (databaseTime) => databaseTime + offset;
  }
}

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
  private readonly secrets = new Map<string, string>();
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
  private readonly clock = new ClockOffset();

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
    this.writer = new ResultWriter(deps.db, config.retryScheduleSeconds, this.workerId, deps.log, (at) => this.armDue(at.getTime()));
    this.writer.metrics = deps.metrics;
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

  private secret(sealed: string): string {
    let plain = this.secrets.get(sealed);
    if (plain === undefined) {
      plain = this.deps.secretBox.decrypt(sealed);
      if (this.secrets.size >= SECRET_CACHE_SIZE) this.secrets.delete(this.secrets.keys().next().value!);
      this.secrets.set(sealed, plain);
    }
    return plain;
  }

  /**
   * One claim transaction: lease due jobs, settle the ones that cannot be delivered (message deleted,
   * endpoint gone or paused, inbound endpoint no longer forwarding), take rate-limit slots, mark the
   * rest `delivering` and commit; only then are requests sent. Returns the number of jobs claimed.
   */
  private async claimBatch(limit: number, maxBytes: number): Promise<number> {
    const leaseId = newUuidv7();
    const { claimed, prepared } = await this.sql.begin(async (tx) => {
      const jobs = await claimDueJobs(tx, { workerId: this.workerId, leaseId, limit, leaseSeconds: this.leaseSeconds, maxBytes });
      if (jobs.length === 0) return { claimed: 0, prepared: [] as Prepared[] };
      return { claimed: jobs.length, prepared: await this.prepare(tx, leaseId, jobs) };
    });
    this.counters.claimed += claimed;
    for (const p of prepared) this.dispatch(p);
    return claimed;
  }

  /** The claim's steps after the lease, in its transaction; returns the deliveries to send once it commits. */
  private async prepare(tx: Sql, leaseId: string, jobs: ClaimedJob[]): Promise<Prepared[]> {
    // The database store's payloads come with the contexts: one round trip less per claim.
    const inlinePayloads = this.deps.payloadStore.kind === 'database';
    const contexts = await loadContexts(tx, jobs, inlinePayloads);
    const { drop, gone, toCli, paused, ready } = triage(jobs, contexts);
    const release = await this.parkPaused(tx, leaseId, paused);
    const { payloads, postponed } = await this.fetchPayloads(tx, ready, inlinePayloads);
    release.push(...postponed);
    // Postponed: none is sent, and none has lost its payload.
    const { deliverable, noPayload } = splitByPayload(postponed.length > 0 ? [] : ready, payloads, contexts);
    const notBefore = await this.reserveRateLimits(tx, deliverable, release);
    const { sending, deletedMeanwhile } = await markSending(tx, deliverable, release, contexts);
    await this.settleUnsent(tx, leaseId, { drop, gone, toCli, noPayload, deletedMeanwhile, release });
    return sending.map((c) => this.prepared(c, contexts.jobOf(c), leaseId, payloads.get(c.payload_key!)!, notBefore.get(c.id) ?? 0));
  }

  private prepared(c: DeliveryContext, job: ClaimedJob, leaseId: string, payload: Payload, notBefore: number): Prepared {
    const attemptNumber = c.attempt_count + 1;
    const held = Buffer.isBuffer(payload);
    return {
      kind: job.kind,
      messageId: c.id,
      leaseId,
      previousStatus: c.status,
      attemptNumber,
      attemptInDelivery: Math.max(1, attemptNumber - job.attempt_base),
      notBefore,
      traceContext: isOutbound(c) ? null : c.trace_context,
      bytes: held ? payload.length : payload.size,
      blobKey: held ? null : payload.key,
      // Outbound payloads are always read whole (fetchPayloads): API bodies are at most 1 MiB.
      build: isOutbound(c) ? this.outboundRequest(outboundDeliveryOf(c, payload as Buffer)) : this.forwardRequest(c, payload),
    };
  }

  /** Paused endpoints: their jobs are parked until a resume; a resume that committed first wins, and those jobs are released to run now. */
  private async parkPaused(tx: Sql, leaseId: string, paused: OutboundDeliveryContext[]): Promise<Release[]> {
    if (paused.length === 0) return [];
    const stillPaused = await lockPausedEndpoints(tx, [...new Set(paused.map((c) => c.endpoint_id))].sort());
    await parkJobs(tx, leaseId, paused.filter((c) => stillPaused.has(c.endpoint_id)).map((c) => c.id));
    return paused.filter((c) => !stillPaused.has(c.endpoint_id)).map((c) => ({ messageId: c.id, delayMs: 0 }));
  }

  /**
   * The payloads of the deliveries about to be sent. A payload store outage is not the receiver's
   * fault, so it costs no attempt: every delivery is postponed instead. A forward-mode body in the
   * blob store is not read here: each attempt streams it (its key and size are enough).
   */
  private async fetchPayloads(tx: Sql, ready: DeliveryContext[], inlinePayloads: boolean): Promise<{ payloads: Map<string, Payload>; postponed: Release[] }> {
    const payloads = new Map<string, Payload>();
    const fromStore: string[] = [];
    for (const c of ready) {
      if (c.payload_key === null) continue;
      // A streamed body is in the blob store, whichever store holds the others.
      if (!isOutbound(c) && isBlobKey(c.payload_key)) payloads.set(c.payload_key, { key: c.payload_key, size: c.size_bytes });
      else if (inlinePayloads && !isBlobKey(c.payload_key)) {
        if (c.payload) payloads.set(c.payload_key, Buffer.from(c.payload.buffer, c.payload.byteOffset, c.payload.byteLength));
      } else fromStore.push(c.payload_key);
    }
    if (fromStore.length === 0) return { payloads, postponed: [] };
    try {
      for (const [key, bytes] of await this.deps.payloadStore.getMany(tx, fromStore)) payloads.set(key, bytes);
      return { payloads, postponed: [] };
    } catch (error) {
      if (!(error instanceof PayloadUnavailableError)) throw error;
      this.deps.log.warn({ err: error }, 'delivery worker: payload store unavailable; deliveries postponed');
      return { payloads: new Map(), postponed: ready.map((c) => ({ messageId: c.id, delayMs: PAYLOAD_UNAVAILABLE_DELAY_MS })) };
    }
  }

  /**
   * Takes rate-limit slots for the deliveries of rate-limited endpoints (each endpoint's row locked,
   * in id order): slots within the horizon are kept, to be waited for in process (returned as local
   * times); later ones, and endpoints paused or deleted meanwhile, go back to the queue (`release`).
   */
  private async reserveRateLimits(tx: Sql, deliverable: DeliveryContext[], release: Release[]): Promise<Map<string, number>> {
    const notBefore = new Map<string, number>();
    const limited = new Map<string, OutboundDeliveryContext[]>();
    for (const c of deliverable) {
      if (isOutbound(c) && c.rate_limit_rps > 0) limited.set(c.endpoint_id, [...(limited.get(c.endpoint_id) ?? []), c]);
    }
    for (const endpointId of [...limited.keys()].sort()) {
      const group = limited.get(endpointId)!;
      const row = await lockRateLimit(tx, endpointId);
      const localAtRead = Date.now();
      if (!row || !row.deliverable) {
        // Paused or deleted while this claim waited for the lock: the next claim settles them.
        for (const c of group) release.push({ messageId: c.id, delayMs: 0 });
        continue;
      }
      if (row.rate_limit_rps <= 0) continue;
      const nowMs = row.now.getTime();
      // Slots are database times, waited for as absolute times on the local clock.
      const toLocal = this.clock.observe(nowMs, localAtRead);
      const reservation = reserveSlots(
        { rps: row.rate_limit_rps, burst: row.burst, tatMs: row.rate_limit_tat?.getTime() ?? null, nowMs },
        group.length,
        this.horizonMs,
      );
      await saveRateLimitTat(tx, endpointId, new Date(reservation.tatMs));
      group.forEach((c, i) => {
        const offset = reservation.offsets[i];
        if (offset !== undefined) notBefore.set(c.id, toLocal(nowMs + offset));
        else release.push({ messageId: c.id, delayMs: reservation.laterOffsets[i - reservation.offsets.length]! });
      });
    }
    return notBefore;
  }

  /** The claimed jobs that send nothing now: failed without an attempt, returned to the CLI, deleted or released. */
  private async settleUnsent(tx: Sql, leaseId: string, unsent: Unsent): Promise<void> {
    const { drop, gone, noPayload, toCli, deletedMeanwhile, release } = unsent;
    await failWithoutAttempt(tx, 'outbound', gone.outbound, ENDPOINT_DELETED_ERROR);
    await failWithoutAttempt(tx, 'inbound', gone.inbound, INBOUND_ENDPOINT_DELETED_ERROR);
    for (const kind of ['outbound', 'inbound'] as const) await failWithoutAttempt(tx, kind, noPayload[kind], 'payload is no longer stored');
    await returnInboundToCli(tx, toCli);
    await deleteJobs(tx, leaseId, [...drop, ...gone.outbound, ...gone.inbound, ...noPayload.outbound, ...noPayload.inbound, ...toCli, ...deletedMeanwhile]);
    await releaseJobs(tx, leaseId, release);
    this.counters.released += release.length;
  }

  /**
   * The one builder of an outbound attempt's request, for a claimed job and a message handed over by
   * the enqueue alike; it runs when the request is sent, so that the signature carries that time.
   */
  private outboundRequest(delivery: HandedOverDelivery): Prepared['build'] {
    return (timestamp) =>
      buildOutboundRequest({
        messageId: delivery.messageId,
        url: delivery.url,
        contentType: delivery.contentType,
        eventType: delivery.eventType,
        customHeaders: delivery.headers,
        secrets: delivery.secrets.map((s) => this.secret(s)),
        body: delivery.body,
        timestamp,
      });
  }

  /** A forward-mode inbound attempt's request, built when it is sent. */
  private forwardRequest(c: InboundDeliveryContext, payload: Payload): Prepared['build'] {
    const body = Buffer.isBuffer(payload) ? payload : this.streamedBody(payload);
    return (timestamp) =>
      buildForwardRequest({
        messageId: c.id,
        url: c.url,
        method: c.method,
        path: c.path,
        query: c.query,
        rawHeaders: c.raw_headers,
        secrets: c.signing_enabled ? c.secrets.map((s) => this.secret(s)) : null,
        body,
        timestamp,
      });
  }

  /**
   * A blob's bytes, from a fresh read of the store for every pass (the signature's, the request's):
   * BLOB_CHUNK_BYTES at a time, and checked against the size its message has.
   */
  private streamedBody({ key, size }: BlobPayload): StreamedBody {
    const { payloadStore } = this.deps;
    const sql = this.sql;
    return {
      size,
      async *open() {
        const stream = await openPayload(payloadStore, sql, key, size);
        if (stream === undefined) throw new PayloadUnavailableError(`payload ${key} is not stored`);
        yield* stream as AsyncIterable<Buffer>;
      },
    };
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
    const entries = deliveries.map((d) =>
      this.dispatch({
        kind: 'outbound',
        messageId: d.messageId,
        leaseId: lease.leaseId,
        previousStatus: 'queued',
        attemptNumber: 1,
        attemptInDelivery: 1,
        notBefore: 0,
        traceContext: null,
        bytes: d.body.length,
        blobKey: null,
        build: this.outboundRequest(d),
      }),
    );
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
      const span = this.attemptSpan(p, request);
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

  /**
   * The span of one attempt (`hookrelay.delivery.attempt`, a child of the message's stored context):
   * the target's host and port, never its path, query, headers or body (they may hold secrets).
   */
  private attemptSpan(p: Prepared, request: OutgoingRequest): Span | undefined {
    const tracing = this.deps.tracing;
    if (tracing === undefined || !tracing.enabled) return undefined;
    let host: string | undefined;
    let port: number | undefined;
    try {
      const url = new URL(request.url);
      host = url.hostname;
      port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    } catch {
      // An unparsable URL fails the send; the span says so without the URL.
    }
    return tracing.startSpan('hookrelay.delivery.attempt', {
      kind: 'client',
      parent: p.traceContext,
      attributes: {
        'http.request.method': request.method,
        'server.address': host,
        'server.port': port,
        'hookrelay.message.id': p.messageId,
        'hookrelay.message.kind': p.kind,
        'hookrelay.delivery.attempt_number': p.attemptNumber,
      },
    });
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

/** Ends an attempt's span with what came back: the status, or the kind of failure (never its detail). */
function endAttemptSpan(span: Span | undefined, result: SendResult): void {
  if (span === undefined) return;
  if (result.status !== null) {
    span.setAttribute('http.response.status_code', result.status);
    if (result.status >= 400) span.fail(`HTTP ${result.status}`);
  } else {
    const kind = result.aborted ? 'aborted' : (result.error ?? 'no response').split(/[:(]/)[0]!.trim().slice(0, 64);
    span.setAttribute('error.type', kind);
    span.fail(kind);
  }
  span.end();
}
