import { inboundCommitEntry, INBOUND_MESSAGES_CHANNEL } from '../db/channels.js';
import type { Database } from '../db/database.js';
import { storeInboundBatch, storeInboundOne, type IngestBatchItem } from '../db/ingest.js';
import { notifyAfterCommit } from '../db/notify.js';
import { GroupCommit } from '../lib/group-commit.js';
import type { PayloadStore } from '../storage/payload-store.js';
import { nextOrderedId } from './ordered-id.js';
import { NOOP_TRACING, traceCommits, type Tracing } from '../tracing/tracing.js';
import type { SenderSigning } from './resign.js';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

const MAX_REMEMBERED_ENDPOINTS = 10_000;

/**
 * How long the NOTIFY of a commit waits when this process's streams got its messages in memory: a
 * CLI forwards a message in well under a millisecond, and another process's streams hear of the
 * commit this much later (BENCHMARKS.md, Listen latency).
 */
export const ANNOUNCE_AFTER_LOCAL_STREAMS_MS = 5;

export interface IngestItem {
  endpointId: string;
  /** The endpoint's mode as last read (it picks the statement; the database has the last word). */
  endpointMode: 'forward' | 'cli';
  projectId: string;
  method: string;
  path: string;
  query: string;
  contentType: string;
  rawHeaders: [string, string][];
  /** The body's bytes; empty when it is `streamed` to the blob store. */
  body: Buffer;
  /**
   * A body already written to the blob store (ingest/body-intake.ts): its key and size, and how to
   * remove it when no message keeps it (a duplicate, an endpoint paused or gone meanwhile).
   */
  streamed: { key: string; size: number; abort(): Promise<void> } | null;
  sha256: string;
  idempotencyKey: string | null;
  receivedAt: Date;
  eventType: string | null;
  verified: readonly string[];
  /** The endpoint's re-signing settings, by which its streams judge whether it is late (ingest/resign.ts). */
  signing?: SenderSigning | null;
  /** The `traceparent` of the request's span, stored with the message (null: tracing off). */
  traceContext: string | null;
  /** An edited replay's copy (http/edited-replay.ts): the message it copies, and whether the server signed it. */
  copyOf?: { messageId: string; signed: boolean } | undefined;
}

export type IngestOutcome =
  | { kind: 'stored'; messageId: string }
  | { kind: 'duplicate'; messageId: string }
  | { kind: 'paused' }
  | { kind: 'gone' };

export interface IngestBatcherOptions {
  /** Most webhooks stored in one transaction. */
  maxBatch?: number;
  /** Most payload bytes stored in one transaction (a batch always takes at least one webhook). */
  maxBatchBytes?: number;
  /**
   * Batches in flight at once. Batches of one endpoint still commit one after another (they wait on
   * its row lock), but the next one is already at the database when the lock is released, and
   * batches of other endpoints do not wait at all.
   */
  maxConcurrent?: number;
  /**
   * Called after each commit, once per endpoint that got new messages, with the endpoint's last id
   * before that commit and the messages in id order, when `wantsCommitted` says someone in this
   * process wants them (a connected CLI's stream): they go out without a read-back.
   */
  onCommitted?: (commit: CommittedMessages) => void;
  wantsCommitted?: (endpointId: string) => boolean;
  /**
   * Renders what `onCommitted` will send of a message, called while its commit is in flight (the
   * server waits on the database then), so that it goes out sooner after the commit. Used only when
   * the commit keeps the id it was rendered with.
   */
  renderCommitted?: (message: { id: string; item: IngestItem }) => string | undefined;
  /** How long the NOTIFY waits when `onCommitted` took some of the commit's messages (ANNOUNCE_AFTER_LOCAL_STREAMS_MS). */
  announceAfterLocalStreamsMs?: number;
  /** A span per commit (`hookrelay.ingest.commit`). */
  tracing?: Tracing;
}

export interface CommittedMessages {
  endpointId: string;
  previousLastId: string | null;
  /** `rendered`: what `renderCommitted` made of the message, when it was made with this id. */
  messages: { id: string; item: IngestItem; rendered?: string | undefined }[];
}

/**
 * Stores webhooks in group commits, several in flight at once (`maxConcurrent`). A batch is one
 * autocommit statement (`storeInboundBatch`, or `storeInboundOne` for a webhook alone without an
 * idempotency key; one round trip). It locks its endpoints' rows (in id order) until its commit and
 * stores only ids above each endpoint's last committed id, so one endpoint's messages become
 * visible strictly in id order across any number of processes (docs/architecture.md, Ordering). A
 * request is answered only after the commit that holds its message.
 *
 * This process's streams get a commit's messages in memory (`onCommitted`); the other processes'
 * streams hear of them by a NOTIFY sent after the commit (`<endpoint id>:<last id>`, the commits of
 * one moment merged into one statement), so the notify lock and the wake-up of the listeners stay
 * off the webhook's critical path.
 */
export class IngestBatcher {
  private readonly commits: GroupCommit<IngestItem, IngestOutcome>;
  /** The last id this process proposed per endpoint. */
  private readonly lastProposed = new Map<string, string>();
  /** Endpoints with commits not announced yet, with their last committed id. */
  private readonly unannounced = new Map<string, string>();
  private announcing = false;
  private readonly announceAfterLocalStreamsMs: number;

  constructor(
    private readonly db: Database,
    private readonly payloadStore: PayloadStore,
    private readonly options: IngestBatcherOptions = {},
  ) {
    this.announceAfterLocalStreamsMs = options.announceAfterLocalStreamsMs ?? ANNOUNCE_AFTER_LOCAL_STREAMS_MS;
    this.commits = new GroupCommit({
      commit: traceCommits(options.tracing ?? NOOP_TRACING, 'hookrelay.ingest.commit', (items) => this.store(items), (item) => item.traceContext, (item) => item.body.length),
      maxBatch: options.maxBatch ?? 500,
      sizeOf: (item) => item.body.length,
      maxBatchSize: options.maxBatchBytes ?? 16 * 1024 * 1024,
      maxInFlight: options.maxConcurrent ?? 2,
    });
  }

  submit(item: IngestItem): Promise<IngestOutcome> {
    return this.commits.enqueue(item);
  }

  /** Resolves once everything queued so far is stored and announced (graceful shutdown). */
  async idle(): Promise<void> {
    while (this.commits.busy || this.announcing || this.unannounced.size > 0) {
      await this.commits.idle();
      if (this.announcing || this.unannounced.size > 0) await new Promise((r) => setTimeout(r, 5));
    }
  }

  /**
   * NOTIFYs the commits not announced yet after the answers of the batch that is ending (they go out
   * in the microtasks of its end, before any timer); and when this process's own streams have the
   * messages to forward (`handedToStreams`), after those too: the NOTIFY's transaction and the
   * wake-up of every listening process would take the cores from them.
   */
  private announceSoon(handedToStreams: boolean): void {
    if (this.unannounced.size === 0 || this.announcing) return;
    this.announcing = true;
    if (handedToStreams) setTimeout(() => void this.announce(), this.announceAfterLocalStreamsMs);
    else setImmediate(() => void this.announce());
  }

  /**
   * Stores one batch; its messages that this process's streams want go to them (`onCommitted`). A
   * batch that fails has nothing to announce: its ids are noted only once its statement succeeded.
   */
  private async store(items: IngestItem[]): Promise<IngestOutcome[]> {
    // Only the first webhook of an idempotency key in the batch is sent; the others share its fate.
    const firstOfKey = new Map<string, number>();
    const sent: number[] = [];
    const sameAs: (number | undefined)[] = new Array(items.length);
    items.forEach((item, i) => {
      if (item.idempotencyKey !== null) {
        const k = `${item.endpointId}\n${item.idempotencyKey}`;
        const first = firstOfKey.get(k);
        if (first !== undefined) {
          sameAs[i] = first;
          return;
        }
        firstOfKey.set(k, i);
      }
      sent.push(i);
    });

    // A body no message of this batch will hold is removed now (its blob's pending record would
    // otherwise wait for the sweeper).
    const abandon = (item: IngestItem) => {
      if (item.streamed) void item.streamed.abort();
    };
    // The bodies concatenated, as the batch's call takes them (one webhook's own body needs no copy);
    // streamed ones are in the blob store already.
    const inline = sent.filter((i) => items[i]!.streamed === null);
    const bodies = this.payloadStore.kind !== 'database' || inline.length === 0 ? null : inline.length === 1 ? items[inline[0]!]!.body : Buffer.concat(inline.map((i) => items[i]!.body));
    let offset = 0;
    const batchItems: IngestBatchItem[] = sent.map((i, n) => {
      const item = items[i]!;
      const row: IngestBatchItem = {
        n,
        ord: i,
        id: '',
        endpoint_id: item.endpointId,
        project_id: item.projectId,
        method: item.method,
        path: item.path,
        query: item.query,
        content_type: item.contentType,
        size_bytes: item.streamed?.size ?? item.body.length,
        sha256: item.sha256,
        raw_headers: item.rawHeaders,
        idempotency_key: item.idempotencyKey,
        received_at: item.receivedAt,
        body_offset: offset,
        event_type: item.eventType,
        verified: item.verified,
        trace_context: item.traceContext,
        payload_key: item.streamed?.key ?? null,
        replay_of: item.copyOf?.messageId ?? null,
        replay_signed: item.copyOf?.signed ?? null,
      };
      if (item.streamed === null) offset += item.body.length;
      return row;
    });
    this.proposeIds(batchItems);
    if (this.payloadStore.kind !== 'database') {
      // An object store is written before the commit, so a committed message always has its payload.
      await this.payloadStore.putMany(this.db.sql, batchItems.filter((b) => b.payload_key === null).map((b) => ({ key: `inbound/${b.id}`, data: items[b.ord]!.body })));
    }

    const alone = batchItems.length === 1 && batchItems[0]!.idempotency_key === null ? batchItems[0]! : undefined;
    const storing = alone
      ? storeInboundOne(this.db.sql, alone, alone.payload_key === null ? bodies : null, items[alone.ord]!.endpointMode).then((row) => [row])
      : storeInboundBatch(this.db.sql, batchItems, bodies, new Date(Date.now() + IDEMPOTENCY_WINDOW_MS));
    const rendering = this.renderWhileStoring(batchItems, items);
    let rows: Awaited<typeof storing>;
    try {
      rows = await storing;
    } finally {
      rendering.settled = true;
    }

    const outcomes: (IngestOutcome | undefined)[] = new Array(items.length);
    let committed: Map<string, CommittedMessages> | undefined;
    for (const row of rows) {
      outcomes[row.ord] =
        row.outcome === 'stored' || row.outcome === 'duplicate' ? { kind: row.outcome, messageId: row.message_id } : { kind: row.outcome as 'paused' | 'gone' };
      // When another process committed later ids meanwhile, the database gave ids above them instead.
      if (row.outcome === 'stored') {
        this.raiseLastProposed(row.endpoint_id, row.message_id);
        const announced = this.unannounced.get(row.endpoint_id);
        if (announced === undefined || announced < row.message_id) this.unannounced.set(row.endpoint_id, row.message_id);
      }
      if (row.outcome !== 'stored') abandon(items[row.ord]!);
      if (row.outcome === 'stored' && this.options.onCommitted && this.options.wantsCommitted?.(row.endpoint_id)) {
        committed ??= new Map();
        let commit = committed.get(row.endpoint_id);
        if (!commit) committed.set(row.endpoint_id, (commit = { endpointId: row.endpoint_id, previousLastId: row.previous_last_id, messages: [] }));
        const rendered = rendering.byOrd.get(row.ord);
        commit.messages.push({ id: row.message_id, item: items[row.ord]!, rendered: rendered?.id === row.message_id ? rendered.text : undefined });
      }
    }
    if (committed) {
      for (const commit of committed.values()) {
        commit.messages.sort((a, b) => (a.id < b.id ? -1 : 1));
        try {
          this.options.onCommitted!(commit);
        } catch {
          // A listener's failure must not fail the ingest: streams read the messages back on the NOTIFY.
        }
      }
    }
    items.forEach((item, i) => {
      const first = sameAs[i];
      if (first === undefined) return;
      abandon(item);
      const outcome = outcomes[first]!;
      outcomes[i] = outcome.kind === 'stored' ? { kind: 'duplicate', messageId: outcome.messageId } : outcome;
    });
    if (this.payloadStore.kind !== 'database') {
      const unused = batchItems.filter((b) => b.payload_key === null && outcomes[b.ord]?.kind !== 'stored').map((b) => `inbound/${b.id}`);
      if (unused.length > 0) await this.payloadStore.deleteMany(this.db.sql, unused).catch(() => undefined);
    }
    this.announceSoon(committed !== undefined);
    return outcomes as IngestOutcome[];
  }

  /**
   * NOTIFYs the commits made since the last announcement, one statement at a time. A NOTIFY that
   * fails is not retried: the streams of other processes then find the messages at their next
   * wake-up (a later NOTIFY, their periodic check, or the re-LISTEN after a lost connection).
   */
  private async announce(): Promise<void> {
    try {
      while (this.unannounced.size > 0) {
        const entries = [...this.unannounced].map(([endpointId, lastId]) => inboundCommitEntry(endpointId, lastId));
        this.unannounced.clear();
        await notifyAfterCommit(this.db, INBOUND_MESSAGES_CHANNEL, entries).catch(() => undefined);
      }
    } finally {
      this.announcing = false;
    }
  }

  /**
   * Renders, for `onCommitted`, the messages this process's streams want, with their proposed ids,
   * once the statement that stores them has gone out: two turns of the event loop later, since
   * postgres.js sends a short statement from a `setImmediate` of its own. Skipped when the commit
   * came back first (then `onCommitted`'s side renders what it needs).
   */
  private renderWhileStoring(batchItems: IngestBatchItem[], items: IngestItem[]): { settled: boolean; byOrd: Map<number, { id: string; text: string }> } {
    const rendering = { settled: false, byOrd: new Map<number, { id: string; text: string }>() };
    const { renderCommitted, wantsCommitted } = this.options;
    if (renderCommitted === undefined || wantsCommitted === undefined || !batchItems.some((b) => wantsCommitted(b.endpoint_id))) return rendering;
    setImmediate(() =>
      setImmediate(() => {
        for (const b of batchItems) {
          if (rendering.settled) return;
          if (!wantsCommitted(b.endpoint_id)) continue;
          try {
            const text = renderCommitted({ id: b.id, item: items[b.ord]! });
            if (text !== undefined) rendering.byOrd.set(b.ord, { id: b.id, text });
          } catch {
            // Rendered again after the commit, where a failure is handled.
          }
        }
      }),
    );
    return rendering;
  }

  /** Ids in arrival order per endpoint, each above every id this process proposed for it before. */
  private proposeIds(batchItems: IngestBatchItem[]): void {
    for (const b of batchItems) {
      b.id = nextOrderedId(this.lastProposed.get(b.endpoint_id) ?? null);
      this.lastProposed.set(b.endpoint_id, b.id);
    }
    // A cache, not the source of truth: the database moves stale proposals above its last id.
    if (this.lastProposed.size > MAX_REMEMBERED_ENDPOINTS) this.lastProposed.clear();
  }

  private raiseLastProposed(endpointId: string, id: string): void {
    const proposed = this.lastProposed.get(endpointId);
    if (proposed !== undefined && proposed < id) this.lastProposed.set(endpointId, id);
  }
}
