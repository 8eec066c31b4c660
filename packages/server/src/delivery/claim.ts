import type { FastifyBaseLogger } from 'fastify';
import { newUuidv7 } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import {
  ENDPOINT_DELETED_ERROR,
  INBOUND_ENDPOINT_DELETED_ERROR,
  claimDueJobs,
  deleteJobs,
  failWithoutAttempt,
  loadInboundContexts,
  loadOutboundContexts,
  lockPausedEndpoints,
  lockRateLimit,
  markDelivering,
  parkJobs,
  releaseJobs,
  returnInboundToCli,
  saveRateLimitTat,
  type ClaimedJob,
  type DeliveryKind,
  type InboundDeliveryContext,
  type OutboundDeliveryContext,
} from '../db/deliveries.js';
import { isBlobKey } from '../storage/blob-store.js';
import { PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';
import { reserveSlots } from './rate-limit.js';

/**
 * The delivery claim (docs/architecture.md, Transactions): one transaction that leases due jobs,
 * settles those that cannot be sent (message deleted, endpoint gone or paused, inbound endpoint no
 * longer forwarding, payload gone), takes rate-limit slots under each endpoint's row lock and marks
 * the rest `delivering`. Only once it commits are requests sent (worker.ts). Each step below is one
 * part of that transaction, a free function of what it needs.
 */

export type DeliveryContext = OutboundDeliveryContext | InboundDeliveryContext;

export const isOutbound = (c: DeliveryContext): c is OutboundDeliveryContext => 'rate_limit_rps' in c;

/** A forward-mode body in the blob store: read at each attempt, not in the claim. */
export interface BlobPayload {
  key: string;
  size: number;
}

/** A delivery's payload as the claim leaves it: the bytes, or where to stream them from. */
export type Payload = Buffer | BlobPayload;

/** A job given back to the queue without an attempt, due again after `delayMs`. */
export interface Release {
  messageId: string;
  delayMs: number;
}

/** How long a delivery whose payload could not be read waits before it is tried again. */
export const PAYLOAD_UNAVAILABLE_DELAY_MS = 10_000;

/**
 * Maps database times to local times. Each observation pairs a database clock reading with the local
 * time its answer was seen; the smallest difference of recent ones is the best estimate (the others
 * include network and event-loop delay), as NTP does. Every worker then waits for the same database
 * instant, so a rate limit holds between workers and between claims.
 */
export class ClockOffset {
  private readonly samples: number[] = [];

  /** Records a reading and returns the database → local conversion. */
  observe(databaseMs: number, localMs: number): (databaseTime: number) => number {
    this.samples.push(localMs - databaseMs);
    if (this.samples.length > 32) this.samples.shift();
    const offset = Math.min(...this.samples);
    return (databaseTime) => databaseTime + offset;
  }
}

/** What a claim needs of its worker. */
export interface ClaimContext {
  sql: Sql;
  workerId: string;
  leaseSeconds: number;
  /** Rate-limited jobs whose slot comes within this wait are kept, to be waited for in process. */
  horizonMs: number;
  payloadStore: PayloadStore;
  log: FastifyBaseLogger;
  clock: ClockOffset;
}

/** A claimed delivery to send once the claim has committed. */
export interface ClaimedDelivery {
  context: DeliveryContext;
  job: ClaimedJob;
  payload: Payload;
  /** Local time (Date.now()) before which it must not be sent: its rate-limit slot; 0 = at once. */
  notBefore: number;
}

export interface Claim {
  leaseId: string;
  /** Jobs leased by the claim, sent or not. */
  claimed: number;
  deliveries: ClaimedDelivery[];
  /** Jobs given back to the queue without an attempt. */
  released: number;
}

/** One claim transaction of at most `limit` jobs and `maxBytes` payload bytes. */
export async function claimDeliveries(ctx: ClaimContext, limit: number, maxBytes: number): Promise<Claim> {
  const leaseId = newUuidv7();
  return ctx.sql.begin(async (tx) => {
    const jobs = await claimDueJobs(tx, { workerId: ctx.workerId, leaseId, limit, leaseSeconds: ctx.leaseSeconds, maxBytes });
    if (jobs.length === 0) return { leaseId, claimed: 0, deliveries: [], released: 0 };
    const { deliveries, released } = await settleClaimed(ctx, tx, leaseId, jobs);
    return { leaseId, claimed: jobs.length, deliveries, released };
  });
}

/** The claim's steps after the lease, in its transaction. */
export async function settleClaimed(
  ctx: ClaimContext,
  tx: Sql,
  leaseId: string,
  jobs: ClaimedJob[],
): Promise<{ deliveries: ClaimedDelivery[]; released: number }> {
  // The database store's payloads come with the contexts: one round trip less per claim.
  const inlinePayloads = ctx.payloadStore.kind === 'database';
  const contexts = await loadContexts(tx, jobs, inlinePayloads);
  const { drop, gone, toCli, paused, ready } = triage(jobs, contexts);
  const release = await parkPaused(tx, leaseId, paused);
  const { payloads, postponed } = await fetchPayloads(ctx, tx, ready, inlinePayloads);
  release.push(...postponed);
  // Postponed: none is sent, and none has lost its payload.
  const { deliverable, noPayload } = splitByPayload(postponed.length > 0 ? [] : ready, payloads, contexts);
  const notBefore = await reserveRateLimits(ctx, tx, deliverable, release);
  const { sending, deletedMeanwhile } = await markSending(tx, deliverable, release, contexts);
  await settleUnsent(tx, leaseId, { drop, gone, toCli, noPayload, deletedMeanwhile, release });
  const deliveries = sending.map((c) => ({ context: c, job: contexts.jobOf(c), payload: payloads.get(c.payload_key!)!, notBefore: notBefore.get(c.id) ?? 0 }));
  return { deliveries, released: release.length };
}

/** A claim's messages, as loaded with their endpoints, and the job each was claimed by. */
export interface ClaimContexts {
  /** Outbound first, then inbound. */
  all: DeliveryContext[];
  jobOf(c: DeliveryContext): ClaimedJob;
  kindOf(c: DeliveryContext): DeliveryKind;
}

export async function loadContexts(tx: Sql, jobs: ClaimedJob[], inlinePayloads: boolean): Promise<ClaimContexts> {
  const byId = new Map(jobs.map((j) => [j.message_id, j]));
  const ids = (kind: DeliveryKind) => jobs.filter((j) => j.kind === kind).map((j) => j.message_id);
  const [outbound, inbound] = await Promise.all([loadOutboundContexts(tx, ids('outbound'), inlinePayloads), loadInboundContexts(tx, ids('inbound'), inlinePayloads)]);
  const all = [...outbound, ...inbound];
  if (inlinePayloads) sharePayloads(all);
  return { all, jobOf: (c) => byId.get(c.id)!, kindOf: (c) => byId.get(c.id)!.kind };
}

/** A payload several messages share (an event's) is read once: every context of its key gets the same bytes. */
export function sharePayloads(contexts: DeliveryContext[]): void {
  const read = new Map<string, Uint8Array>();
  for (const c of contexts) if (c.payload_key !== null && c.payload) read.set(c.payload_key, c.payload);
  for (const c of contexts) if (c.payload_key !== null && !c.payload) c.payload = read.get(c.payload_key) ?? null;
}

/**
 * Where each claimed job goes before any payload is read: jobs of messages that no longer exist are
 * dropped, messages of a gone endpoint fail, inbound messages of an endpoint that no longer forwards
 * go back to the CLI, outbound messages of a paused endpoint are candidates for parking, and the rest
 * are ready to send.
 */
export function triage(jobs: ClaimedJob[], contexts: ClaimContexts) {
  const found = new Set(contexts.all.map((c) => c.id));
  const drop = jobs.filter((j) => !found.has(j.message_id)).map((j) => j.message_id);
  const gone: Record<DeliveryKind, string[]> = { outbound: [], inbound: [] };
  const toCli: string[] = [];
  const paused: OutboundDeliveryContext[] = [];
  const ready: DeliveryContext[] = [];
  for (const c of contexts.all) {
    if (c.deleted) drop.push(c.id);
    else if (!c.live) gone[contexts.kindOf(c)].push(c.id);
    else if (!isOutbound(c) && c.mode !== 'forward') toCli.push(c.id);
    else if (isOutbound(c) && c.paused) paused.push(c);
    else ready.push(c);
  }
  return { drop, gone, toCli, paused, ready };
}

/** Paused endpoints: their jobs are parked until a resume; a resume that committed first wins, and those jobs are released to run now. */
export async function parkPaused(tx: Sql, leaseId: string, paused: OutboundDeliveryContext[]): Promise<Release[]> {
  if (paused.length === 0) return [];
  const stillPaused = await lockPausedEndpoints(tx, [...new Set(paused.map((c) => c.endpoint_id))].sort());
  await parkJobs(tx, leaseId, paused.filter((c) => stillPaused.has(c.endpoint_id)).map((c) => c.id));
  return paused.filter((c) => !stillPaused.has(c.endpoint_id)).map((c) => ({ messageId: c.id, delayMs: 0 }));
}

/**
 * The payloads of the deliveries about to be sent. A payload store outage is not the receiver's
 * fault, so it costs no attempt: every delivery is postponed instead. A forward-mode body in the
 * blob store is not read here: each attempt streams it (its key and size are enough).
 */
export async function fetchPayloads(
  ctx: Pick<ClaimContext, 'payloadStore' | 'log'>,
  tx: Sql,
  ready: DeliveryContext[],
  inlinePayloads: boolean,
): Promise<{ payloads: Map<string, Payload>; postponed: Release[] }> {
  const payloads = new Map<string, Payload>();
  const fromStore: string[] = [];
  for (const c of ready) {
    if (c.payload_key === null) continue;
    // A streamed body is in the blob store, whichever store holds the others.
    if (!isOutbound(c) && isBlobKey(c.payload_key)) payloads.set(c.payload_key, { key: c.payload_key, size: c.size_bytes });
    else if (inlinePayloads && !isBlobKey(c.payload_key)) {
      if (c.payload) payloads.set(c.payload_key, Buffer.from(c.payload.buffer, c.payload.byteOffset, c.payload.byteLength));
    } else fromStore.push(c.payload_key);
  }
  if (fromStore.length === 0) return { payloads, postponed: [] };
  try {
    for (const [key, bytes] of await ctx.payloadStore.getMany(tx, fromStore)) payloads.set(key, bytes);
    return { payloads, postponed: [] };
  } catch (error) {
    if (!(error instanceof PayloadUnavailableError)) throw error;
    ctx.log.warn({ err: error }, 'delivery worker: payload store unavailable; deliveries postponed');
    return { payloads: new Map(), postponed: ready.map((c) => ({ messageId: c.id, delayMs: PAYLOAD_UNAVAILABLE_DELAY_MS })) };
  }
}

/** The ready deliveries whose payload is at hand (or streams), and the messages whose payload is no longer stored. */
export function splitByPayload(ready: DeliveryContext[], payloads: Map<string, Payload>, contexts: Pick<ClaimContexts, 'kindOf'>) {
  const noPayload: Record<DeliveryKind, string[]> = { outbound: [], inbound: [] };
  const deliverable: DeliveryContext[] = [];
  for (const c of ready) {
    if (c.payload_key !== null && payloads.has(c.payload_key)) deliverable.push(c);
    else noPayload[contexts.kindOf(c)].push(c.id);
  }
  return { deliverable, noPayload };
}

/**
 * Takes rate-limit slots for the deliveries of rate-limited endpoints (each endpoint's row locked,
 * in id order): slots within the horizon are kept, to be waited for in process (returned as local
 * times); later ones, and endpoints paused or deleted meanwhile, go back to the queue (`release`).
 */
export async function reserveRateLimits(
  ctx: Pick<ClaimContext, 'clock' | 'horizonMs'>,
  tx: Sql,
  deliverable: DeliveryContext[],
  release: Release[],
): Promise<Map<string, number>> {
  const notBefore = new Map<string, number>();
  const limited = new Map<string, OutboundDeliveryContext[]>();
  for (const c of deliverable) {
    if (isOutbound(c) && c.rate_limit_rps > 0) limited.set(c.endpoint_id, [...(limited.get(c.endpoint_id) ?? []), c]);
  }
  for (const endpointId of [...limited.keys()].sort()) {
    const group = limited.get(endpointId)!;
    const row = await lockRateLimit(tx, endpointId);
    const localAtRead = Date.now();
    if (!row || !row.deliverable) {
      // Paused or deleted while this claim waited for the lock: the next claim settles them.
      for (const c of group) release.push({ messageId: c.id, delayMs: 0 });
      continue;
    }
    if (row.rate_limit_rps <= 0) continue;
    const nowMs = row.now.getTime();
    // Slots are database times, waited for as absolute times on the local clock.
    const toLocal = ctx.clock.observe(nowMs, localAtRead);
    const reservation = reserveSlots(
      { rps: row.rate_limit_rps, burst: row.burst, tatMs: row.rate_limit_tat?.getTime() ?? null, nowMs },
      group.length,
      ctx.horizonMs,
    );
    await saveRateLimitTat(tx, endpointId, new Date(reservation.tatMs));
    group.forEach((c, i) => {
      const offset = reservation.offsets[i];
      if (offset !== undefined) notBefore.set(c.id, toLocal(nowMs + offset));
      else release.push({ messageId: c.id, delayMs: reservation.laterOffsets[i - reservation.offsets.length]! });
    });
  }
  return notBefore;
}

/**
 * Marks `delivering` the deliverable messages not released back to the queue; those deleted
 * meanwhile are not marked, and are not sent.
 */
export async function markSending(tx: Sql, deliverable: DeliveryContext[], release: Release[], contexts: Pick<ClaimContexts, 'kindOf'>) {
  const released = new Set(release.map((r) => r.messageId));
  const sendNow = deliverable.filter((c) => !released.has(c.id));
  const liveOut = await markDelivering(tx, 'outbound', sendNow.filter((c) => contexts.kindOf(c) === 'outbound').map((c) => c.id));
  const liveIn = await markDelivering(tx, 'inbound', sendNow.filter((c) => contexts.kindOf(c) === 'inbound').map((c) => c.id));
  const sending = sendNow.filter((c) => liveOut.has(c.id) || liveIn.has(c.id));
  const deletedMeanwhile = sendNow.filter((c) => !liveOut.has(c.id) && !liveIn.has(c.id)).map((c) => c.id);
  return { sending, deletedMeanwhile };
}

/** The claimed jobs that send nothing now, settled in the claim's transaction. */
export interface Unsent {
  /** Messages deleted (or never found): the job goes, the message stays as it is. */
  drop: string[];
  /** Messages whose endpoint is gone: failed without an attempt. */
  gone: Record<DeliveryKind, string[]>;
  /** Inbound messages whose endpoint no longer forwards: back to the CLI. */
  toCli: string[];
  /** Messages whose payload is no longer stored: failed without an attempt. */
  noPayload: Record<DeliveryKind, string[]>;
  /** Messages deleted between the triage and `delivering`: the job goes. */
  deletedMeanwhile: string[];
  release: Release[];
}

/** The claimed jobs that send nothing now: failed without an attempt, returned to the CLI, deleted or released. */
export async function settleUnsent(tx: Sql, leaseId: string, unsent: Unsent): Promise<void> {
  const { drop, gone, noPayload, toCli, deletedMeanwhile, release } = unsent;
  await failWithoutAttempt(tx, 'outbound', gone.outbound, ENDPOINT_DELETED_ERROR);
  await failWithoutAttempt(tx, 'inbound', gone.inbound, INBOUND_ENDPOINT_DELETED_ERROR);
  for (const kind of ['outbound', 'inbound'] as const) await failWithoutAttempt(tx, kind, noPayload[kind], 'payload is no longer stored');
  await returnInboundToCli(tx, toCli);
  await deleteJobs(tx, leaseId, [...drop, ...gone.outbound, ...gone.inbound, ...noPayload.outbound, ...noPayload.inbound, ...toCli, ...deletedMeanwhile]);
  await releaseJobs(tx, leaseId, release);
}
