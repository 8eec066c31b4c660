import type { Database, Sql } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { lockIdempotencyKeys, type EnqueueLease } from '../db/messages.js';
import type { FailureAction } from '../lib/group-commit.js';
import type { PayloadStore } from '../storage/payload-store.js';
import type { LocalDeliveryWorker } from './local-worker.js';

/** How long an idempotency key returns its first message or event: the same window as inbound ingestion's. */
export const MESSAGE_IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A submission's idempotency key as its lock and its batch know it: per project. */
export const idempotencyKeyOf = (s: { projectId: string; idempotencyKey: string | null }) => `${s.projectId}\n${s.idempotencyKey}`;

/** The payload store refused the batch's objects: each submission on its own would wait for it again. */
export class PayloadStoreFailure extends Error {
  constructor(override readonly cause: unknown) {
    super('payload store write failed', { cause });
  }
}

/**
 * What a refused batch of outbound submissions (messages or events) does: a payload store that
 * refused its objects, or a database outage, fails it whole; anything else the database refused
 * is tried again one submission at a time, so that it fails only its own.
 */
export function enqueueFailureAction(error: unknown, batch: readonly unknown[]): FailureAction {
  if (error instanceof PayloadStoreFailure) return { action: 'fail', error: error.cause };
  if (batch.length > 1 && !isDatabaseUnavailable(error)) return { action: 'split' };
  return { action: 'fail', error };
}

/** One batch of outbound submissions as the writer takes it. */
export interface OutboundBatch {
  /** Each submission's payload, for a store other than the database. */
  payloads: { key: string; data: Buffer }[];
  submissions: readonly { projectId: string; idempotencyKey: string | null }[];
  /** The slots reserved on this process's worker for the batch's statement. */
  lease: EnqueueLease | undefined;
}

/**
 * The writing that the group commits of POST /v1/messages (MessageBatcher) and POST /v1/events
 * (EventFanout) share around their statements: payloads held by another store go first, so that a
 * committed row always has its payload; the statement runs in autocommit, or with idempotency keys
 * in a transaction after the keys' locks; a failed batch gives its reserved slots back to the
 * worker and removes the payloads written ahead for it, unless the database did not answer (the
 * batch may have committed).
 */
export class OutboundWriter {
  constructor(
    private readonly db: Database,
    private readonly payloadStore: PayloadStore,
    readonly localWorker: LocalDeliveryWorker | undefined,
  ) {}

  /** The database store writes payloads in the batch's statement; another store is written to first. */
  get inlinePayloads(): boolean {
    return this.payloadStore.kind === 'database';
  }

  async write<R>(batch: OutboundBatch, statement: (sql: Sql) => Promise<R>): Promise<R> {
    const keys = [
      ...new Map(batch.submissions.filter((s) => s.idempotencyKey !== null).map((s) => [idempotencyKeyOf(s), { projectId: s.projectId, key: s.idempotencyKey! }])).values(),
    ];
    try {
      if (!this.inlinePayloads) {
        await this.payloadStore.putMany(this.db.sql, batch.payloads).catch((error: unknown) => {
          throw new PayloadStoreFailure(error);
        });
      }
      if (keys.length === 0) return await statement(this.db.sql);
      return await this.db.sql.begin(async (tx) => {
        // Sent together; the statement's snapshot is taken once the locks are held, so it sees
        // every row a concurrent holder of a key committed.
        const [, written] = await Promise.all([lockIdempotencyKeys(tx, keys), statement(tx)]);
        return written;
      });
    } catch (error) {
      if (batch.lease) this.localWorker!.returnHandoff(batch.lease);
      if (!this.inlinePayloads && !isDatabaseUnavailable(error)) this.discardPayloads(batch.payloads.map((p) => p.key));
      throw error;
    }
  }

  /** Payloads written ahead for submissions that stored nothing; the sweeper never sees them otherwise. */
  discardPayloads(keys: string[]): void {
    if (keys.length === 0) return;
    this.payloadStore.deleteMany(this.db.sql, keys).catch(() => {
      // An orphaned object costs storage only: no row refers to it.
    });
  }
}
