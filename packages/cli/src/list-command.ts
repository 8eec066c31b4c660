import { HookrelayApiError, HookrelayNetworkError } from '@hookrelay/shared/client';
import type { Command } from '@oclif/core';
import { BaseCommand } from './base-command.js';
import { LogFollower } from './log-follow.js';
import { collectAllPages, nextPageHint, type ListResult, type Page } from './paging.js';
import { sleepUnlessStopped, StopSignals } from './signals.js';

/** How often --follow asks for new rows. */
export const FOLLOW_INTERVAL_MS = 2_000;
/** Page size of the polls of --follow (the API's maximum). */
const FOLLOW_PAGE_SIZE = 500;
/** One poll walks at most this many pages (a burst of 50 000 rows in 2 s is not a log to follow). */
const FOLLOW_MAX_PAGES = 100;

/** A list as `listRows` shows it: one page (or --all) of the command's filters. */
export interface RowList<Row> {
  /** The page at `cursor` (the first when undefined), with the command's filters and --limit. */
  fetchPage: (cursor: string | undefined) => Promise<Page<Row>>;
  /** --all: every page from `cursor` on. */
  all: boolean;
  /** --cursor: the page to start at. */
  cursor: string | undefined;
  /** The rows as human output. */
  table: (rows: readonly Row[]) => string;
  /** What an empty first page says, and an empty page after --cursor. */
  noRows: string;
  noMoreRows: string;
  /** The stderr hint when more rows follow: `label: command args… --cursor NEXT`. */
  nextPage: { label: string; command: string; args: readonly string[] };
}

/** A log, newest first, as `followLog` follows it. */
export interface FollowedLog<Row> {
  /**
   * One page with the command's filters: `since` (when given) replaces the filters' lower time
   * bound, `limit` (when given) is the page size.
   */
  fetchPage: (request: { since?: string | undefined; cursor?: string | undefined; limit?: number | undefined }) => Promise<Page<Row>>;
  /** The filters' own lower time bound (--since), if any: polls never ask for earlier rows. */
  since: string | undefined;
  /** Rows of the first page (--limit). */
  limit: number | undefined;
  /** A row's id, and the time the log orders rows by. */
  key: (row: Row) => string;
  time: (row: Row) => string;
  /** A row as one line of human output. */
  line: (row: Row) => string;
  /**
   * When the first page is cut off by its limit, rows of the look-back window precede it unprinted,
   * and the first poll would bring them out, out of order. `skip` never prints a row older than the
   * first page's oldest; `mark-seen` reads the window once and remembers its rows as printed.
   */
  beforeFirstPage: 'skip' | 'mark-seen';
}

/**
 * A command that lists rows of the API page by page (`listRows`): one page at a time with the next
 * page's command on stderr, or every page with --all. A log (newest first) may also be followed
 * (`followLog`): new rows printed once each as they come, until Ctrl-C.
 */
export abstract class ListCommand<T extends typeof Command> extends BaseCommand<T> {
  /** One page, or every page with --all; human output through the list's formatter. */
  protected async listRows<Row>(list: RowList<Row>): Promise<ListResult<Row>> {
    let data: Row[];
    let nextCursor: string | null = null;
    if (list.all) {
      data = await collectAllPages(list.fetchPage, { cursor: list.cursor });
    } else {
      const page = await list.fetchPage(list.cursor);
      data = page.data;
      nextCursor = page.nextCursor;
    }

    if (data.length === 0) {
      this.print(list.cursor === undefined ? list.noRows : list.noMoreRows);
    } else {
      this.print(list.table(data));
    }
    if (nextCursor !== null) {
      this.note(this.style.err.dim(`${list.nextPage.label}: ${nextPageHint(list.nextPage.command, list.nextPage.args, nextCursor)}`));
    }
    return { data, next_cursor: nextCursor };
  }

  /**
   * `--follow`: the latest page (oldest first), then a poll every 2 s printing each new row once,
   * until Ctrl-C. Under --json each row is one line of JSON (NDJSON).
   */
  protected async followLog<Row>(log: FollowedLog<Row>): Promise<void> {
    const follower = new LogFollower<Row>(log.key, log.time);
    const stop = new StopSignals().install();
    try {
      // The latest page first, oldest at the top like `tail -f`.
      const first = await log.fetchPage({ limit: log.limit });
      this.emitLogRows(follower.accept(first.data), log);
      let fresh = (rows: readonly Row[]): readonly Row[] => rows;
      if (first.nextCursor !== null) {
        if (log.beforeFirstPage === 'mark-seen') {
          follower.seed(await this.pollLog(log, follower.receivedAfter(log.since)));
        } else {
          const oldest = first.data[first.data.length - 1];
          if (oldest !== undefined) {
            const floor = Date.parse(log.time(oldest));
            fresh = (rows) => rows.filter((row) => Date.parse(log.time(row)) >= floor);
          }
        }
      }
      this.note(this.style.err.dim(`following new messages (every ${FOLLOW_INTERVAL_MS / 1000} s); Ctrl-C to stop`));
      let warned = false;
      while (!stop.stopping) {
        await sleepUnlessStopped(FOLLOW_INTERVAL_MS, stop.signal);
        if (stop.stopping) break;
        try {
          const rows = await this.pollLog(log, follower.receivedAfter(log.since));
          this.emitLogRows(follower.accept(fresh(rows)), log);
          if (warned) this.note(this.style.err.dim('the server answers again'));
          warned = false;
        } catch (error) {
          // A server restarting or busy: keep following; anything else (a revoked key) ends it.
          const passing =
            error instanceof HookrelayNetworkError ||
            (error instanceof HookrelayApiError && (error.status >= 500 || error.status === 429));
          if (!passing) throw error;
          if (!warned) this.warning(`${error.message}; retrying every ${FOLLOW_INTERVAL_MS / 1000} s`);
          warned = true;
        }
      }
    } finally {
      stop.dispose();
    }
  }

  /** Every row at or after `since` (all pages, at most FOLLOW_MAX_PAGES), newest first. */
  private async pollLog<Row>(log: FollowedLog<Row>, since: string | undefined): Promise<Row[]> {
    const rows: Row[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < FOLLOW_MAX_PAGES; pages += 1) {
      const page = await log.fetchPage({ since, cursor, limit: FOLLOW_PAGE_SIZE });
      rows.push(...page.data);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    return rows;
  }

  /** Followed rows straight to stdout, as they come: JSON lines under --json, else the log's lines. */
  private emitLogRows<Row>(rows: readonly Row[], log: FollowedLog<Row>): void {
    for (const row of rows) {
      if (this.jsonEnabled()) process.stdout.write(`${JSON.stringify(row)}\n`);
      else process.stdout.write(`${log.line(row)}\n`);
    }
  }
}
