import type { Database, Sql } from '../db/database.js';
import {
  claimIdempotencyKeys,
  findIdempotencyHolders,
  insertInboundMessages,
  lockEndpointsForIngest,
  setLastMessageIds,
  type NewInboundMessage,
} from '../db/ingest.js';
import { notifyOnCommit } from '../db/notify.js';
import { enqueueDeliveries } from '../db/deliveries.js';
import type { PayloadStore } from '../storage/payload-store.js';
import { nextOrderedId } from './ordered-id.js';

/** NOTIFY channel: new inbound messages were committed (payload: the endpoint ids, comma-separated). */
export const INBOUND_MESSAGES_CHANNEL = 'hookrelay_inbound_messages';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface IngestItem {
  endpointId: string;
  projectId: string;
  method: string;
  path: string;
  query: string;
  contentType: string;
  rawHeaders: [string, string][];
  body: Buffer;
  sha256: string;
  idempotencyKey: string | null;
  receivedAt: Date;
}

export type IngestOutcome =
  | { kind: 'stored'; messageId: string }
  | { kind: 'duplicate'; messageId: string }
  | { kind: 'paused' }
  | { kind: 'gone' };

interface Pending {
  item: IngestItem;
  resolve(outcome: IngestOutcome): void;
  reject(error: unknown): void;
}

export interface IngestBatcherOptions {
  /** Most webhooks stored in one transaction. */
  maxBatch?: number;
  /** Most payload bytes stored in one transaction (a batch always takes at least one webhook). */
  maxBatchBytes?: number;
  /**
   * Transactions in flight at once. Batches of one endpoint still commit one after another (they
   * wait on its row lock), but the next one has already begun and is waiting, and batches of
   * other endpoints do not wait at all.
   */
  maxConcurrent?: number;
}

/**
 * Stores webhooks in group commits: while one transaction runs, new arrivals queue, and the next
 * transaction takes them all. Each transaction locks its endpoints' rows (in id order) until commit,
 * assigns ids above each endpoint's last id, and so makes one endpoint's messages visible strictly
 * in id order across any number of processes (decisions.md §5). A request is answered only after
 * the commit that holds its message.
 */
export class IngestBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  private inFlight = 0;
  private readonly maxBatch: number;
  private readonly maxBatchBytes: number;
  private readonly maxConcurrent: number;

  constructor(
    private readonly db: Database,
    private readonly payloadStore: PayloadStore,
    private readonly options: IngestBatcherOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
    this.maxBatchBytes = options.maxBatchBytes ?? 16 * 1024 * 1024;
    this.maxConcurrent = options.maxConcurrent ?? 1;
  }

  submit(item: IngestItem): Promise<IngestOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Let the requests that arrived in the same turn of the event loop join one batch.
        setImmediate(() => {
          this.scheduled = false;
          this.launch();
        });
      }
    });
  }

  /** Resolves once everything queued so far is stored (graceful shutdown). */
  async idle(): Promise<void> {
    while (this.scheduled || this.inFlight > 0 || this.queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  }

  private launch(): void {
    while (this.queue.length > 0 && this.inFlight < this.maxConcurrent) {
      const batch = this.takeBatch();
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        this.launch();
      });
    }
  }

  private takeBatch(): Pending[] {
    let count = 0;
    let bytes = 0;
    while (count < this.queue.length && count < this.maxBatch && (count === 0 || bytes + this.queue[count]!.item.body.length <= this.maxBatchBytes)) {
      bytes += this.queue[count]!.item.body.length;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private async flush(batch: Pending[]): Promise<void> {
    try {
      const outcomes = await this.db.sql.begin((tx) => this.store(tx, batch.map((p) => p.item)));
      batch.forEach((p, i) => p.resolve(outcomes[i]!));
    } catch (error) {
      batch.forEach((p) => p.reject(error));
    }
  }

  private async store(tx: Sql, items: IngestItem[]): Promise<IngestOutcome[]> {
    const outcomes: (IngestOutcome | undefined)[] = new Array(items.length);
    const endpointIds = [...new Set(items.map((i) => i.endpointId))].sort();
    const locks = new Map((await lockEndpointsForIngest(tx, endpointIds)).map((row) => [row.id, row]));
    const lastIds = new Map<string, string | null>();

    // Ids in arrival order per endpoint, each above the endpoint's last committed id.
    const ids: (string | undefined)[] = new Array(items.length);
    items.forEach((item, i) => {
      const lock = locks.get(item.endpointId);
      if (!lock || lock.gone) outcomes[i] = { kind: 'gone' };
      else if (lock.paused) outcomes[i] = { kind: 'paused' };
      else {
        const last = lastIds.has(item.endpointId) ? lastIds.get(item.endpointId)! : lock.last_message_id;
        const id = nextOrderedId(last);
        lastIds.set(item.endpointId, id);
        ids[i] = id;
      }
    });

    // Idempotency: the first of a key in this batch claims it; later ones (here or from an earlier
    // commit) are duplicates of the message that holds it.
    const firstByKey = new Map<string, number>();
    const claims: { endpointId: string; key: string; messageId: string }[] = [];
    items.forEach((item, i) => {
      if (ids[i] === undefined || item.idempotencyKey === null) return;
      const k = `${item.endpointId}\n${item.idempotencyKey}`;
      if (!firstByKey.has(k)) {
        firstByKey.set(k, i);
        claims.push({ endpointId: item.endpointId, key: item.idempotencyKey, messageId: ids[i]! });
      }
    });
    if (claims.length > 0) {
      const won = await claimIdempotencyKeys(tx, claims, new Date(Date.now() + IDEMPOTENCY_WINDOW_MS));
      const lost = claims.filter((c) => !won.has(c.messageId));
      const holders = await findIdempotencyHolders(tx, lost);
      items.forEach((item, i) => {
        if (ids[i] === undefined || item.idempotencyKey === null) return;
        const k = `${item.endpointId}\n${item.idempotencyKey}`;
        const first = firstByKey.get(k)!;
        const firstId = ids[first]!;
        if (won.has(firstId)) {
          if (first !== i) outcomes[i] = { kind: 'duplicate', messageId: firstId };
        } else {
          outcomes[i] = { kind: 'duplicate', messageId: holders.get(k) ?? firstId };
        }
      });
    }

    const messages: NewInboundMessage[] = [];
    const payloads: { key: string; data: Uint8Array }[] = [];
    items.forEach((item, i) => {
      if (outcomes[i] !== undefined) return;
      const id = ids[i]!;
      const payloadKey = `inbound/${id}`;
      messages.push({
        id,
        projectId: item.projectId,
        endpointId: item.endpointId,
        method: item.method,
        path: item.path,
        query: item.query,
        contentType: item.contentType,
        sizeBytes: item.body.length,
        payloadSha256: item.sha256,
        rawHeaders: item.rawHeaders,
        payloadKey,
        idempotencyKey: item.idempotencyKey,
        receivedAt: item.receivedAt,
      });
      payloads.push({ key: payloadKey, data: item.body });
      outcomes[i] = { kind: 'stored', messageId: id };
    });
    // Independent writes, sent together: the PostgreSQL driver pipelines them on the
    // transaction's connection, so they cost one round trip instead of four.
    const lasts = [...lastIds].filter((e): e is [string, string] => e[1] !== null).map(([endpointId, messageId]) => ({ endpointId, messageId }));
    const writes = await Promise.allSettled([
      this.payloadStore.putMany(tx, payloads),
      insertInboundMessages(tx, messages),
      setLastMessageIds(tx, lasts),
      // Streams on every process learn of the new messages when, and only when, they commit.
      messages.length > 0 ? notifyOnCommit(tx, INBOUND_MESSAGES_CHANNEL, [...new Set(messages.map((m) => m.endpointId))].join(',')) : undefined,
      // Forward mode: the delivery is queued in the same commit (and wakes the workers when it lands).
      enqueueDeliveries(tx, messages.filter((m) => locks.get(m.endpointId)?.mode === 'forward').map((m) => ({ messageId: m.id, kind: 'inbound' as const, destination: m.endpointId }))),
    ]);
    const failed = writes.find((w): w is PromiseRejectedResult => w.status === 'rejected');
    if (failed) throw failed.reason;
    return outcomes as IngestOutcome[];
  }
}
