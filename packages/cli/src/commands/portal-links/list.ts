import type { PortalLinkListQuery, PortalLinkOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { formatPortalLinkTable } from '../../format/portal-links.js';
import { ListCommand } from '../../list-command.js';
import type { ListResult, Page } from '../../paging.js';

export default class PortalLinksList extends ListCommand<typeof PortalLinksList> {
  static override summary = "List the project's portal links, newest first, revoked and expired ones included.";
  static override description = `Never their tokens: a link's URL is shown only when it is made. One page at a time (--limit, server default 50, at most 200); --all walks every page.

With --json the output is { "data": [...], "next_cursor": "..." | null }, each the API's portal link record.`;

  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --owner cus_1842'];

  static override flags = {
    owner: Flags.string({ summary: 'Only the links of this owner_id.', helpValue: 'OWNER_ID' }),
    limit: Flags.integer({ summary: 'Links per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  private async page(cursor: string | undefined): Promise<Page<PortalLinkOut>> {
    const query: Partial<PortalLinkListQuery> = {};
    if (this.flags.owner !== undefined) query.owner_id = this.flags.owner;
    if (this.flags.limit !== undefined) query.limit = this.flags.limit;
    if (cursor !== undefined) query.cursor = cursor;
    const { data, meta } = await this.client.portalLinks.list(query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<PortalLinkOut>> {
    const args: string[] = [];
    if (this.flags.owner !== undefined) args.push('--owner', this.flags.owner);
    if (this.flags.limit !== undefined) args.push('--limit', String(this.flags.limit));
    const now = this.now();
    return this.listRows({
      fetchPage: (cursor) => this.page(cursor),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatPortalLinkTable(rows, this.style.out, now),
      noRows: 'No portal links match.',
      noMoreRows: 'No more portal links.',
      nextPage: { label: 'More portal links', command: 'hookrelay portal-links list', args },
    });
  }
}
