import type { FastifyBaseLogger } from 'fastify';
import type { Sql } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { recordInboundResults, type InboundMessageRow, type InboundResultReport } from '../db/inbound-messages.js';

interface Pending {
  report: InboundResultReport;
  resolve(row: InboundMessageRow | undefined): void;
  reject(error: unknown): void;
}

export interface ResultBatcherOptions {
  /** Most reports recorded in one statement. */
  maxBatch?: number;
}

/**
 * Records the CLIs' result reports in group commits: while one statement runs, new reports queue,
 * and the next statement takes them all (one durable commit for many results instead of one each).
 * Nothing waits on a timer: an idle batcher starts a batch in the turn after the first report, so
 * that the frames of one socket read go together.
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
  private scheduled = false;
  private running = false;
  private readonly maxBatch: number;

  constructor(
    private readonly sql: Sql,
    private readonly log: Pick<FastifyBaseLogger, 'warn'>,
    options: ResultBatcherOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
  }

  /** Resolves after the commit that holds the report: the updated row, or undefined (no such live message). */
  record(report: InboundResultReport): Promise<InboundMessageRow | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ report, resolve, reject });
      if (!this.running && !this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          void this.run();
        });
      }
    });
  }

  /** Resolves once every report queued so far is settled (graceful shutdown). */
  async idle(): Promise<void> {
    while (this.scheduled || this.running || this.queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) await this.flush(this.takeBatch());
    } finally {
      this.running = false;
    }
  }

  private takeBatch(): Pending[] {
    const ids = new Set<string>();
    let count = 0;
    while (count < this.queue.length && count < this.maxBatch && !ids.has(this.queue[count]!.report.messageId)) {
      ids.add(this.queue[count]!.report.messageId);
      count++;
    }
    return this.queue.splice(0, count);
  }

  private async flush(batch: Pending[]): Promise<void> {
    let rows: (InboundMessageRow | undefined)[];
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
