import type { FastifyBaseLogger } from 'fastify';
import { newUuidv7 } from '@hookrelay/shared';
import type { Database, Sql } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { ENDPOINT_PAUSE_MIN_FAILED_MESSAGES } from '../config.js';
import {
  applyOutcomes,
  deleteHeldJobs,
  insertAttempts,
  lockHeldJobs,
  rescheduleJobs,
  type AppliedOutcome,
  type DeliveryKind,
  type DeliveryStatus,
  type MessageOutcome,
} from '../db/deliveries.js';
import { recordEndpointAttempts, type FailingEndpointPause } from '../db/endpoints.js';
import type { EventFanout } from './event-fanout.js';
import { announcesFailure, endpointPausedEvent, messageFailedEvent } from './operational-events.js';
import { GroupCommit } from '../lib/group-commit.js';
import { honoursRetryAfter, nextRetryDelayMs, parseRetryAfterMs } from './schedule.js';
import type { SendResult } from './sender.js';
import type { Metrics } from '../metrics/index.js';

/** One finished attempt, as the worker hands it over. */
export interface AttemptResult {
  kind: DeliveryKind;
  messageId: string;
  leaseId: string;
  attemptNumber: number;
  /** 1 for the first attempt of this delivery (the retry schedule's position). */
  attemptInDelivery: number;
  startedAt: Date;
  finishedAt: Date;
  processingMs: number;
  /** The request went re-signed (ingest/resign.ts); false when absent. */
  resigned?: boolean;
  result: SendResult;
}

const MAX_BATCH = 500;

function isSuccess(status: number | null): boolean {
  return status !== null && status >= 200 && status < 300;
}

/** `last_error` of an attempt: null on success. */
export function attemptError(result: SendResult): string | null {
  if (result.status === null) return result.error ?? 'no response';
  if (isSuccess(result.status)) return null;
  if (result.status >= 300 && result.status < 400) {
    const location = result.headers.location;
    const target = Array.isArray(location) ? location[0] : location;
    return `HTTP ${result.status}: redirects are not followed${target ? ` (Location: ${target.slice(0, 500)})` : ''}`;
  }
  return `HTTP ${result.status}`;
}

/**
 * Decides what an attempt does to its message: succeeded on any 2xx; otherwise the next attempt of the
 * schedule (at least the receiver's Retry-After on 429/503), or failed_permanent after the last one.
 * A retry or replay asked for during the attempt (`rerun`) queues a new delivery instead.
 */
export function outcomeOf(attempt: AttemptResult, rerun: boolean, scheduleSeconds: readonly number[], random: () => number = Math.random): MessageOutcome {
  const { result } = attempt;
  const common = {
    messageId: attempt.messageId,
    attemptNumber: attempt.attemptNumber,
    startedAt: attempt.startedAt,
    finishedAt: attempt.finishedAt,
    responseStatus: result.status,
    latencyMs: result.latencyMs,
    processingMs: attempt.processingMs,
    error: attemptError(result),
  };
  if (rerun) return { ...common, status: 'queued', nextAttemptAt: null };
  if (isSuccess(result.status)) return { ...common, status: 'succeeded', nextAttemptAt: null };
  const retryAfter = result.status !== null && honoursRetryAfter(result.status) ? parseRetryAfterMs(result.headers['retry-after'], attempt.finishedAt.getTime()) : null;
  const delay = nextRetryDelayMs(scheduleSeconds, attempt.attemptInDelivery, retryAfter, random);
  if (delay === null) return { ...common, status: 'failed_permanent', nextAttemptAt: null };
  return { ...common, status: 'pending_retry', nextAttemptAt: new Date(attempt.finishedAt.getTime() + delay) };
}

/**
 * Writes attempt results in group commits (one transaction for the results that finished while the
 * previous one ran). A result counts only while its job is still leased to the lease it was claimed
 * under (otherwise the reaper already gave the job to another worker): its attempt row is kept
 * either way, as the request was made. While the database is unreachable the same results are
 * written again with a growing delay; a result that is not written is sent again once its job is
 * released or its lease runs out.
 */
export class ResultWriter {
  private readonly commits: GroupCommit<AttemptResult, void>;
  private closed = false;
  /** Set by the worker. Outcomes are counted once their transaction commits: a retried write counts once. */
  metrics: Metrics | undefined;
  private outcomesInTransaction: [DeliveryKind, DeliveryStatus][] = [];
  /** Endpoints the transaction paused, logged once it commits. */
  private pausedInTransaction: FailingEndpointPause[] = [];

  constructor(
    private readonly db: Database,
    private readonly scheduleSeconds: readonly number[],
    private readonly workerId: string,
    private readonly log: FastifyBaseLogger,
    private readonly onDue: (at: Date) => void,
    /** When a failing endpoint is paused, and the fan-out of hookrelay's own events. */
    private readonly failing: { pauseAfterSeconds: number; events: EventFanout },
  ) {
    this.commits = new GroupCommit({
      commit: (attempts) => this.commit(attempts),
      maxBatch: MAX_BATCH,
      onFailure: (error, _batch, failures) => {
        const transient = isDatabaseUnavailable(error);
        if (!transient) this.log.error({ err: error }, 'delivery worker: could not record delivery results');
        else if (failures === 1) this.log.warn({ err: { message: (error as Error).message } }, 'delivery worker: database unavailable; retrying to record delivery results');
        if (!transient || (this.closed && failures >= 5)) return { action: 'fail', error };
        return { action: 'retry', delayMs: Math.min(5000, 200 * 2 ** failures) };
      },
    });
  }

  /** Resolves once the result is committed. */
  push(attempt: AttemptResult): Promise<void> {
    return this.commits.enqueue(attempt);
  }

  /** Writes what is queued; from now on a database outage is retried a few times, not forever. */
  async close(): Promise<void> {
    this.closed = true;
    await this.commits.idle();
  }

  private async commit(attempts: AttemptResult[]): Promise<void[]> {
    const due = await this.db.sql.begin((tx) => this.write(tx, attempts));
    for (const [kind, status] of this.outcomesInTransaction) this.metrics?.countDelivery(kind, status);
    for (const endpoint of this.pausedInTransaction) {
      this.log.warn(
        { endpointId: endpoint.id, projectId: endpoint.project_id, failingSince: endpoint.failing_since.toISOString(), lastError: endpoint.last_error },
        `delivery worker: paused endpoint ${endpoint.id}: every delivery to it has failed since ${endpoint.failing_since.toISOString()}; its messages wait until it is resumed`,
      );
    }
    for (const at of due) this.onDue(at);
    return [];
  }

  /**
   * Returns the times at which rescheduled jobs become due. Statements that do not read what another
   * wrote go to the connection together (pipelined), each step's in the order written: the server
   * runs them one after the other as before, and the transaction waits for one round trip per step,
   * not per statement.
   */
  private async write(tx: Sql, attempts: AttemptResult[]): Promise<Date[]> {
    this.outcomesInTransaction = [];
    this.pausedInTransaction = [];
    const [heldRows] = await Promise.all([
      lockHeldJobs(tx, attempts.map((a) => ({ messageId: a.messageId, leaseId: a.leaseId }))),
      insertAttempts(
        tx,
        attempts.map((a) => ({
          id: newUuidv7(),
          messageId: a.messageId,
          attemptNumber: a.attemptNumber,
          startedAt: a.startedAt,
          responseStatus: a.result.status,
          latencyMs: a.result.latencyMs,
          error: attemptError(a.result),
          responseBody: a.result.body,
          workerId: this.workerId,
          resigned: a.resigned,
        })),
      ),
    ]);
    const held = new Map(heldRows.map((h) => [h.message_id, h]));
    const kinds = (['outbound', 'inbound'] as const).map((kind) => ({
      kind,
      outcomes: attempts.filter((a) => a.kind === kind && held.has(a.messageId)).map((a) => outcomeOf(a, held.get(a.messageId)!.rerun, this.scheduleSeconds)),
    }));
    const applied = await Promise.all(kinds.map(({ kind, outcomes }) => applyOutcomes(tx, kind, outcomes)));
    const reschedule: { messageId: string; runAt: Date; attemptBase: number | null }[] = [];
    const done: string[] = [];
    kinds.forEach(({ kind, outcomes }, i) => {
      for (const o of outcomes) {
        const status = applied[i]!.get(o.messageId)?.status;
        if (status) this.outcomesInTransaction.push([kind, status]);
        if (status === 'pending_retry' && o.nextAttemptAt) reschedule.push({ messageId: o.messageId, runAt: o.nextAttemptAt, attemptBase: null });
        else if (status === 'queued') reschedule.push({ messageId: o.messageId, runAt: new Date(), attemptBase: o.attemptNumber });
        else done.push(o.messageId);
      }
    });
    await Promise.all([this.trackEndpoints(tx, kinds[0]!.outcomes, applied[0]!), rescheduleJobs(tx, reschedule), deleteHeldJobs(tx, done)]);
    return reschedule.map((r) => r.runAt);
  }

  /**
   * The outbound endpoints' failure tracking, the pauses it makes and hookrelay's announcements of
   * them and of messages failed for good, in the transaction that records the attempts: a result
   * recorded is announced, even if the process stops right after the commit, and a result written
   * again after a failed commit is announced once.
   */
  private async trackEndpoints(tx: Sql, outcomes: MessageOutcome[], applied: Map<string, AppliedOutcome>): Promise<void> {
    const recorded = outcomes.flatMap((o) => {
      const message = applied.get(o.messageId);
      return message === undefined ? [] : [{ outcome: o, message }];
    });
    const paused = await recordEndpointAttempts(
      tx,
      recorded.map(({ outcome, message }) => ({
        endpointId: message.endpoint_id,
        // Not the status: a rerun's attempt leaves its message queued, whatever its answer.
        succeeded: outcome.error === null,
        startedAt: outcome.startedAt,
        finishedAt: outcome.finishedAt,
        error: outcome.error,
        endedMessage: message.status === 'failed_permanent' && !message.ended_by_delete,
      })),
      { pauseAfterSeconds: this.failing.pauseAfterSeconds, minFailedMessages: ENDPOINT_PAUSE_MIN_FAILED_MESSAGES },
    );
    this.pausedInTransaction.push(...paused);
    const announcements = [
      ...recorded.filter(({ message }) => announcesFailure(message)).map(({ message }) => messageFailedEvent(message)),
      ...paused.map(endpointPausedEvent),
    ];
    await this.failing.events.fanOutWithin(tx, announcements);
  }
}
