import type { EndpointListQuery, EndpointSummaryOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatEndpointTable } from '../../format/endpoints.js';
import { terminalText } from '../../format/text.js';
import { shellQuote } from '../../paging.js';

/** `--json` output of a list: the page and the cursor of the next one (null on the last page). */
export interface EndpointListResult {
  data: EndpointSummaryOut[];
  next_cursor: string | null;
}

export default class EndpointsList extends BaseCommand<typeof EndpointsList> {
  static override summary = "List the project's outbound endpoints, newest first.";
  static override description = `One page at a time. When more endpoints follow, the command prints the --cursor value of the next page.

With --json the output is { "data": [...], "next_cursor": "..." | null }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --limit 10',
    '<%= config.bin %> <%= command.id %> --limit 10 --cursor eyJ...',
    {
      description: 'Every id on the first page:',
      command: "<%= config.bin %> <%= command.id %> --json | jq -r '.data[].id'",
    },
  ];

  static override flags = {
    limit: Flags.integer({ summary: 'Endpoints per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
  };

  public async run(): Promise<EndpointListResult> {
    const query: Partial<EndpointListQuery> = {};
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (this.flags.cursor !== undefined) query.cursor = this.flags.cursor;
    const { data, meta } = await this.client.endpoints.list(query);
    const nextCursor = meta.next_cursor ?? null;

    if (data.length === 0) {
      this.print(this.flags.cursor === undefined ? 'No endpoints yet. Create one with `hookrelay endpoints create --url https://…`.' : 'No more endpoints.');
    } else {
      this.print(formatEndpointTable(data, this.style.out, this.now()));
    }
    if (nextCursor !== null) {
      const limit = this.flags.limit === undefined ? '' : ` --limit ${this.flags.limit}`;
      this.note(this.style.err.dim(`More endpoints: hookrelay endpoints list${limit} --cursor ${terminalText(shellQuote(nextCursor))}`));
    }
    return { data, next_cursor: nextCursor };
  }
}
