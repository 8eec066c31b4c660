import { newUuidv7 } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import type { DeliveryStatus } from '../db/deliveries.js';
import { enqueueOutboundMessages, type OutboundSubmission } from '../db/messages.js';
import { GroupCommit } from '../lib/group-commit.js';
import type { PayloadStore } from '../storage/payload-store.js';
import type { HandedOverDelivery, LocalDeliveryWorker } from './local-worker.js';
import { enqueueFailureAction, idempotencyKeyOf as keyOf, MESSAGE_IDEMPOTENCY_WINDOW_MS, OutboundWriter } from './outbound-commit.js';

/** A validated POST /v1/messages (`requestSha256`: what makes two submissions "the same request" for an idempotency key). */
export type MessageSubmission = Pick<
  OutboundSubmission,
  'projectId' | 'endpointId' | 'eventType' | 'idempotencyKey' | 'requestSha256' | 'payloadFormat' | 'contentType' | 'payloadSha256'
> & { payload: Buffer };

export interface AcceptedMessage {
  id: string;
  status: DeliveryStatus;
  created_at: Date;
}

export type SubmissionOutcome =
  | { kind: 'stored'; message: AcceptedMessage }
  /** An idempotency key's repeat: the message that holds the key. */
  | { kind: 'repeat'; message: AcceptedMessage }
  /** The key is held by this message, made for a different request. */
  | { kind: 'conflict'; messageId: string }
  | { kind: 'endpoint_not_found' };

export interface MessageBatcherOptions {
  /** Most submissions stored by one statement. */
  maxBatch?: number;
  /** Most payload bytes in one statement (a batch always takes at least one submission). */
  maxBatchBytes?: number;
  /** The delivery worker of this process, which takes new messages at enqueue while it runs. */
  localWorker?: LocalDeliveryWorker | undefined;
}

interface Queued {
  submission: OutboundSubmission;
  payload: Buffer;
}

/**
 * Stores POST /v1/messages submissions in group commits (an idle server starts a batch in the turn
 * after the first arrival). A batch is one statement — payloads (database store), messages, jobs and
 * one NOTIFY — in autocommit; with idempotency keys, the statement runs in a transaction after taking
 * the keys' locks. Each request gets the answer it would have had alone, in arrival order: a repeat of
 * a key (from before or from earlier in the batch) returns its first message or conflicts, and an
 * unknown endpoint is 404. A batch the database refuses is retried one submission at a time, so that
 * one bad submission fails only its own request; a database outage, or a payload store that refuses
 * the batch's objects, fails the whole batch at once, storing nothing.
 */
export class MessageBatcher {
  private readonly commits: GroupCommit<Queued, SubmissionOutcome>;
  private readonly writer: OutboundWriter;

  constructor(db: Database, payloadStore: PayloadStore, options: MessageBatcherOptions = {}) {
    this.writer = new OutboundWriter(db, payloadStore, options.localWorker);
    this.commits = new GroupCommit<Queued, SubmissionOutcome>({
      commit: (batch) => this.store(batch),
      maxBatch: options.maxBatch ?? 500,
      sizeOf: (queued) => queued.payload.length,
      maxBatchSize: options.maxBatchBytes ?? 16 * 1024 * 1024,
      onFailure: enqueueFailureAction,
    });
  }

  submit(submission: MessageSubmission): Promise<SubmissionOutcome> {
    const id = newUuidv7();
    const inline = this.writer.inlinePayloads;
    return this.commits.enqueue({
      submission: {
        id,
        projectId: submission.projectId,
        endpointId: submission.endpointId,
        eventType: submission.eventType,
        idempotencyKey: submission.idempotencyKey,
        requestSha256: submission.requestSha256,
        payloadFormat: submission.payloadFormat,
        contentType: submission.contentType,
        sizeBytes: submission.payload.length,
        payloadSha256: submission.payloadSha256,
        payloadKey: `outbound/${id}`,
        createdAt: new Date(),
        inlinePayload: inline ? submission.payload : undefined,
      },
      payload: submission.payload,
    });
  }

  /** Resolves once everything queued so far is answered (graceful shutdown). */
  idle(): Promise<void> {
    return this.commits.idle();
  }

  private async store(batch: Queued[]): Promise<SubmissionOutcome[]> {
    const items = batch.map((p) => p.submission);
    const worker = this.writer.localWorker;
    const lease = worker?.reserveHandoff(items.length);
    const options = { since: new Date(Date.now() - MESSAGE_IDEMPOTENCY_WINDOW_MS), lease, origin: worker?.workerId ?? '' };
    const payloads = batch.map((p) => ({ key: p.submission.payloadKey, data: p.payload }));
    const result = await this.writer.write({ payloads, submissions: items, lease }, (sql) => enqueueOutboundMessages(sql, items, options));

    const stored = new Map(result.stored.map((row) => [row.position, row]));
    const holders = new Map(result.holders.map((h) => [`${h.project_id}\n${h.idempotency_key}`, h]));
    const firstWithKey = new Map<string, number>();
    for (const row of result.stored) {
      const s = items[row.position]!;
      if (s.idempotencyKey !== null) firstWithKey.set(keyOf(s), row.position);
    }
    const accepted = (m: AcceptedMessage): AcceptedMessage => ({ id: m.id, status: m.status, created_at: m.created_at });
    const outcomes = items.map((s, i): SubmissionOutcome => {
      const row = stored.get(i);
      if (row) return { kind: 'stored', message: accepted(row) };
      if (s.idempotencyKey !== null) {
        const holder = holders.get(keyOf(s));
        if (holder) return holder.request_sha256 === s.requestSha256 ? { kind: 'repeat', message: accepted(holder) } : { kind: 'conflict', messageId: holder.id };
        // The first submission of the key in this batch came earlier: as if it had committed first.
        const first = firstWithKey.get(keyOf(s));
        if (first !== undefined && first < i) {
          return items[first]!.requestSha256 === s.requestSha256
            ? { kind: 'repeat', message: accepted(stored.get(first)!) }
            : { kind: 'conflict', messageId: items[first]!.id };
        }
      }
      return { kind: 'endpoint_not_found' };
    });

    if (lease) {
      const deliveries: HandedOverDelivery[] = result.stored
        .filter((row) => row.leased)
        .map((row) => {
          const s = items[row.position]!;
          return {
            messageId: row.id,
            url: row.url!,
            headers: row.headers ?? {},
            contentType: s.contentType,
            eventType: s.eventType,
            secrets: row.secrets ?? [],
            body: batch[row.position]!.payload,
          };
        });
      worker!.acceptHandoff(lease, deliveries);
    }
    if (worker && result.stored.some((row) => !row.leased)) worker.wake();
    if (!this.writer.inlinePayloads) this.writer.discardPayloads(items.filter((_, i) => !stored.has(i)).map((s) => s.payloadKey));
    return outcomes;
  }
}
