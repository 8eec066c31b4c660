import { newUuidv7 } from '@hookrelay/shared';
import type { Database, Sql } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { fanOutEvent, findEventByIdempotencyKey, listEventMessages, type EventRow, type FannedOutMessage, type NewEvent } from '../db/events.js';
import { lockIdempotencyKeys, type EnqueueLease } from '../db/messages.js';
import { sha256Hex } from '../security/crypto.js';
import type { PayloadStore } from '../storage/payload-store.js';
import type { HandedOverDelivery, LocalDeliveryWorker } from './local-worker.js';
import { MESSAGE_IDEMPOTENCY_WINDOW_MS } from './message-batcher.js';

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
 * Stores events and fans each out into outbound messages (db/events.ts, fanOutEvent): one statement
 * per event, all its messages or none, in autocommit; with an idempotency key, in a transaction that
 * first takes the key's lock (as POST /v1/messages does) and answers a repeat with the first event,
 * making no second fan-out. The messages enter the path of every outbound message: due jobs and a
 * NOTIFY for the workers, and in a process with the worker role, messages leased straight to its
 * worker (up to its free slots) and handed over after the commit.
 */
export class EventFanout {
  private readonly localWorker: LocalDeliveryWorker | undefined;

  constructor(
    private readonly db: Database,
    private readonly payloadStore: PayloadStore,
    options: { localWorker?: LocalDeliveryWorker | undefined } = {},
  ) {
    this.localWorker = options.localWorker;
  }

  async submit(submission: EventSubmission): Promise<FanOutOutcome> {
    const event = this.newEvent(submission);
    const { id } = event;
    const inline = event.inlinePayload !== undefined;
    // Another store holds the payload before the commit, so that a committed event always has it.
    if (!inline) await this.payloadStore.putMany(this.db.sql, [{ key: event.payloadKey, data: submission.payload }]);
    let held: Exclude<FanOutOutcome, { kind: 'stored' }> | undefined;
    let stored: { messages: FannedOutMessage[]; lease: EnqueueLease | undefined } | undefined;
    try {
      if (event.idempotencyKey === null) stored = await this.store(this.db.sql, event);
      else {
        const key = event.idempotencyKey;
        await this.db.sql.begin(async (tx) => {
          await lockIdempotencyKeys(tx, [{ projectId: event.projectId, key }]);
          held = await this.heldBy(tx, event, key);
          if (held === undefined) stored = await this.store(tx, event);
        });
      }
    } catch (error) {
      if (stored?.lease) this.localWorker!.returnHandoff(stored.lease);
      // Without an answer from the database the event may have committed: its payload stays.
      if (!inline && !isDatabaseUnavailable(error)) this.discardPayload(event.payloadKey);
      throw error;
    }
    if (held !== undefined) {
      if (!inline) this.discardPayload(event.payloadKey);
      return held;
    }
    const { messages, lease } = stored!;
    this.handOver(event, messages, lease, submission.payload);
    return {
      kind: 'stored',
      fannedOut: {
        event: { id, event_type: event.eventType, owner_id: event.ownerId, channels: event.channels, created_at: event.createdAt },
        messages: messages.map((m) => ({ id: m.id, endpoint_id: m.endpoint_id })),
      },
    };
  }

  /**
   * Stores an event and its fan-out in the caller's transaction, with nothing leased (hookrelay's
   * own events, docs/api.md, Built-in event types): they commit or roll back with what the caller
   * records. A payload another store holds is written to it first; should the transaction roll
   * back, that object is one no event names, which costs storage only.
   */
  async fanOutWithin(tx: Sql, submission: EventSubmission): Promise<{ eventId: string; messages: FannedOutMessage[] }> {
    const event = this.newEvent(submission);
    if (event.inlinePayload === undefined) await this.payloadStore.putMany(tx, [{ key: event.payloadKey, data: submission.payload }]);
    return { eventId: event.id, messages: await fanOutEvent(tx, event, { lease: undefined, origin: '' }) };
  }

  private newEvent(submission: EventSubmission): NewEvent {
    const id = newUuidv7();
    return {
      ...submission,
      id,
      sizeBytes: submission.payload.length,
      payloadKey: eventPayloadKey(id),
      createdAt: new Date(),
      inlinePayload: this.payloadStore.kind === 'database' ? submission.payload : undefined,
    };
  }

  /** The event that already holds the key: a repeat of the same request, or a conflict. */
  private async heldBy(tx: Sql, event: NewEvent, key: string): Promise<Exclude<FanOutOutcome, { kind: 'stored' }> | undefined> {
    const first = await findEventByIdempotencyKey(tx, event.projectId, key, new Date(Date.now() - MESSAGE_IDEMPOTENCY_WINDOW_MS));
    if (first === undefined) return undefined;
    if (first.request_sha256 !== event.requestSha256) return { kind: 'conflict', eventId: first.id };
    const messages = await listEventMessages(tx, first.id);
    return { kind: 'repeat', fannedOut: { event: first, messages: messages.map((m) => ({ id: m.id, endpoint_id: m.endpoint_id })) } };
  }

  private async store(sql: Sql, event: NewEvent): Promise<{ messages: FannedOutMessage[]; lease: EnqueueLease | undefined }> {
    // As many as the worker has free slots: the number of endpoints is known only to the statement.
    const lease = this.localWorker?.reserveHandoff(Number.MAX_SAFE_INTEGER);
    try {
      return { messages: await fanOutEvent(sql, event, { lease, origin: this.localWorker?.workerId ?? '' }), lease };
    } catch (error) {
      if (lease) this.localWorker!.returnHandoff(lease);
      throw error;
    }
  }

  /** After the commit: the leased messages go to this process's worker, which is woken for the others. */
  private handOver(event: NewEvent, messages: FannedOutMessage[], lease: EnqueueLease | undefined, body: Buffer): void {
    const worker = this.localWorker;
    if (worker === undefined) return;
    if (lease) {
      const deliveries: HandedOverDelivery[] = messages
        .filter((m) => m.leased)
        .map((m) => ({ messageId: m.id, url: m.url!, headers: m.headers ?? {}, contentType: event.contentType, eventType: event.eventType, secrets: m.secrets ?? [], body }));
      worker.acceptHandoff(lease, deliveries);
    }
    if (messages.some((m) => !m.leased)) worker.wake();
  }

  /** A payload written ahead for an event that was not stored; the sweeper never sees it otherwise. */
  private discardPayload(key: string): void {
    this.payloadStore.deleteMany(this.db.sql, [key]).catch(() => {
      // An orphaned object costs storage only: no event refers to it.
    });
  }
}
