import type { BulkJobListQuery, BulkJobOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { formatBulkJobTable } from '../../format/bulk-jobs.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';

export default class JobsList extends ListCommand<typeof JobsList> {
  static override summary = 'List the bulk retry and replay jobs, newest first, with how far each got.';
  static override description = `One page at a time (--limit, server default 50, at most 200); when more rows follow, the command prints the command for the next page on stderr. --all walks every page. \`jobs get ID\` shows one job.

With --json the output is { "data": [...], "next_cursor": "..." | null }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    { description: 'The jobs still running:', command: `<%= config.bin %> <%= command.id %> --all --json | jq -r '.data[] | select(.status == "running") | .id'` },
  ];

  static override flags = {
    limit: Flags.integer({ summary: 'Rows per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  private async page(cursor: string | undefined): Promise<Page<BulkJobOut>> {
    const query: Partial<BulkJobListQuery> = {};
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.bulkJobs.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<BulkJobOut>> {
    const args: string[] = this.flags.limit === undefined ? [] : ['--limit', String(this.flags.limit)];
    return this.listRows({
      fetchPage: (cursor) => this.page(cursor),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatBulkJobTable(rows, this.style.out),
      noRows: 'No jobs yet. Start one with `hookrelay messages retry --endpoint EP --since 2h` or `hookrelay inbound replay ENDPOINT --since 2h`.',
      noMoreRows: 'No more jobs.',
      nextPage: { label: 'More jobs', command: 'hookrelay jobs list', args },
    });
  }
}
