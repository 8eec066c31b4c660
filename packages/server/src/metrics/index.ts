import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { VERIFICATION_CHECKS, type VerificationCheck } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { deliveryQueueStats, type DeliveryKind, type DeliveryStatus } from '../db/deliveries.js';
import { AppError, IngestBudgetError, type BudgetRefusal } from '../errors.js';
import { clientWentAway } from '../lib/client-abort.js';
import { droppedLogLines } from '../logging.js';
import { SERVER_COMMIT, SERVER_VERSION } from '../version.js';

/**
 * Prometheus metrics (docs/operating.md "Metrics"). Each app has its own registry, so that any
 * number of apps can live in one process (tests build many); counters are bumped through label
 * children bound here once, so a request builds no label object.
 */

export type IngestKind = 'inbound' | 'pull';
export const INGEST_OUTCOMES = ['accepted', 'duplicate', 'rejected_verification', 'not_found', 'gone', 'paused', 'too_large', 'over_budget', 'timeout', 'aborted', 'error'] as const;
export type IngestOutcome = (typeof INGEST_OUTCOMES)[number];

/** Which limit refused a WebSocket upgrade (stream/sockets.ts): the label of the refusal metric. */
export type SocketLimitName = 'key' | 'project' | 'process';
const SOCKET_LIMIT_NAMES: readonly SocketLimitName[] = ['key', 'project', 'process'];

/** The messages retention removes (sweepers/retention.ts). */
export type PurgedKind = 'inbound' | 'outbound';

export type DeliveryMetricKind = 'outbound' | 'inbound_forward' | 'cli';
/** What a recorded attempt did to its message: the status it left it in, in words an operator reads. */
export const DELIVERY_OUTCOMES = ['succeeded', 'retrying', 'failed', 'requeued'] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

const OUTCOME_BY_STATUS: Partial<Record<DeliveryStatus, DeliveryOutcome>> = {
  succeeded: 'succeeded',
  pending_retry: 'retrying',
  failed_permanent: 'failed',
  // A retry or replay asked for during the attempt: delivered again at once.
  queued: 'requeued',
};
/** 1 ms to 5 s: an ingest answers after one commit, which takes milliseconds unless the database struggles. */
const INGEST_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** A scrape must answer even when the database does not: the queue gauges then read NaN. */
const QUEUE_QUERY_TIMEOUT_MS = 2000;

type CounterChild = ReturnType<Counter<string>['labels']>;
type HistogramChild = ReturnType<Histogram<string>['labels']>;

/** A counter child that is exported (at 0) from the start, so that rate() sees its first increment. */
function boundCounter(counter: Counter<string>, ...labels: string[]): CounterChild {
  const child = counter.labels(...labels);
  child.inc(0);
  return child;
}

let processRegistry: Registry | undefined;

/**
 * Process metrics (RSS, CPU, event-loop lag, GC …) describe the process, not an app, and
 * collectDefaultMetrics starts observers that are never stopped: collected once per process and
 * shown by every app's scrape.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'hookrelay_' });
    // The process has one stdout, whatever number of apps log to it.
    new Counter({
      name: 'hookrelay_log_lines_dropped_total',
      help: 'Log lines dropped because stdout did not take them (nobody reading it) and the log buffer was full.',
      registers: [processRegistry],
      collect() {
        this.reset();
        this.inc(droppedLogLines());
      },
    });
    // The usual build-info gauge: 1, its labels saying what runs (joined onto other series in queries).
    new Gauge({
      name: 'hookrelay_build_info',
      help: 'Always 1; the labels say which hookrelay-server version, git commit and Node.js version this process runs.',
      labelNames: ['version', 'commit', 'node'],
      registers: [processRegistry],
    }).set({ version: SERVER_VERSION, commit: SERVER_COMMIT, node: process.version }, 1);
  }
  return processRegistry;
}

export class Metrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly ingestCounts: Record<IngestKind, Record<IngestOutcome, CounterChild>>;
  private readonly ingestDurations: Record<IngestKind, HistogramChild>;
  private readonly verificationFailures: Record<string, CounterChild>;
  private readonly rejections: Record<'recorded' | 'dropped', CounterChild>;
  private readonly deliveries: Record<DeliveryMetricKind, Partial<Record<DeliveryOutcome, CounterChild>>>;
  private readonly queueDepth: Gauge<string>;
  private readonly queueOldestAge: Gauge<string>;
  private readonly connectedClisSources = new Set<() => number>();
  private readonly inflightSources = new Set<() => number>();
  private readonly budgetRefusals: Record<BudgetRefusal, CounterChild>;
  private readonly socketRefusals: Record<SocketLimitName, CounterChild>;
  private readonly purged: Record<PurgedKind, CounterChild>;
  private openSockets: () => number = () => 0;

  constructor(
    private readonly sql: Sql,
    private readonly log: FastifyBaseLogger,
  ) {
    const registers = [this.registry];
    const ingest = new Counter({
      name: 'hookrelay_ingest_requests_total',
      help: 'Requests to ingest URLs (/in, /pull; HEAD and OPTIONS probes excluded) by kind and outcome.',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    const duration = new Histogram({
      name: 'hookrelay_ingest_duration_seconds',
      help: 'Accepted ingest requests: from the request arriving to the answer sent (after the commit).',
      labelNames: ['kind'],
      buckets: INGEST_DURATION_BUCKETS,
      registers,
    });
    const bindIngest = (kind: IngestKind) =>
      Object.fromEntries(INGEST_OUTCOMES.map((outcome) => [outcome, boundCounter(ingest, kind, outcome)])) as Record<IngestOutcome, CounterChild>;
    this.ingestCounts = { inbound: bindIngest('inbound'), pull: bindIngest('pull') };
    duration.zero({ kind: 'inbound' });
    duration.zero({ kind: 'pull' });
    this.ingestDurations = { inbound: duration.labels('inbound'), pull: duration.labels('pull') };

    const verification = new Counter({
      name: 'hookrelay_verification_failures_total',
      help: 'Inbound requests refused 401 by sender verification, by the check that failed.',
      labelNames: ['reason'],
      registers,
    });
    this.verificationFailures = Object.fromEntries(VERIFICATION_CHECKS.map((check) => [check, boundCounter(verification, check)]));

    const rejections = new Counter({
      name: 'hookrelay_ingest_rejections_total',
      help: 'Requests refused at a live endpoint\'s ingest URL: recorded (kept for the API) or dropped (counted only: over the per-endpoint rate, or the writer behind).',
      labelNames: ['outcome'],
      registers,
    });
    this.rejections = { recorded: boundCounter(rejections, 'recorded'), dropped: boundCounter(rejections, 'dropped') };

    const budgetRefusals = new Counter({
      name: 'hookrelay_ingest_budget_refusals_total',
      help: 'Ingest requests answered 503 because the bytes of bodies being received would pass a bound: the process\'s (HOOKRELAY_INGEST_MAX_INFLIGHT_BYTES) or the source address\'s share.',
      labelNames: ['bound'],
      registers,
    });
    this.budgetRefusals = { process: boundCounter(budgetRefusals, 'process'), source: boundCounter(budgetRefusals, 'source') };
    const inflight = this.inflightSources;
    new Gauge({
      name: 'hookrelay_ingest_inflight_bytes',
      help: 'Bytes of webhook bodies this process is receiving now, as its ingest budget counts them.',
      registers,
      collect() {
        let total = 0;
        for (const bytes of inflight) total += bytes();
        this.set(total);
      },
    });

    const deliveries = new Counter({
      name: 'hookrelay_deliveries_total',
      help: 'Recorded delivery attempts by kind and the outcome they left the message in.',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    const bindDeliveries = (kind: DeliveryMetricKind, outcomes: readonly DeliveryOutcome[]) =>
      Object.fromEntries(outcomes.map((outcome) => [outcome, boundCounter(deliveries, kind, outcome)])) as Partial<Record<DeliveryOutcome, CounterChild>>;
    this.deliveries = {
      outbound: bindDeliveries('outbound', DELIVERY_OUTCOMES),
      inbound_forward: bindDeliveries('inbound_forward', DELIVERY_OUTCOMES),
      // The CLI reports once per message: it never retries through the server.
      cli: bindDeliveries('cli', ['succeeded', 'failed']),
    };

    this.queueDepth = new Gauge({
      name: 'hookrelay_delivery_queue_depth',
      help: 'Deliveries due now that no worker holds (all processes; read from the database at scrape).',
      registers,
    });
    this.queueOldestAge = new Gauge({
      name: 'hookrelay_delivery_queue_oldest_age_seconds',
      help: 'How long the longest-waiting due delivery has been due (0 when none waits).',
      registers,
    });
    const sources = this.connectedClisSources;
    new Gauge({
      name: 'hookrelay_connected_clis',
      help: 'CLI WebSocket streams open on this process.',
      registers,
      collect() {
        let total = 0;
        for (const count of sources) total += count();
        this.set(total);
      },
    });
    const refusals = new Counter({
      name: 'hookrelay_websocket_refusals_total',
      help: 'WebSocket upgrades (CLI streams, watch sockets) refused 429 by this process, by the limit reached: key, project or process.',
      labelNames: ['limit'],
      registers,
    });
    this.socketRefusals = Object.fromEntries(SOCKET_LIMIT_NAMES.map((limit) => [limit, boundCounter(refusals, limit)])) as Record<SocketLimitName, CounterChild>;
    const purged = new Counter({
      name: 'hookrelay_messages_purged_total',
      help: 'Messages removed for good by retention (older than their endpoint\'s retention_days or HOOKRELAY_MESSAGE_RETENTION_DAYS), by kind, counted by the process that removed them.',
      labelNames: ['kind'],
      registers,
    });
    this.purged = { inbound: boundCounter(purged, 'inbound'), outbound: boundCounter(purged, 'outbound') };
    const metrics = this;
    new Gauge({
      name: 'hookrelay_websockets_open',
      help: 'WebSockets of the /v1 API (CLI streams and watch sockets) open or opening on this process, as the socket limits count them.',
      registers,
      collect() {
        this.set(metrics.openSockets());
      },
    });
  }

  countSocketRefusal(limit: SocketLimitName): void {
    this.socketRefusals[limit].inc();
  }

  /** The source of the open-socket gauge (the app's socket registry). */
  trackOpenSockets(count: () => number): void {
    this.openSockets = count;
  }

  /** Counts ingest requests of one plugin scope (ingest/routes.ts, ingest/pull-routes.ts) as they are answered. */
  registerIngestHooks(app: FastifyInstance, kind: IngestKind): void {
    const counts = this.ingestCounts[kind];
    const duration = this.ingestDurations[kind];
    // 503 means paused, over the body budget or a database outage; 408 a slow body or a timeout:
    // only the error tells them apart.
    const outcomeOf = new WeakMap<FastifyRequest, IngestOutcome>();
    app.addHook('onError', (request, _reply, error, done) => {
      if (error instanceof AppError && error.code === 'ENDPOINT_PAUSED') outcomeOf.set(request, 'paused');
      else if (error instanceof IngestBudgetError) outcomeOf.set(request, 'over_budget');
      else if (clientWentAway(request)) outcomeOf.set(request, 'aborted');
      done();
    });
    // A sender that closes its connection mid-body gets no answer: counted once, whichever hook comes.
    const counted = new WeakSet<FastifyRequest>();
    app.addHook('onRequestAbort', (request, done) => {
      if (!counted.has(request) && request.method !== 'HEAD' && request.method !== 'OPTIONS') {
        counted.add(request);
        counts.aborted.inc();
      }
      done();
    });
    app.addHook('onResponse', (request, reply, done) => {
      if (request.method === 'HEAD' || request.method === 'OPTIONS' || counted.has(request)) return done();
      counted.add(request);
      const status = reply.statusCode;
      if (status < 300) {
        if (reply.hasHeader('hookrelay-duplicate')) counts.duplicate.inc();
        else {
          counts.accepted.inc();
          duration.observe(reply.elapsedTime / 1000);
        }
      } else if (status === 401) counts.rejected_verification.inc();
      else if (status === 404) counts.not_found.inc();
      else if (status === 410) counts.gone.inc();
      else if (status === 413) counts.too_large.inc();
      else if (status === 408) counts.timeout.inc();
      else {
        const outcome = outcomeOf.get(request);
        counts[outcome ?? 'error'].inc();
      }
      done();
    });
  }

  /** An ingest request answered 503 by the body budget. */
  countBudgetRefusal(bound: BudgetRefusal): void {
    this.budgetRefusals[bound].inc();
  }

  /** Adds a source of the bytes being received (an ingest budget of this app). */
  trackIngestInflight(bytes: () => number): void {
    this.inflightSources.add(bytes);
  }

  countVerificationFailure(check: VerificationCheck): void {
    this.verificationFailures[check]?.inc();
  }

  /** Refused requests: stored for the API, or only counted. */
  countRejections(outcome: 'recorded' | 'dropped', count = 1): void {
    this.rejections[outcome].inc(count);
  }

  /** One recorded attempt; `status` is the message status it left (statuses that end nothing are not counted). */
  countDelivery(kind: DeliveryKind | 'cli', status: DeliveryStatus): void {
    const outcome = OUTCOME_BY_STATUS[status];
    if (outcome) this.deliveries[kind === 'inbound' ? 'inbound_forward' : kind][outcome]?.inc();
  }

  /** Messages of one kind removed by a committed retention run. */
  countPurgedMessages(kind: PurgedKind, count: number): void {
    this.purged[kind].inc(count);
  }

  /** Adds a source of open CLI streams (a stream hub of this app, living as long as it), read at scrape. */
  trackConnectedClis(count: () => number): void {
    this.connectedClisSources.add(count);
  }

  /** The exposition text: queue gauges read now (one query), then every metric of the app and the process. */
  async render(): Promise<string> {
    await this.refreshQueue();
    const [process, app] = await Promise.all([processMetrics().metrics(), this.registry.metrics()]);
    return `${process}${app}`;
  }

  private async refreshQueue(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const stats = await Promise.race([
        deliveryQueueStats(this.sql),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('delivery queue query timed out')), QUEUE_QUERY_TIMEOUT_MS);
        }),
      ]);
      this.queueDepth.set(stats.depth);
      this.queueOldestAge.set(stats.oldestAgeSeconds);
    } catch (error) {
      this.log.warn({ err: { message: (error as Error).message } }, 'metrics: could not read the delivery queue');
      this.queueDepth.set(Number.NaN);
      this.queueOldestAge.set(Number.NaN);
    } finally {
      clearTimeout(timer);
    }
  }
}
