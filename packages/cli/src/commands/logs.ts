import { HookrelayApiError, HookrelayNetworkError, MESSAGE_STATUSES, type LogRecordOut, type LogsQuery } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { formatLogLine, formatLogTable } from '../format/messages.js';
import { LogFollower } from '../log-follow.js';
import { collectAllPages, nextPageHint, type ListResult, type Page } from '../paging.js';
import { sleepUnlessStopped, StopSignals } from '../signals.js';
import { parseTimeFlag } from '../time-flags.js';

/** How often --follow asks for new rows. */
export const FOLLOW_INTERVAL_MS = 2_000;
/** Page size of the polls of --follow (the API's maximum). */
const FOLLOW_PAGE_SIZE = 500;
/** One poll walks at most this many pages (a burst of 50 000 messages in 2 s is not a log to follow). */
const FOLLOW_MAX_PAGES = 100;

type LogFilters = Omit<Partial<LogsQuery>, 'limit' | 'cursor'>;

export default class Logs extends BaseCommand<typeof Logs> {
  static override summary = 'List outbound messages with their delivery status, newest first; --follow prints new ones as they come.';
  static override description = `Filters: --endpoint, --status, --since (created at or after; alias --start-time) and --until (created before; alias --end-time). A time is an ISO 8601 date or time (2026-05-01T12:00:00Z) or a duration ago (10m, 2h, 1d). Deleted messages are listed too, marked (deleted).

One page at a time (--limit, server default 50, at most 500); when more rows follow, the command prints the command for the next page on stderr. --all walks every page.

--follow shows the latest page (oldest first), then asks for new messages every 2 s and prints each new message once, with its status when first seen, until Ctrl-C (exit 0). It cannot be combined with --cursor, --all or --until. \`messages get ID\` shows a message's current state.

With --json the output is { "data": [...], "next_cursor": "..." | null }; with --follow, one JSON object per message and per line (NDJSON).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --status failed_permanent --since 1d',
    '<%= config.bin %> <%= command.id %> --endpoint ep_0123456789abcdef0123456789abcdef --limit 20',
    '<%= config.bin %> <%= command.id %> --start-time 2026-05-01T00:00:00Z --end-time 2026-05-02T00:00:00Z --all --json',
    {
      description: 'Watch deliveries as messages are sent:',
      command: '<%= config.bin %> <%= command.id %> --follow',
    },
    {
      description: 'Stream new messages of one endpoint as NDJSON:',
      command: "<%= config.bin %> <%= command.id %> --follow --endpoint ep_0123456789abcdef0123456789abcdef --json | jq -c '{message_id, status}'",
    },
  ];

  static override flags = {
    endpoint: Flags.string({ summary: 'Only messages to this outbound endpoint (ep_ followed by 32 hex characters).' }),
    status: Flags.string({ summary: 'Only messages in this status.', options: [...MESSAGE_STATUSES] }),
    since: Flags.string({
      summary: 'Only messages created at or after this time: ISO 8601, or a duration ago (10m, 2h, 1d).',
      aliases: ['start-time'],
    }),
    until: Flags.string({
      summary: 'Only messages created before this time: ISO 8601, or a duration ago.',
      aliases: ['end-time'],
      exclusive: ['follow'],
    }),
    limit: Flags.integer({ summary: 'Rows per page, 1-500 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.', exclusive: ['follow'] }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.', exclusive: ['follow'] }),
    follow: Flags.boolean({ summary: 'Keep printing new messages as they come (polls every 2 s) until Ctrl-C.' }),
  };

  private filters(): LogFilters {
    const filters: LogFilters = {};
    const now = this.now().getTime();
    if (this.flags.endpoint !== undefined) filters.endpoint_id = this.flags.endpoint;
    if (this.flags.status !== undefined) filters.status = this.flags.status as LogFilters['status'];
    if (this.flags.since !== undefined) filters.start_time = parseTimeFlag('since', this.flags.since, now);
    if (this.flags.until !== undefined) filters.end_time = parseTimeFlag('until', this.flags.until, now);
    return filters;
  }

  private async page(filters: LogFilters, cursor: string | undefined, limit: number | undefined): Promise<Page<LogRecordOut>> {
    const query: Partial<LogsQuery> = { ...filters };
    if (limit !== undefined) query.limit = limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.logs.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<LogRecordOut> | void> {
    const filters = this.filters();
    if (this.flags.follow) {
      await this.follow(filters);
      return;
    }
    let data: LogRecordOut[];
    let nextCursor: string | null = null;
    if (this.flags.all) {
      data = await collectAllPages((cursor) => this.page(filters, cursor, this.flags.limit), { cursor: this.flags.cursor });
    } else {
      const page = await this.page(filters, this.flags.cursor, this.flags.limit);
      data = page.data;
      nextCursor = page.nextCursor;
    }

    if (data.length === 0) {
      this.print(this.flags.cursor === undefined ? 'No messages match.' : 'No more messages.');
    } else {
      this.print(formatLogTable(data, this.style.out, { showEndpoint: filters.endpoint_id === undefined }));
    }
    if (nextCursor !== null) {
      this.note(this.style.err.dim(`More messages: ${nextPageHint('hookrelay logs', this.filterArgs(filters), nextCursor)}`));
    }
    return { data, next_cursor: nextCursor };
  }

  /** The filters as flags for the next-page hint, times resolved (a "10m" would have moved on). */
  private filterArgs(filters: LogFilters): string[] {
    const args: string[] = [];
    if (filters.endpoint_id !== undefined) args.push('--endpoint', filters.endpoint_id);
    if (filters.status !== undefined) args.push('--status', filters.status);
    if (filters.start_time !== undefined) args.push('--since', filters.start_time);
    if (filters.end_time !== undefined) args.push('--until', filters.end_time);
    if (this.flags.limit !== undefined) args.push('--limit', String(this.flags.limit));
    return args;
  }

  private emit(rows: readonly LogRecordOut[]): void {
    for (const row of rows) {
      if (this.jsonEnabled()) process.stdout.write(`${JSON.stringify(row)}\n`);
      else process.stdout.write(`${formatLogLine(row, this.style.out)}\n`);
    }
  }

  /** Every message created at or after `startTime` (all pages), newest first. */
  private async pollRows(filters: LogFilters, startTime: string | undefined): Promise<LogRecordOut[]> {
    const query: LogFilters = { ...filters };
    if (startTime !== undefined) query.start_time = startTime;
    const rows: LogRecordOut[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < FOLLOW_MAX_PAGES; pages += 1) {
      const page = await this.page(query, cursor, FOLLOW_PAGE_SIZE);
      rows.push(...page.data);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    return rows;
  }

  private async follow(filters: LogFilters): Promise<void> {
    const follower = new LogFollower<LogRecordOut>((row) => row.message_id, (row) => row.created_at);
    const stop = new StopSignals().install();
    try {
      // The latest page first, oldest at the top like `tail -f`.
      const first = await this.page(filters, undefined, this.flags.limit);
      this.emit(follower.accept(first.data));
      // When more rows precede the first page, those stay unprinted: the look-back of the polls
      // must not bring them out later, out of order.
      const oldest = first.data[first.data.length - 1];
      const floor = first.nextCursor !== null && oldest !== undefined ? Date.parse(oldest.created_at) : undefined;
      const fresh = (rows: readonly LogRecordOut[]): LogRecordOut[] =>
        floor === undefined ? [...rows] : rows.filter((row) => Date.parse(row.created_at) >= floor);
      this.note(this.style.err.dim(`following new messages (every ${FOLLOW_INTERVAL_MS / 1000} s); Ctrl-C to stop`));
      let warned = false;
      while (!stop.stopping) {
        await sleepUnlessStopped(FOLLOW_INTERVAL_MS, stop.signal);
        if (stop.stopping) break;
        try {
          const rows = await this.pollRows(filters, follower.receivedAfter(filters.start_time));
          this.emit(follower.accept(fresh(rows)));
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
}
