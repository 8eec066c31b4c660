import type { FastifyBaseLogger } from 'fastify';
import { smallBodyReserve, type Config } from './config.js';
import { BodyBudget } from './ingest/body-budget.js';
import { MIN_RATE_GRACE_BYTES, type IngestGuards } from './ingest/body-limit.js';
import {
  INBOUND_ENDPOINT_CHANGED_CHANNEL,
  INBOUND_MESSAGES_CHANNEL,
  INBOUND_REPLAY_CHANNEL,
  INGEST_REJECTIONS_CHANNEL,
  readInboundCommits,
  readReplayNotice,
  rejectionNotices,
} from './db/channels.js';
import type { Database } from './db/database.js';
import { BulkJobWorker, type BulkJobWorkerOptions } from './bulk/worker.js';
import { MessageBatcher } from './delivery/message-batcher.js';
import { EventFanout } from './delivery/event-fanout.js';
import { DELIVERY_SWEEPERS } from './delivery/sweepers.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from './delivery/worker.js';
import { IngestBatcher, type IngestBatcherOptions } from './ingest/batcher.js';
import type { IngestEndpointCache } from './ingest/endpoint-cache.js';
import type { SenderSigningCache } from './ingest/signing-cache.js';
import { PullIngestBatcher } from './ingest/pull-batcher.js';
import { RejectionRecorder, type RejectionRecorderOptions } from './ingest/rejections.js';
import type { Metrics } from './metrics/index.js';
import type { SecretBox } from './security/crypto.js';
import type { Resolver } from './security/ssrf.js';
import type { PayloadStore } from './storage/payload-store.js';
import { committedRow } from './stream/committed.js';
import { StreamConnections } from './stream/connections.js';
import { committedFrame, StreamHub } from './stream/hub.js';
import { pushRejections } from './stream/rejection-push.js';
import { ResultBatcher } from './stream/result-batcher.js';
import { SocketRegistry } from './stream/sockets.js';
import { WatchHub } from './stream/watch.js';
import { DEFAULT_SWEEPERS, startSweepers, type SweeperHandle } from './sweepers/runner.js';
import { abandonedUploadsSweeper } from './sweepers/blob-uploads.js';
import { messageRetentionSweeper } from './sweepers/retention.js';
import type { Tracing } from './tracing/tracing.js';

/** What the engines are built from: the app's services that exist before them. */
export interface EngineDeps {
  config: Config;
  db: Database;
  secretBox: SecretBox;
  payloadStore: PayloadStore;
  ingestCache: IngestEndpointCache;
  /** The endpoints' re-signing settings, which the streams read by (dropped with the ingest settings). */
  senderSigning: SenderSigningCache;
  metrics: Metrics;
  tracing: Tracing;
  log: FastifyBaseLogger;
  resolveHost?: Resolver | undefined;
}

export interface EngineOptions {
  /**
   * The delivery worker of the worker role, with these settings (default: the configuration's);
   * false builds none (tests that run their own).
   */
  worker?: DeliveryWorkerOptions | false;
  /**
   * The bulk job worker of the worker role, with these settings over the configuration's; false
   * builds none (tests that run their own).
   */
  bulkJobs?: Partial<BulkJobWorkerOptions> | false;
  /** The refused-request recorder's limits (default: 10 per second per endpoint, 1,000 kept). */
  rejections?: RejectionRecorderOptions;
}

/** The api role's engines. */
export interface ApiEngines {
  /** Connected CLIs: their streams. */
  streams: StreamHub;
  /** Pages watching an endpoint's new messages. */
  watch: WatchHub;
  /** Results of every CLI (stream frames and HTTP reports), in group commits. */
  results: ResultBatcher;
  /** POST /v1/messages, in group commits. */
  messages: MessageBatcher;
  /** POST /v1/events: events and their fan-outs, in group commits. */
  events: EventFanout;
  /** The rows that count connected CLIs across processes. */
  connections: StreamConnections;
}

/** The ingest role's engines: the group-commit writers of inbound webhooks and pull events. */
export interface IngestEngines {
  inbound: IngestBatcher;
  pull: PullIngestBatcher;
  /** Requests refused at ingest URLs, recorded in group commits of their own. */
  rejections: RejectionRecorder;
  /** The bounds on bodies being received, shared by every ingest URL of the process. */
  guards: IngestGuards;
}

/**
 * Every engine of the process, built here from its roles and nowhere else, with what connects them:
 *
 * - a webhook committed by this process's ingestion goes to this process's streams straight from
 *   the commit (its frame rendered while the commit was in flight); the streams of other processes
 *   hear of it by the commit channel's NOTIFY;
 * - this process listens once per channel and hands each notice to every engine that needs it
 *   (the streams and the watch sockets both hear the commit channel);
 * - a message enqueued here, or fanned out from an event, is leased to this process's delivery
 *   worker in the statement that stores it;
 * - the bulk job worker hands its retries to the delivery workers through the queue, and its
 *   cli-mode replays to every process's streams through the replay channel;
 * - `close` stops everything in one order.
 *
 * The delivery worker, the bulk job worker and the sweepers start later (`startBackground`), once
 * the process listens.
 */
export class Engines {
  readonly sockets: SocketRegistry;
  readonly api: ApiEngines | undefined;
  readonly ingest: IngestEngines | undefined;
  readonly worker: DeliveryWorker | undefined;
  readonly bulkJobs: BulkJobWorker | undefined;
  private sweepers: SweeperHandle | undefined;
  private unlisten: (() => Promise<void>)[] = [];
  private closing: Promise<void> | undefined;
  private readonly builtAt = new Date();

  constructor(
    private readonly deps: EngineDeps,
    options: EngineOptions = {},
  ) {
    const { config, db, payloadStore, metrics, tracing, log } = deps;
    const roles = config.roles;
    this.sockets = new SocketRegistry(db, config.maxSockets, log, (limit) => metrics.countSocketRefusal(limit));
    metrics.trackOpenSockets(() => this.sockets.openCount);

    // Built first: a bad delivery setting (an unreadable CA file) fails the build, before the process listens.
    this.worker =
      roles.has('worker') && options.worker !== false
        ? new DeliveryWorker({ db, config, secretBox: deps.secretBox, payloadStore, log, metrics, tracing, ...(deps.resolveHost ? { resolveHost: deps.resolveHost } : {}) }, options.worker ?? {})
        : undefined;

    this.bulkJobs =
      roles.has('worker') && options.bulkJobs !== false
        ? new BulkJobWorker({ db, log }, { chunkSize: config.bulkChunkSize, chunkDelayMs: config.bulkChunkDelayMs, ...options.bulkJobs })
        : undefined;

    if (roles.has('api')) {
      const streams = new StreamHub(db, payloadStore, log, { tracing, resign: { cache: deps.senderSigning, afterSeconds: config.resignAfterSeconds } });
      metrics.trackConnectedClis(() => streams.connectedCount);
      this.api = {
        streams,
        watch: new WatchHub(db, log),
        results: new ResultBatcher(db.sql, log, { tracing }),
        messages: new MessageBatcher(db, payloadStore, { localWorker: this.worker }),
        events: new EventFanout(db, payloadStore, { localWorker: this.worker }),
        connections: new StreamConnections(db.sql, log),
      };
    }

    if (roles.has('ingest')) {
      const streams = this.api?.streams;
      const handOff: IngestBatcherOptions = { tracing, ...(streams
        ? {
            wantsCommitted: (endpointId) => streams.hasSubscribers(endpointId),
            renderCommitted: ({ id, item }) => committedFrame(committedRow(id, item)),
            onCommitted: ({ endpointId, previousLastId, messages }) =>
              streams.publishCommitted(
                endpointId,
                previousLastId,
                messages.map(({ id, item, rendered }) => committedRow(id, item, rendered)),
              ),
          }
        : {}) };
      const budget = new BodyBudget({
        maxBytes: config.ingestInflight.maxBytes,
        perSourceBytes: config.ingestInflight.perSourceBytes,
        smallBodyBytes: MIN_RATE_GRACE_BYTES,
        smallReserveBytes: smallBodyReserve(config.ingestInflight.maxBytes),
      });
      metrics.trackIngestInflight(() => budget.bytesInFlight);
      this.ingest = {
        guards: { budget, minBytesPerSecond: config.ingestMinUploadBytesPerSecond, onBudgetRefusal: (bound) => metrics.countBudgetRefusal(bound) },
        inbound: new IngestBatcher(db, payloadStore, handOff),
        pull: new PullIngestBatcher(db, payloadStore, { tracing }),
        // Every process's streams and watch sockets hear of stored refusals by NOTIFY, this one's too.
        rejections: new RejectionRecorder(db, metrics, log, {
          ...options.rejections,
          onStored: (stored) => {
            for (const notice of rejectionNotices(stored)) {
              db.notify(INGEST_REJECTIONS_CHANNEL, notice).catch((error: unknown) => log.warn({ err: error }, 'refused requests were stored but not announced'));
            }
          },
        }),
      };
    }
  }

  /** The LISTENs and timers; the app is not ready before they are. */
  async start(): Promise<void> {
    const { db, ingestCache, senderSigning, log } = this.deps;
    // Every role: an endpoint changed by any process drops this process's cached ingest settings.
    this.unlisten.push(
      await db.listen(INBOUND_ENDPOINT_CHANGED_CHANNEL, (id) => {
        ingestCache.invalidate(id);
        senderSigning.delete(id);
      }),
    );
    const api = this.api;
    if (api === undefined) return;
    const { streams, watch } = api;
    streams.start();
    watch.start();
    api.connections.start();
    await this.sockets.start();
    this.unlisten.push(
      await db.listen(
        INBOUND_MESSAGES_CHANNEL,
        (payload) =>
          readInboundCommits(payload, (endpointId, lastId) => {
            streams.committed(endpointId, lastId);
            watch.committed(endpointId);
          }),
        // Notices sent while the listening connection was re-established are lost: everyone reads again.
        () => {
          streams.wakeAll();
          watch.wakeAll();
        },
      ),
      await db.listen(INBOUND_REPLAY_CHANNEL, (payload) => {
        const notice = readReplayNotice(payload);
        if (notice) void streams.replayed(notice.endpointId, notice.messageIds);
      }),
      await db.listen(INGEST_REJECTIONS_CHANNEL, (payload) => void pushRejections(payload, { streams, watch, sql: db.sql, log })),
    );
  }

  /** The worker role's background work: the sweepers, the delivery worker and the bulk job worker. */
  async startBackground(): Promise<void> {
    const { config, db, payloadStore, metrics, tracing, log } = this.deps;
    if (!config.roles.has('worker')) return;
    this.sweepers = startSweepers(db, { payloadStore, tracing, metrics }, log, config.sweepIntervalSeconds * 1000, [
      ...DEFAULT_SWEEPERS,
      abandonedUploadsSweeper(config.requestTimeoutSeconds, db.backend === 'pglite' ? { onlyProcessSince: this.builtAt } : {}),
      messageRetentionSweeper({ defaultDays: config.messageRetentionDays, batch: config.messageRetentionBatchSize }),
      ...DELIVERY_SWEEPERS,
    ]);
    await this.worker?.start();
    await this.bulkJobs?.start();
  }

  /**
   * The graceful stop, after the HTTP server stopped taking requests and answered those it had:
   * what the writers accepted is committed and announced; the bulk job worker's chunk in flight
   * commits; the delivery worker's attempts end (or are cut and released) and their results are
   * written; then the hubs, the LISTENs and the timers end. The database is the caller's, closed after this.
   */
  close(): Promise<void> {
    this.closing ??= this.stop();
    return this.closing;
  }

  private async stop(): Promise<void> {
    const { api, ingest } = this;
    await Promise.all([ingest?.inbound.idle(), ingest?.pull.idle(), ingest?.rejections.idle(), api?.messages.idle(), api?.events.idle(), api?.results.idle()]);
    await this.bulkJobs?.stop();
    await this.worker?.stop();
    await this.sweepers?.stop();
    await Promise.all(this.unlisten.map((unlisten) => unlisten().catch(() => {})));
    this.unlisten = [];
    api?.streams.stop();
    api?.watch.stop();
    await this.sockets.stop();
    await api?.connections.stop();
  }
}
