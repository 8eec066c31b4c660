import type { EndpointListQuery, PullEndpointOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { formatPullEndpointTable } from '../../format/pull.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';

export default class PullList extends ListCommand<typeof PullList> {
  static override summary = "List the project's pull endpoints, newest first.";
  static override description = `One page at a time. When more endpoints follow, the command prints the --cursor value of the next page; --all walks every page (--limit is then the page size).

With --json the output is { "data": [...], "next_cursor": "..." | null } (with --all, every endpoint and next_cursor null).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --limit 10',
    '<%= config.bin %> <%= command.id %> --limit 10 --cursor eyJ...',
    {
      description: 'Every pull endpoint id, all pages:',
      command: "<%= config.bin %> <%= command.id %> --all --json | jq -r '.data[].id'",
    },
  ];

  static override flags = {
    limit: Flags.integer({ summary: 'Endpoints per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  private async page(cursor: string | undefined): Promise<Page<PullEndpointOut>> {
    const query: Partial<EndpointListQuery> = {};
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.pullEndpoints.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<PullEndpointOut>> {
    return this.listRows({
      fetchPage: (cursor) => this.page(cursor),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatPullEndpointTable(rows, this.style.out, this.now()),
      noRows: 'No pull endpoints yet. Create one with `hookrelay pull create --name NAME`.',
      noMoreRows: 'No more pull endpoints.',
      nextPage: { label: 'More pull endpoints', command: 'hookrelay pull list', args: this.flags.limit === undefined ? [] : ['--limit', String(this.flags.limit)] },
    });
  }
}
