import type { EventsQuery, EventSummaryOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { eventFilterArgs, eventFilterFlags, eventFilters, type EventFilters } from '../../flags/events.js';
import { formatEventTable } from '../../format/events.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';

export default class EventsList extends ListCommand<typeof EventsList> {
  static override summary = 'List the events sent, newest first, with how many messages each became.';
  static override description = `Filters: --type and --owner (exact), --since (created at or after) and --until (created before). A time is an ISO 8601 date or time (2026-05-01T12:00:00Z) or a duration ago (10m, 2h, 1d).

One page at a time (--limit, server default 50, at most 200); when more rows follow, the command prints the command for the next page on stderr. --all walks every page. \`events get ID\` shows an event's fan-out.

With --json the output is { "data": [...], "next_cursor": "..." | null }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --type invoice.paid --owner acme --since 1d',
    '<%= config.bin %> <%= command.id %> --since 2026-05-01T00:00:00Z --until 2026-05-02T00:00:00Z --all --json',
    {
      description: 'Events that reached no endpoint today:',
      command: "<%= config.bin %> <%= command.id %> --since 1d --all --json | jq -r '.data[] | select(.message_count == 0) | .event_id'",
    },
  ];

  static override flags = {
    ...eventFilterFlags,
    limit: Flags.integer({ summary: 'Rows per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  private async page(filters: EventFilters, cursor: string | undefined): Promise<Page<EventSummaryOut>> {
    const query: Partial<EventsQuery> = { ...filters };
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.events.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<EventSummaryOut>> {
    const filters = eventFilters(this.flags, this.now().getTime());
    const args = eventFilterArgs(filters);
    if (this.flags.limit !== undefined) args.push('--limit', String(this.flags.limit));
    return this.listRows({
      fetchPage: (cursor) => this.page(filters, cursor),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatEventTable(rows, this.style.out),
      noRows: Object.keys(filters).length > 0 ? 'No events match.' : 'No events yet. Send one with `hookrelay events send --type TYPE --payload JSON`.',
      noMoreRows: 'No more events.',
      nextPage: { label: 'More events', command: 'hookrelay events list', args },
    });
  }
}
