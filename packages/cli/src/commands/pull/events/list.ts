import type { PullEventFilterParams, PullEventOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { formatPullEventTable } from '../../../format/pull.js';
import { collectAllPages, nextPageHint, type ListResult, type Page } from '../../../paging.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, pullEventFilterArgs, pullEventFilterFlags, pullEventFilters } from '../../../flags/pull.js';

export default class PullEventsList extends BaseCommand<typeof PullEventsList> {
  static override summary = "List a pull endpoint's events, oldest first (by default those not fetched yet: status stored).";
  static override description = `Filters: --status (comma list or repeated; default stored), --event-type, --since (received at or after; alias --received-after) and --until (received before; alias --received-before). A time is an ISO 8601 date or time or a duration ago (10m, 2h, 1d). Listing does not change an event's status; \`pull events get\` does (stored → fetched).

One page at a time (--limit, server default 100, at most 1000); when more events follow, the command prints the command for the next page on stderr. --all walks every page.

With --json the output is { "data": [...], "next_cursor": "..." | null }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --status stored,fetched --event-type invoice.paid',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --since 1h --limit 500 --all --json',
    {
      description: 'Process every waiting event, then acknowledge it:',
      command:
        "for id in $(<%= config.bin %> <%= command.id %> $EP --all --json | jq -r '.data[].id'); do <%= config.bin %> pull events get $EP $id --body-only | ./handle && <%= config.bin %> pull events ack $EP $id; done",
    },
  ];

  static override args = {
    endpoint: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    ...pullEventFilterFlags,
    limit: Flags.integer({ summary: 'Events per page, 1-1000 (server default 100).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page (with the same filters).' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  private async page(filters: PullEventFilterParams, cursor: string | undefined): Promise<Page<PullEventOut>> {
    const query: PullEventFilterParams & { cursor?: string } = { ...filters };
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.pullEvents.list(this.args.endpoint, query);
    // The events list ends with next_cursor "" (not null, as other lists do).
    return { data, nextCursor: meta.has_more && meta.next_cursor !== '' ? meta.next_cursor : null };
  }

  public async run(): Promise<ListResult<PullEventOut>> {
    const filters = pullEventFilters(this.flags, this.now().getTime());
    let data: PullEventOut[];
    let nextCursor: string | null = null;
    if (this.flags.all) {
      data = await collectAllPages((cursor) => this.page(filters, cursor), { cursor: this.flags.cursor });
    } else {
      const page = await this.page(filters, this.flags.cursor);
      data = page.data;
      nextCursor = page.nextCursor;
    }

    if (data.length === 0) {
      this.print(this.flags.cursor === undefined ? 'No events match.' : 'No more events.');
    } else {
      this.print(formatPullEventTable(data, this.style.out));
    }
    if (nextCursor !== null) {
      const args = [this.args.endpoint, ...pullEventFilterArgs(filters), ...(this.flags.limit === undefined ? [] : ['--limit', String(this.flags.limit)])];
      this.note(this.style.err.dim(`More events: ${nextPageHint('hookrelay pull events list', args, nextCursor)}`));
    }
    return { data, next_cursor: nextCursor };
  }
}
