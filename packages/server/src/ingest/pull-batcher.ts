import type { Database, Sql } from '../db/database.js';
import { lockPullEndpointsForIngest } from '../db/pull-endpoints.js';
import { insertPullEvents, type NewPullEvent } from '../db/pull-events.js';
import { GroupCommit } from '../lib/group-commit.js';
import type { PayloadStore } from '../storage/payload-store.js';
import { NOOP_TRACING, traceCommits, type Tracing } from '../tracing/tracing.js';

export interface PullIngestItem {
  event: Omit<NewPullEvent, 'payloadKey'>;
  body: Buffer;
  /** The `traceparent` of the request's span, linked from the commit's span (null: tracing off). */
  traceContext: string | null;
}

export type PullIngestOutcome = { kind: 'stored'; eventId: string } | { kind: 'paused' } | { kind: 'gone' };

/** The payload store key of a pull event's bytes. */
export const pullPayloadKey = (eventId: string) => `pull/${eventId}`;

export interface PullIngestBatcherOptions {
  /** Most events per commit (default 500). */
  maxBatch?: number;
  /** Most body bytes per commit (default 16 MiB; a batch always takes at least one event). */
  maxBatchBytes?: number;
  /** A span per commit (`hookrelay.pull.commit`), linked from each request's. */
  tracing?: Tracing;
}

/**
 * Stores pull events in group commits (one transaction for the webhooks that arrived while the
 * previous one ran). Each transaction share-locks its endpoints' rows and re-checks paused/deleted
 * under that lock, so a pause or delete that has answered is never followed by a stored event. A
 * request is answered only after its commit; a failed transaction fails every request in it.
 */
export class PullIngestBatcher {
  private readonly commits: GroupCommit<PullIngestItem, PullIngestOutcome>;

  constructor(
    private readonly db: Database,
    private readonly payloadStore: PayloadStore,
    { maxBatch = 500, maxBatchBytes = 16 * 1024 * 1024, tracing = NOOP_TRACING }: PullIngestBatcherOptions = {},
  ) {
    this.commits = new GroupCommit({
      commit: traceCommits(
        tracing,
        'hookrelay.pull.commit',
        (items) => this.db.sql.begin((tx) => this.store(tx, items)),
        (item) => item.traceContext,
        (item) => item.body.length,
      ),
      maxBatch,
      sizeOf: (item) => item.body.length,
      maxBatchSize: maxBatchBytes,
    });
  }

  submit(item: PullIngestItem): Promise<PullIngestOutcome> {
    return this.commits.enqueue(item);
  }

  /** Resolves once everything queued so far is stored (graceful shutdown). */
  idle(): Promise<void> {
    return this.commits.idle();
  }

  private async store(tx: Sql, items: PullIngestItem[]): Promise<PullIngestOutcome[]> {
    const endpointIds = [...new Set(items.map((i) => i.event.endpointId))].sort();
    const locks = new Map((await lockPullEndpointsForIngest(tx, endpointIds)).map((row) => [row.id, row]));
    const events: NewPullEvent[] = [];
    const payloads: { key: string; data: Uint8Array }[] = [];
    const outcomes = items.map((item): PullIngestOutcome => {
      const lock = locks.get(item.event.endpointId);
      if (!lock || lock.gone) return { kind: 'gone' };
      if (lock.paused) return { kind: 'paused' };
      const payloadKey = pullPayloadKey(item.event.id);
      events.push({ ...item.event, payloadKey });
      payloads.push({ key: payloadKey, data: item.body });
      return { kind: 'stored', eventId: item.event.id };
    });
    await this.payloadStore.putMany(tx, payloads);
    await insertPullEvents(tx, events);
    return outcomes;
  }
}
