import type { EndpointSummaryOut, OutboundEndpointListQuery } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { formatEndpointTable } from '../../format/endpoints.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';

type EndpointFilters = Pick<Partial<OutboundEndpointListQuery>, 'owner_id' | 'event_type'>;

export default class EndpointsList extends ListCommand<typeof EndpointsList> {
  static override summary = "List the project's outbound endpoints, newest first.";
  static override description = `One page at a time. When more endpoints follow, the command prints the --cursor value of the next page.

--owner lists one customer's endpoints; --event-type those whose event types take that type, whatever their owner and channels. Together: the endpoints an event of that type and owner reaches, channels aside.

With --json the output is { "data": [...], "next_cursor": "..." | null }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --limit 10',
    '<%= config.bin %> <%= command.id %> --limit 10 --cursor eyJ...',
    {
      description: 'The endpoints of customer acme that an invoice.paid event reaches:',
      command: '<%= config.bin %> <%= command.id %> --owner acme --event-type invoice.paid',
    },
    {
      description: 'Every id on the first page:',
      command: "<%= config.bin %> <%= command.id %> --json | jq -r '.data[].id'",
    },
  ];

  static override flags = {
    owner: Flags.string({ summary: "Only this owner's endpoints (exact, case-sensitive)." }),
    'event-type': Flags.string({ summary: 'Only endpoints whose event types take this type (invoice.paid).' }),
    limit: Flags.integer({ summary: 'Endpoints per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
  };

  private async page(filters: EndpointFilters, cursor: string | undefined): Promise<Page<EndpointSummaryOut>> {
    const query: Partial<OutboundEndpointListQuery> = { ...filters };
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.endpoints.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<EndpointSummaryOut>> {
    const filters: EndpointFilters = {};
    if (this.flags.owner !== undefined) filters.owner_id = this.flags.owner;
    if (this.flags['event-type'] !== undefined) filters.event_type = this.flags['event-type'];
    const filtered = Object.keys(filters).length > 0;
    const args: string[] = [];
    if (filters.owner_id !== undefined) args.push('--owner', filters.owner_id);
    if (filters.event_type !== undefined) args.push('--event-type', filters.event_type);
    if (this.flags.limit !== undefined) args.push('--limit', String(this.flags.limit));
    return this.listRows({
      fetchPage: (cursor) => this.page(filters, cursor),
      all: false,
      cursor: this.flags.cursor,
      table: (rows) => formatEndpointTable(rows, this.style.out, this.now()),
      noRows: filtered ? 'No endpoints match.' : 'No endpoints yet. Create one with `hookrelay endpoints create --url https://…`.',
      noMoreRows: 'No more endpoints.',
      nextPage: { label: 'More endpoints', command: 'hookrelay endpoints list', args },
    });
  }
}
