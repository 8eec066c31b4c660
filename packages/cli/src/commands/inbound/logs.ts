import type { InboundLogRecordOut, InboundLogsQuery } from '@hookrelay/shared';
import { MESSAGE_STATUSES } from '@hookrelay/shared/constants';
import { isUuid } from '@hookrelay/shared/ids';
import { Flags } from '@oclif/core';
import { usageFailure } from '../../errors.js';
import { formatInboundLogLine, formatInboundLogTable } from '../../format/inbound-logs.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';
import { parseTimeFlag } from '../../flags/time.js';

type LogFilters = Omit<Partial<InboundLogsQuery>, 'limit' | 'cursor'>;

export default class InboundLogs extends ListCommand<typeof InboundLogs> {
  static override summary = 'List inbound messages with their delivery status, newest first; --follow prints new ones as they arrive.';
  static override description = `Filters: --status, --endpoint, --since (received at or after; alias --received-after) and --until (received before; alias --received-before). A time is an ISO 8601 date or time (2026-05-01T12:00:00Z) or a duration ago (10m, 2h, 1d).

One page at a time (--limit, server default 50, at most 500); when more rows follow, the command prints the command for the next page. --all walks every page.

--follow shows the latest page (oldest first), then asks for new rows every 2 s and prints each new message once, with its status when first seen, until Ctrl-C (exit 0). It cannot be combined with --cursor, --all or --until.

With --json the output is { "data": [...], "next_cursor": "..." | null }; with --follow, one JSON object per row and per line (NDJSON).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --status failed_permanent --since 1d',
    '<%= config.bin %> <%= command.id %> --endpoint 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --limit 20',
    '<%= config.bin %> <%= command.id %> --since 2026-05-01T00:00:00Z --until 2026-05-02T00:00:00Z --all --json',
    {
      description: 'Watch new webhooks arrive:',
      command: '<%= config.bin %> <%= command.id %> --follow',
    },
    {
      description: 'Stream failures as NDJSON:',
      command: "<%= config.bin %> <%= command.id %> --follow --json | jq -c 'select(.status == \"failed_permanent\")'",
    },
  ];

  static override flags = {
    status: Flags.string({ summary: 'Only messages in this status.', options: [...MESSAGE_STATUSES] }),
    endpoint: Flags.string({ summary: 'Only messages of this inbound endpoint (its id).' }),
    since: Flags.string({
      summary: 'Only messages received at or after this time: ISO 8601, or a duration ago (10m, 2h, 1d).',
      aliases: ['received-after'],
    }),
    until: Flags.string({
      summary: 'Only messages received before this time: ISO 8601, or a duration ago.',
      aliases: ['received-before'],
    }),
    limit: Flags.integer({ summary: 'Rows per page, 1-500 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
    follow: Flags.boolean({
      summary: 'Keep printing new messages as they arrive (polls every 2 s) until Ctrl-C.',
      exclusive: ['cursor', 'all', 'until'],
    }),
  };

  private filters(): LogFilters {
    const filters: LogFilters = {};
    const now = this.now().getTime();
    if (this.flags.status !== undefined) filters.status = this.flags.status as LogFilters['status'];
    if (this.flags.endpoint !== undefined) {
      if (!isUuid(this.flags.endpoint)) {
        throw usageFailure(`--endpoint: "${this.flags.endpoint}" is not an inbound endpoint id`, 'Inbound endpoint ids are UUIDs; `hookrelay inbound list` shows them.');
      }
      filters.inbound_endpoint_id = this.flags.endpoint.toLowerCase();
    }
    if (this.flags.since !== undefined) filters.received_after = parseTimeFlag('since', this.flags.since, now);
    if (this.flags.until !== undefined) filters.received_before = parseTimeFlag('until', this.flags.until, now);
    return filters;
  }

  private async page(filters: LogFilters, cursor: string | undefined, limit: number | undefined): Promise<Page<InboundLogRecordOut>> {
    const query: Partial<InboundLogsQuery> = { ...filters };
    if (limit !== undefined) query.limit = limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.inboundLogs.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<InboundLogRecordOut> | void> {
    const filters = this.filters();
    if (this.flags.follow) {
      await this.followLog({
        fetchPage: ({ since, cursor, limit }) => this.page(since === undefined ? filters : { ...filters, received_after: since }, cursor, limit),
        since: filters.received_after,
        limit: this.flags.limit,
        key: (row) => row.message_id,
        time: (row) => row.received_at,
        line: (row) => formatInboundLogLine(row, this.style.out),
        beforeFirstPage: 'mark-seen',
      });
      return;
    }
    return this.listRows({
      fetchPage: (cursor) => this.page(filters, cursor, this.flags.limit),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatInboundLogTable(rows, this.style.out, { showEndpoint: filters.inbound_endpoint_id === undefined }),
      noRows: 'No inbound messages match.',
      noMoreRows: 'No more inbound messages.',
      nextPage: { label: 'More messages', command: 'hookrelay inbound logs', args: this.filterArgs(filters) },
    });
  }

  /** The filters as flags for the next-page hint, times resolved (a "10m" would have moved on). */
  private filterArgs(filters: LogFilters): string[] {
    const args: string[] = [];
    if (filters.status !== undefined) args.push('--status', filters.status);
    if (filters.inbound_endpoint_id !== undefined) args.push('--endpoint', filters.inbound_endpoint_id);
    if (filters.received_after !== undefined) args.push('--since', filters.received_after);
    if (filters.received_before !== undefined) args.push('--until', filters.received_before);
    if (this.flags.limit !== undefined) args.push('--limit', String(this.flags.limit));
    return args;
  }
}
