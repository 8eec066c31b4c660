import type { FastifyBaseLogger } from 'fastify';
import type { Sql } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { recordInboundResults, type InboundResultReport, type RecordedInboundResult } from '../db/inbound-messages.js';

interface Pending {
  report: InboundResultReport;
  /** Nobody waits on it (a stream's result frame, which has no answer): it may wait for company. */
  canWait: boolean;
  resolve(recorded: RecordedInboundResult | undefined): void;
  reject(error: unknown): void;
}

export interface ResultBatcherOptions {
  /** Most reports recorded in one statement. */
  maxBatch?: number;
  /** How long reports nobody waits on are held for others to share their commit (RESULT_LINGER_MS). */
  lingerMs?: number;
}

/**
 * How long a stream's result frames wait for others before their commit: at a few hundred webhooks
 * per second and more, each report would otherwise be a commit and a WAL flush of its own (BENCHMARKS.md,
 * Listen latency). Nothing a CLI does waits on them, and the inspector shows an answer this much later.
 */
export const RESULT_LINGER_MS = 10;

/**
 * Records the CLIs' result reports in group commits: while one statement runs, new reports queue,
 * and the next statement takes them all (one durable commit for many results instead of one each).
 * A report someone waits on (an HTTP report, answered after its commit) starts a batch in the turn
 * after it arrives, so that the reports of one socket read go together; reports nobody waits on
 * (stream result frames) are held up to `lingerMs` first, so that a busy listener's reports share
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
  private queue: Pending[] = [];
  /** Queued reports someone waits on. */
  private waitedOn = 0;
  private scheduled = false;
  private lingering: NodeJS.Timeout | null = null;
  private running = false;
  private readonly maxBatch: number;
  private readonly lingerMs: number;

  constructor(
    private readonly sql: Sql,
    private readonly log: Pick<FastifyBaseLogger, 'warn'>,
    options: ResultBatcherOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
    this.lingerMs = options.lingerMs ?? RESULT_LINGER_MS;
  }

  /**
   * Resolves after the commit that holds the report: the message as the report left it (and whether
   * the report was a copy of one recorded before), or undefined (no such live message). `canWait`: nobody waits on the answer, so the report may be held up to `lingerMs`.
   */
  record(report: InboundResultReport, { canWait = false }: { canWait?: boolean } = {}): Promise<RecordedInboundResult | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ report, canWait, resolve, reject });
      if (!canWait) this.waitedOn++;
      this.schedule();
    });
  }

  /** Resolves once every report queued so far is settled (graceful shutdown): held reports go at once. */
  async idle(): Promise<void> {
    while (this.scheduled || this.running || this.queue.length > 0 || this.lingering !== null) {
      this.schedule(true);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Starts a batch in the next turn when a queued report is waited on (or `now`), else after the linger. */
  private schedule(now = false): void {
    if (this.running || this.scheduled || this.queue.length === 0) return;
    if (now || this.waitedOn > 0 || this.queue.length >= this.maxBatch || this.lingerMs <= 0) {
      if (this.lingering !== null) clearTimeout(this.lingering);
      this.lingering = null;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.run();
      });
    } else {
      this.lingering ??= setTimeout(() => {
        this.lingering = null;
        void this.run();
      }, this.lingerMs);
    }
  }

  private async run(): Promise<void> {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    try {
      // Reports that came during a commit go in the next one at once, as long as one is waited on.
      do {
        await this.flush(this.takeBatch());
      } while (this.queue.length > 0 && (this.waitedOn > 0 || this.queue.length >= this.maxBatch));
    } finally {
      this.running = false;
      this.schedule();
    }
  }

  private takeBatch(): Pending[] {
    const ids = new Set<string>();
    let count = 0;
    while (count < this.queue.length && count < this.maxBatch && !ids.has(this.queue[count]!.report.messageId)) {
      ids.add(this.queue[count]!.report.messageId);
      count++;
    }
    const batch = this.queue.splice(0, count);
    for (const pending of batch) if (!pending.canWait) this.waitedOn--;
    return batch;
  }

  private async flush(batch: Pending[]): Promise<void> {
    let rows: (RecordedInboundResult | undefined)[];
    try {
      rows = await recordInboundResults(
        this.sql,
        batch.map((p) => p.report),
      );
    } catch (error) {
      if (batch.length === 1 || isDatabaseUnavailable(error)) {
        batch.forEach((p) => p.reject(error));
        return;
      }
      this.log.warn({ err: error, reports: batch.length }, 'a batch of results failed; recording its reports one by one');
      for (const pending of batch) {
        try {
          const [row] = await recordInboundResults(this.sql, [pending.report]);
          pending.resolve(row);
        } catch (alone) {
          pending.reject(alone);
        }
      }
      return;
    }
    batch.forEach((p, i) => p.resolve(rows[i]));
  }
}
