import { newUuidv7 } from '@hookrelay/shared';
import {
  claimBulkJob,
  lockLeasedJob,
  nextInboundChunk,
  nextOutboundChunk,
  saveChunkProgress,
  type BulkJobRow,
  type ChunkMessage,
} from '../db/bulk-jobs.js';
import { INBOUND_REPLAY_CHANNEL, replayNotices } from '../db/channels.js';
import type { Sql } from '../db/database.js';
import { findInboundEndpointMode } from '../db/inbound-endpoints.js';
import { notifyOnCommit } from '../db/notify.js';
import { replayInboundMessages, retryOutboundMessages } from '../delivery/redeliver.js';

/**
 * A bulk job's work, as its worker does it (docs/architecture.md, Transactions): a claim that
 * leases the job, then one transaction per chunk that checks the lease under the job's row lock,
 * reads the next messages after the job's position, retries (or replays) them as the single-message
 * routes do, and saves the new position and counts with them. A worker that dies between the two,
 * or during a chunk, leaves the job to another once the lease runs out; what a chunk did is either
 * committed with its position or not at all, so no message is taken twice by one job. Each step
 * below is one part of that, a free function of what it needs.
 */

/** What a chunk needs of its worker. */
export interface ChunkContext {
  sql: Sql;
  workerId: string;
  leaseSeconds: number;
  chunkSize: number;
}

/** A job leased to this worker by `claimJob`. */
export interface ClaimedJob {
  id: string;
  leaseId: string;
}

/** `more`: the job has messages after this chunk; `finished`: it is done; `lost`: another took it, or it was cancelled. */
export type ChunkOutcome = 'more' | 'finished' | 'lost';

/** Leases the running job that waited longest since its last chunk; undefined when none waits. */
export async function claimJob(ctx: Pick<ChunkContext, 'sql' | 'workerId' | 'leaseSeconds'>): Promise<ClaimedJob | undefined> {
  const leaseId = newUuidv7();
  const row = await claimBulkJob(ctx.sql, { workerId: ctx.workerId, leaseId, leaseSeconds: ctx.leaseSeconds });
  return row === undefined ? undefined : { id: row.id, leaseId };
}

/** One chunk of a claimed job, in one transaction; its lease ends with it. */
export async function runChunk(ctx: Pick<ChunkContext, 'sql' | 'chunkSize'>, claimed: ClaimedJob): Promise<ChunkOutcome> {
  return ctx.sql.begin(async (tx) => {
    const job = await lockLeasedJob(tx, claimed.id, claimed.leaseId);
    if (job === undefined) return 'lost';
    const chunk = job.kind === 'outbound' ? await nextOutboundChunk(tx, job, ctx.chunkSize) : await nextInboundChunk(tx, job, ctx.chunkSize);
    const { deleted, gone, retriable } = triage(chunk);
    const done = job.kind === 'outbound' ? await retryOutbound(tx, job, retriable) : await replayInbound(tx, job, retriable);
    const finished = chunk.length < ctx.chunkSize;
    await saveChunkProgress(tx, job.id, claimed.leaseId, {
      afterId: chunk.at(-1)?.id ?? null,
      done,
      // Deleted between the read and the retry: the retry passed them by.
      skipped: deleted.length + (retriable.length - done),
      failed: gone.length,
      lastError: gone.length === 0 ? null : goneError(job, gone.at(-1)!),
      finished,
    });
    return finished ? 'finished' : 'more';
  });
}

/** Where each message of a chunk goes: deleted ones are skipped, those of an endpoint that is gone fail, the rest are retried. */
export function triage(chunk: readonly ChunkMessage[]) {
  const deleted = chunk.filter((m) => m.deleted);
  const gone = chunk.filter((m) => !m.deleted && !m.endpoint_live);
  const retriable = chunk.filter((m) => !m.deleted && m.endpoint_live);
  return { deleted, gone, retriable };
}

/** Why a message of a deleted endpoint was not retried. */
export function goneError(job: Pick<BulkJobRow, 'kind'>, message: ChunkMessage): string {
  const endpoint = job.kind === 'outbound' ? `endpoint ${message.endpoint_id}` : `inbound endpoint ${message.endpoint_id}`;
  return `${endpoint} was deleted: its messages cannot be delivered again`;
}

/** Retries the chunk's outbound messages as POST /v1/messages/{id}/retry does; returns how many were retried. */
export async function retryOutbound(tx: Sql, job: BulkJobRow, messages: readonly ChunkMessage[]): Promise<number> {
  if (messages.length === 0) return 0;
  return (await retryOutboundMessages(tx, job.project_id, messages.map((m) => m.id))).size;
}

/**
 * Replays the chunk's inbound messages as POST /v1/inbound-messages/{id}/replay does: a forward-mode
 * endpoint delivers each again; a cli-mode one's connected listeners get them, in id order, by the
 * NOTIFYs this transaction sends at its commit. Returns how many were replayed.
 */
export async function replayInbound(tx: Sql, job: BulkJobRow, messages: readonly ChunkMessage[]): Promise<number> {
  if (messages.length === 0) return 0;
  const replayed = new Set((await replayInboundMessages(tx, job.project_id, messages.map((m) => m.id))).map((row) => row.id));
  if (replayed.size > 0 && (await findInboundEndpointMode(tx, job.inbound_endpoint_id!)) === 'cli') {
    const inOrder = messages.filter((m) => replayed.has(m.id)).map((m) => m.id);
    for (const notice of replayNotices(job.inbound_endpoint_id!, inOrder)) await notifyOnCommit(tx, INBOUND_REPLAY_CHANNEL, notice);
  }
  return replayed.size;
}
