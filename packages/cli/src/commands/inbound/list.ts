import type { EndpointListQuery, InboundEndpointSummaryOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { formatInboundEndpointTable } from '../../format/inbound-endpoints.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';

export default class InboundList extends ListCommand<typeof InboundList> {
  static override summary = "List the project's inbound endpoints, newest first.";
  static override description = `One page at a time. When more endpoints follow, the command prints the --cursor value of the next page; --all walks every page (--limit is then the page size).

Lists do not show ingest URLs (they embed the secret token): \`inbound get ID\` does.

With --json the output is { "data": [...], "next_cursor": "..." | null } (with --all, every endpoint and next_cursor null).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --limit 10',
    '<%= config.bin %> <%= command.id %> --limit 10 --cursor eyJ...',
    {
      description: 'Every cli-mode endpoint id, all pages:',
      command: "<%= config.bin %> <%= command.id %> --all --json | jq -r '.data[] | select(.mode == \"cli\") | .id'",
    },
  ];

  static override flags = {
    limit: Flags.integer({ summary: 'Endpoints per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  private async page(cursor: string | undefined): Promise<Page<InboundEndpointSummaryOut>> {
    const query: Partial<EndpointListQuery> = {};
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.inboundEndpoints.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<InboundEndpointSummaryOut>> {
    return this.listRows({
      fetchPage: (cursor) => this.page(cursor),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatInboundEndpointTable(rows, this.style.out, this.now()),
      noRows: 'No inbound endpoints yet. Create one with `hookrelay inbound create --name NAME`.',
      noMoreRows: 'No more inbound endpoints.',
      nextPage: { label: 'More inbound endpoints', command: 'hookrelay inbound list', args: this.flags.limit === undefined ? [] : ['--limit', String(this.flags.limit)] },
    });
  }
}
