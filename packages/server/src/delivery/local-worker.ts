import type { EnqueueLease } from '../db/messages.js';

/**
 * The delivery worker of this process, as the message enqueue sees it (the composition root hands
 * it over). A process with the worker role leases new messages to its own worker in the enqueue's
 * statement and hands them over in memory, so the first attempt needs neither a NOTIFY nor a claim
 * transaction; and it wakes its worker directly for the jobs it did not lease. A worker that is not
 * running reserves no slot.
 */
export interface LocalDeliveryWorker {
  readonly workerId: string;
  /** Slots for messages leased at enqueue, held until handed over or returned; undefined when none are free. */
  reserveHandoff(max: number): EnqueueLease | undefined;
  /** The enqueue committed: these messages are leased to this worker under `lease`; its other slots come back. */
  acceptHandoff(lease: EnqueueLease, deliveries: HandedOverDelivery[]): void;
  /** The enqueue failed: the slots come back (a job it may still have committed is reaped when its lease ends). */
  returnHandoff(lease: EnqueueLease): void;
  /** Jobs were queued for a claim (paused or rate-limited endpoints, no free slot). */
  wake(): void;
}

/** An outbound message leased at enqueue, with what its first attempt needs. */
export interface HandedOverDelivery {
  messageId: string;
  url: string;
  headers: Record<string, string>;
  contentType: string;
  eventType: string | null;
  /** Active signing secrets, sealed, newest first. */
  secrets: string[];
  body: Buffer;
}
