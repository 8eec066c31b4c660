import type { EventTypeListQuery, EventTypeOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { formatEventTypeTable } from '../../format/event-types.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';

export default class EventTypesList extends ListCommand<typeof EventTypesList> {
  static override summary = "List the project's event types by name, hookrelay's own included.";
  static override description = `By name in byte order (Z before a). --archived lists only archived types, --no-archived only active ones; without either, both. One page at a time (--limit, server default 50, at most 200; a page also ends before its schemas pass 1 MiB); --all walks every page.

With --json the output is { "data": [...], "next_cursor": "..." | null }, each an event type record with its schema and example.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --no-archived',
    {
      description: 'Every name, all pages:',
      command: "<%= config.bin %> <%= command.id %> --all --json | jq -r '.data[].name'",
    },
  ];

  static override flags = {
    archived: Flags.boolean({ summary: 'Only archived types; --no-archived: only active ones.', allowNo: true }),
    limit: Flags.integer({ summary: 'Types per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  private async page(cursor: string | undefined): Promise<Page<EventTypeOut>> {
    const query: Partial<EventTypeListQuery> = {};
    if (this.flags.archived !== undefined) query.archived = this.flags.archived;
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.eventTypes.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<EventTypeOut>> {
    const args: string[] = [];
    if (this.flags.archived !== undefined) args.push(this.flags.archived ? '--archived' : '--no-archived');
    if (this.flags.limit !== undefined) args.push('--limit', String(this.flags.limit));
    return this.listRows({
      fetchPage: (cursor) => this.page(cursor),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatEventTypeTable(rows, this.style.out),
      noRows: this.flags.archived === true ? 'No archived event types.' : 'No event types match.',
      noMoreRows: 'No more event types.',
      nextPage: { label: 'More event types', command: 'hookrelay event-types list', args },
    });
  }
}
