import { newUuidv7 } from '@hookrelay/shared';
import type { Database, Sql } from '../db/database.js';
import { fanOutEvents, type EventRow, type FannedOutMessage, type NewEvent } from '../db/events.js';
import type { EnqueueLease } from '../db/messages.js';
import { GroupCommit } from '../lib/group-commit.js';
import { sha256Hex } from '../security/crypto.js';
import type { PayloadStore } from '../storage/payload-store.js';
import type { HandedOverDelivery, LocalDeliveryWorker } from './local-worker.js';
import { enqueueFailureAction, idempotencyKeyOf as keyOf, MESSAGE_IDEMPOTENCY_WINDOW_MS, OutboundWriter } from './outbound-commit.js';

/** A validated POST /v1/events (`requestSha256`: what makes two submissions "the same request" for an idempotency key). */
export type EventSubmission = Pick<
  NewEvent,
  'projectId' | 'eventType' | 'ownerId' | 'channels' | 'idempotencyKey' | 'requestSha256' | 'payloadFormat' | 'contentType' | 'payloadSha256'
> & { payload: Buffer };

/** An event as stored, with the messages it became. */
export interface FannedOutEvent {
  event: Pick<EventRow, 'id' | 'event_type' | 'owner_id' | 'channels' | 'created_at'>;
  messages: { id: string; endpoint_id: string }[];
}

export type FanOutOutcome =
  | { kind: 'stored'; fannedOut: FannedOutEvent }
  /** An idempotency key's repeat: the event that holds the key, as it was fanned out. */
  | { kind: 'repeat'; fannedOut: FannedOutEvent }
  /** The key is held by this event, made for a different request. */
  | { kind: 'conflict'; eventId: string };

export interface EventFanoutOptions {
  /** Most events fanned out by one statement (each may become many messages). */
  maxBatch?: number;
  /** Most payload bytes in one statement (a batch always takes at least one event). */
  maxBatchBytes?: number;
  /** The delivery worker of this process, which takes new messages at enqueue while it runs. */
  localWorker?: LocalDeliveryWorker | undefined;
}

interface Queued {
  event: NewEvent;
  payload: Buffer;
}

/**
 * What makes two submissions of an idempotency key "the same request": type, owner, channels as a
 * set, content type, payload format and bytes.
 */
export function eventRequestSha256(event: { eventType: string; ownerId: string | null; channels: readonly string[]; contentType: string; payloadFormat: 'json' | 'text'; payloadSha256: string }): string {
  return sha256Hex(JSON.stringify([event.eventType, event.ownerId, [...event.channels].sort(), event.contentType, event.payloadFormat, event.payloadSha256]));
}

/** The payload key of an event: one payload, which every message of its fan-out delivers. */
export const eventPayloadKey = (eventId: string) => `event/${eventId}`;

/**
 * Stores POST /v1/events submissions and fans each out into outbound messages, in group commits
 * as the message batcher does (an idle server starts a batch in the turn after the first arrival):
 * a batch is one statement (db/events.ts, fanOutEvents) — events, payloads (database store),
 * messages, jobs and one NOTIFY — in autocommit, each event with all its messages or none; with
 * idempotency keys, the statement runs in a transaction after taking the keys' locks, so that
 * concurrent submissions of a key make one event. Each request gets the answer it would have had
 * alone, in arrival order: a repeat of a key (from before or from earlier in the batch) answers the
 * first event with its messages, or conflicts. A batch the database refuses is fanned out again
 * one event at a time, so that one bad event fails only its own request; a database outage, or a
 * payload store that refuses the batch's objects, fails the whole batch at once, storing nothing.
 * The messages enter the path of every outbound message: due jobs and a NOTIFY for the workers,
 * and in a process with the worker role, messages leased straight to its worker (up to its free
 * slots) and handed over after the commit, once the batch's requests are answered.
 */
export class EventFanout {
  private readonly commits: GroupCommit<Queued, FanOutOutcome>;
  private readonly writer: OutboundWriter;

  constructor(
    db: Database,
    private readonly payloadStore: PayloadStore,
    options: EventFanoutOptions = {},
  ) {
    this.writer = new OutboundWriter(db, payloadStore, options.localWorker);
    this.commits = new GroupCommit<Queued, FanOutOutcome>({
      commit: (batch) => this.store(batch),
      maxBatch: options.maxBatch ?? 100,
      sizeOf: (queued) => queued.payload.length,
      maxBatchSize: options.maxBatchBytes ?? 16 * 1024 * 1024,
      onFailure: enqueueFailureAction,
    });
  }

  submit(submission: EventSubmission): Promise<FanOutOutcome> {
    return this.commits.enqueue({ event: this.newEvent(submission), payload: submission.payload });
  }

  /** Resolves once everything queued so far is answered (graceful shutdown). */
  idle(): Promise<void> {
    return this.commits.idle();
  }

  /**
   * Stores events and their fan-outs in the caller's transaction, in one statement, with nothing
   * leased (hookrelay's own events, docs/api.md, Built-in event types): they commit or roll back
   * with what the caller records. Payloads another store holds are written to it first; should the
   * transaction roll back, those objects are ones no event names, which costs storage only.
   */
  async fanOutWithin(tx: Sql, submissions: readonly EventSubmission[]): Promise<void> {
    if (submissions.length === 0) return;
    const events = submissions.map((s) => this.newEvent(s));
    if (!this.writer.inlinePayloads) await this.payloadStore.putMany(tx, events.map((e, i) => ({ key: e.payloadKey, data: submissions[i]!.payload })));
    await fanOutEvents(tx, events, { since: idempotencySince(), lease: undefined, origin: '' });
  }

  private newEvent(submission: EventSubmission): NewEvent {
    const { payload, ...fields } = submission;
    const id = newUuidv7();
    return {
      ...fields,
      id,
      sizeBytes: payload.length,
      payloadKey: eventPayloadKey(id),
      createdAt: new Date(),
      inlinePayload: this.writer.inlinePayloads ? payload : undefined,
    };
  }

  private async store(batch: Queued[]): Promise<FanOutOutcome[]> {
    const events = batch.map((q) => q.event);
    const worker = this.writer.localWorker;
    // As many as the worker has free slots: the number of endpoints is known only to the statement.
    const lease = worker?.reserveHandoff(Number.MAX_SAFE_INTEGER);
    const options = { since: idempotencySince(), lease, origin: worker?.workerId ?? '' };
    const payloads = batch.map((q) => ({ key: q.event.payloadKey, data: q.payload }));
    const result = await this.writer.write({ payloads, submissions: events, lease }, (sql) => fanOutEvents(sql, events, options));

    const messagesOf = new Map<number, FannedOutMessage[]>();
    for (const m of result.messages) {
      const list = messagesOf.get(m.position);
      if (list) list.push(m);
      else messagesOf.set(m.position, [m]);
    }
    const fannedOut = (i: number): FannedOutEvent => {
      const e = events[i]!;
      return {
        event: { id: e.id, event_type: e.eventType, owner_id: e.ownerId, channels: e.channels, created_at: e.createdAt },
        messages: (messagesOf.get(i) ?? []).map((m) => ({ id: m.id, endpoint_id: m.endpoint_id })),
      };
    };
    const holders = new Map(result.holders.map((h) => [`${h.project_id}\n${h.idempotency_key}`, h]));
    const firstWithKey = new Map<string, number>();
    events.forEach((e, i) => {
      if (e.idempotencyKey !== null && result.stored.has(e.id)) firstWithKey.set(keyOf(e), i);
    });
    const stored = new Map<number, FannedOutEvent>();
    const outcomes = events.map((e, i): FanOutOutcome => {
      if (result.stored.has(e.id)) {
        const made = fannedOut(i);
        stored.set(i, made);
        return { kind: 'stored', fannedOut: made };
      }
      const holder = holders.get(keyOf(e));
      if (holder) {
        if (holder.request_sha256 !== e.requestSha256) return { kind: 'conflict', eventId: holder.id };
        const { id, event_type, owner_id, channels, created_at } = holder;
        return { kind: 'repeat', fannedOut: { event: { id, event_type, owner_id, channels, created_at }, messages: holder.messages } };
      }
      // Neither stored nor held before: the first event of the key came earlier in this batch, as
      // if it had committed first.
      const first = firstWithKey.get(keyOf(e))!;
      return events[first]!.requestSha256 === e.requestSha256 ? { kind: 'repeat', fannedOut: stored.get(first)! } : { kind: 'conflict', eventId: events[first]!.id };
    });

    // A turn later, once the batch's requests are answered: the sends the worker starts at once (up
    // to its free slots, a hundred for one event to many endpoints) do not hold up the 202s.
    if (worker) setImmediate(() => this.handOver(worker, batch, result.messages, lease));
    if (!this.writer.inlinePayloads) this.writer.discardPayloads(events.filter((e) => !result.stored.has(e.id)).map((e) => e.payloadKey));
    return outcomes;
  }

  /** After the answers: the leased messages go to this process's worker, which is woken for the others. */
  private handOver(worker: LocalDeliveryWorker, batch: readonly Queued[], messages: readonly FannedOutMessage[], lease: EnqueueLease | undefined): void {
    if (lease) {
      const deliveries: HandedOverDelivery[] = messages
        .filter((m) => m.leased)
        .map((m) => {
          const { event, payload } = batch[m.position]!;
          return { messageId: m.id, url: m.url!, headers: m.headers ?? {}, contentType: event.contentType, eventType: event.eventType, secrets: m.secrets ?? [], body: payload };
        });
      worker.acceptHandoff(lease, deliveries);
    }
    if (messages.some((m) => !m.leased)) worker.wake();
  }
}

const idempotencySince = () => new Date(Date.now() - MESSAGE_IDEMPOTENCY_WINDOW_MS);
