import type { Database, Sql } from '../db/database.js';
import { lockPullEndpointsForIngest } from '../db/pull-endpoints.js';
import { insertPullEvents, type NewPullEvent } from '../db/pull-events.js';
import type { PayloadStore } from '../storage/payload-store.js';

export interface PullIngestItem {
  event: Omit<NewPullEvent, 'payloadKey'>;
  body: Buffer;
}

export type PullIngestOutcome = { kind: 'stored'; eventId: string } | { kind: 'paused' } | { kind: 'gone' };

interface Pending {
  item: PullIngestItem;
  resolve(outcome: PullIngestOutcome): void;
  reject(error: unknown): void;
}

/** The payload store key of a pull event's bytes. */
export const pullPayloadKey = (eventId: string) => `pull/${eventId}`;

/**
 * Stores pull events in group commits, as the inbound batcher does: while one transaction runs,
 * arrivals queue, and the next transaction takes them all. Each transaction share-locks its
 * endpoints' rows and re-checks paused/deleted under that lock, so a pause or delete that has
 * answered is never followed by a stored event. A request is answered only after its commit.
 */
export class PullIngestBatcher {
  private queue: Pending[] = [];
  private flushing = false;

  constructor(
    private readonly db: Database,
    private readonly payloadStore: PayloadStore,
    private readonly maxBatch = 500,
    private readonly maxBatchBytes = 16 * 1024 * 1024,
  ) {}

  submit(item: PullIngestItem): Promise<PullIngestOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  /** Resolves once everything queued so far is stored (graceful shutdown). */
  async idle(): Promise<void> {
    while (this.flushing || this.queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      let count = 0;
      let bytes = 0;
      while (count < this.queue.length && count < this.maxBatch && (count === 0 || bytes + this.queue[count]!.item.body.length <= this.maxBatchBytes)) {
        bytes += this.queue[count]!.item.body.length;
        count++;
      }
      const batch = this.queue.splice(0, count);
      try {
        const outcomes = await this.db.sql.begin((tx) => this.store(tx, batch.map((p) => p.item)));
        batch.forEach((p, i) => p.resolve(outcomes[i]!));
      } catch (error) {
        batch.forEach((p) => p.reject(error));
      }
    }
    this.flushing = false;
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
