import type { FastifyBaseLogger } from 'fastify';
import type { Sql } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { recordInboundResults, type InboundResultReport, type RecordedInboundResult } from '../db/inbound-results.js';
import { GroupCommit } from '../lib/group-commit.js';
import { NOOP_TRACING, type Tracing } from '../tracing/tracing.js';

export interface ResultBatcherOptions {
  /** Most reports recorded in one statement. */
  maxBatch?: number;
  /** How long reports nobody waits on are held for others to share their commit (RESULT_LINGER_MS). */
  lingerMs?: number;
  /** A span per report (`hookrelay.stream.result`), in the trace of the message's request. */
  tracing?: Tracing;
}

/**
 * How long a stream's result frames wait for others before their commit: at a few hundred webhooks
 * per second and more, each report would otherwise be a commit and a WAL flush of its own (BENCHMARKS.md,
 * Listen latency). Nothing a CLI does waits on them, and the inspector shows an answer this much later.
 */
export const RESULT_LINGER_MS = 10;

/**
 * Records the CLIs' result reports in group commits (one durable commit for many results instead of
 * one each). A report someone waits on (an HTTP report, answered after its commit) starts a batch in
 * the turn after it arrives, so that the reports of one socket read go together; reports nobody waits
 * on (stream result frames) are held up to `lingerMs` first, so that a busy listener's reports share
 * commits.
 *
 * Reports of one message are recorded in the order they arrived, each in its own statement (a
 * batch stops before a second report of a message it already holds), so attempt numbers and the
 * final status are those of one-by-one recording.
 *
 * A batch the database refuses (one bad report fails the whole statement, and commits nothing) is
 * recorded again one report at a time, so each report gets its own outcome and none is lost to
 * another's. When the database cannot be reached, the batch fails as a whole: whether it committed
 * is unknown, and recording it again could count an attempt twice.
 */
export class ResultBatcher {
  private readonly commits: GroupCommit<InboundResultReport, RecordedInboundResult | undefined>;
  private readonly tracing: Tracing;

  constructor(
    sql: Sql,
    log: Pick<FastifyBaseLogger, 'warn'>,
    options: ResultBatcherOptions = {},
  ) {
    this.tracing = options.tracing ?? NOOP_TRACING;
    this.commits = new GroupCommit({
      commit: (reports) => recordInboundResults(sql, reports),
      maxBatch: options.maxBatch ?? 500,
      keyOf: (report) => report.messageId,
      lingerMs: options.lingerMs ?? RESULT_LINGER_MS,
      onFailure: (error, batch) => {
        if (batch.length === 1 || isDatabaseUnavailable(error)) return { action: 'fail', error };
        log.warn({ err: error, reports: batch.length }, 'a batch of results failed; recording its reports one by one');
        return { action: 'split' };
      },
    });
  }

  /**
   * Resolves after the commit that holds the report: the message as the report left it (and whether
   * the report was a copy of one recorded before), or undefined (no such live message). `canWait`: nobody waits on the answer, so the report may be held up to `lingerMs`.
   */
  record(report: InboundResultReport, { canWait = false }: { canWait?: boolean } = {}): Promise<RecordedInboundResult | undefined> {
    const recording = this.commits.enqueue(report, canWait);
    if (!this.tracing.enabled) return recording;
    const startTime = Date.now();
    const traced = (recorded: RecordedInboundResult | undefined, failure?: unknown): void => {
      const span = this.tracing.startSpan('hookrelay.stream.result', {
        kind: 'consumer',
        // The message's stored context: the report joins the trace of the request that brought it.
        parent: recorded?.row.trace_context,
        startTime,
        attributes: {
          'hookrelay.message.id': report.messageId,
          'hookrelay.inbound_endpoint.id': report.endpointId,
          'hookrelay.result.status': report.result.status ?? undefined,
          'hookrelay.result.latency_ms': report.result.latencyMs,
          'hookrelay.result.outcome': failure !== undefined ? 'failed' : recorded === undefined ? 'not_found' : recorded.duplicate ? 'duplicate' : 'recorded',
        },
      });
      if (failure !== undefined) span.fail(failure instanceof Error ? failure.name : 'result not recorded');
      span.end();
    };
    return recording.then(
      (recorded) => {
        traced(recorded);
        return recorded;
      },
      (error: unknown) => {
        traced(undefined, error);
        throw error;
      },
    );
  }

  /** Resolves once every report queued so far is settled (graceful shutdown): held reports go at once. */
  idle(): Promise<void> {
    return this.commits.idle();
  }
}
