import type { LogRecordOut, LogsQuery } from '@hookrelay/shared';
import { MESSAGE_STATUSES } from '@hookrelay/shared/constants';
import { Flags } from '@oclif/core';
import { formatLogLine, formatLogTable } from '../format/messages.js';
import { ListCommand } from '../list-command.js';
import type { ListResult, Page } from '../paging.js';
import { parseTimeFlag } from '../flags/time.js';

type LogFilters = Omit<Partial<LogsQuery>, 'limit' | 'cursor'>;

export default class Logs extends ListCommand<typeof Logs> {
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
      await this.followLog({
        fetchPage: ({ since, cursor, limit }) => this.page(since === undefined ? filters : { ...filters, start_time: since }, cursor, limit),
        since: filters.start_time,
        limit: this.flags.limit,
        key: (row) => row.message_id,
        time: (row) => row.created_at,
        line: (row) => formatLogLine(row, this.style.out),
        beforeFirstPage: 'skip',
      });
      return;
    }
    return this.listRows({
      fetchPage: (cursor) => this.page(filters, cursor, this.flags.limit),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatLogTable(rows, this.style.out, { showEndpoint: filters.endpoint_id === undefined }),
      noRows: 'No messages match.',
      noMoreRows: 'No more messages.',
      nextPage: { label: 'More messages', command: 'hookrelay logs', args: this.filterArgs(filters) },
    });
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
}
