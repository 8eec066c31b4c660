import type { InboundEndpointMessageOut, InboundEndpointMessagesQuery, MessageSearchMeta } from '@hookrelay/shared';
import { ANSWER_CLASSES, MESSAGE_SEARCH } from '@hookrelay/shared/constants';
import { isUuid } from '@hookrelay/shared/ids';
import { Args, Flags } from '@oclif/core';
import { usageFailure } from '../../../errors.js';
import { messageListArgs, messageListFilters, type MessageListFilters } from '../../../flags/message-list.js';
import { formatEndpointMessageTable, formatSearchNote } from '../../../format/inbound-messages.js';
import { ListCommand } from '../../../list-command.js';
import type { ListResult, Page } from '../../../paging.js';

/** The `--json` output: the list's, and with --grep what the search read (of its first page). */
type MessageList = ListResult<InboundEndpointMessageOut> & { search?: MessageSearchMeta };

/** Pages of a search read with --all: an empty one with a cursor (a scan that stopped at its limit) is read past. */
const MAX_EMPTY_PAGES = 1000;

export default class InboundMessagesList extends ListCommand<typeof InboundMessagesList> {
  static override summary = "List an inbound endpoint's messages, newest first; --grep finds those whose body or a header holds a text.";
  static override description = `Filters: --event-type (exact, or a glob with *), --answer (the class of the latest answer: 2xx, 4xx, 5xx, none), --since (received at or after; alias --received-after) and --until (received before; alias --received-before). A time is an ISO 8601 date or time or a duration ago (10m, 2h, 1d).

--grep TEXT keeps the messages whose body or one of whose header values holds TEXT (case-sensitive), with the other filters. It searches a window of receipt times: the last 24 hours unless --since or --until say otherwise, at most ${MESSAGE_SEARCH.maxWindowMs / 86_400_000} days (a longer one exits 2 with INVALID_REQUEST), and at most ${MESSAGE_SEARCH.scanLimit.toLocaleString('en')} messages a page, after which the page ends and the next one goes on. Only bodies stored in the database are searched: a body above 256 KiB (stored in pieces), or one in an object store, is found by its headers alone. What was searched is said on stderr.

One page at a time (--limit, server default 50, at most 200); when more rows follow, the command prints the command for the next page. --all walks every page.

With --json the output is { "data": [...], "next_cursor": "..." | null }, each row the API's message row; with --grep also "search", what the first page's search read.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --event-type "pull_request*" --answer 5xx',
    { description: 'The webhooks of one customer in the last two days:', command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --grep cus_4Kq9Zx --since 2d' },
    { description: 'Their ids, for a script:', command: "<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --grep cus_4Kq9Zx --all --json | jq -r '.data[].message_id'" },
  ];

  static override args = {
    id: Args.string({ description: 'Inbound endpoint id (a UUID).', required: true }),
  };

  static override flags = {
    grep: Flags.string({ summary: 'Only messages whose body or a header value holds this text (case-sensitive).' }),
    'event-type': Flags.string({ summary: 'Only messages of this event type (a glob with *).' }),
    answer: Flags.string({ summary: 'Only messages whose latest answer is of this class.', options: [...ANSWER_CLASSES] }),
    since: Flags.string({ summary: 'Only messages received at or after this time: ISO 8601, or a duration ago (10m, 2h, 1d).', aliases: ['received-after'] }),
    until: Flags.string({ summary: 'Only messages received before this time: ISO 8601, or a duration ago.', aliases: ['received-before'] }),
    limit: Flags.integer({ summary: 'Rows per page, 1-200 (server default 50).' }),
    cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
    all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  };

  /** What the first page's search read (with --grep). */
  private search: MessageSearchMeta | undefined;

  private endpointId(): string {
    const id = this.args.id;
    if (!isUuid(id)) throw usageFailure(`"${id}" is not an inbound endpoint id`, 'Inbound endpoint ids are UUIDs; `hookrelay inbound list` shows them.');
    return id.toLowerCase();
  }

  private async page(id: string, filters: MessageListFilters, cursor: string | undefined): Promise<Page<InboundEndpointMessageOut>> {
    let next = cursor;
    for (let empty = 0; ; empty += 1) {
      const query: Partial<InboundEndpointMessagesQuery> = { ...filters };
      if (this.flags.limit !== undefined) query.limit = this.flags.limit;
      if (next !== undefined) query.cursor = next;
      const { data, meta } = await this.client.inboundEndpoints.messages(id, query);
      this.search ??= meta.search;
      const nextCursor = meta.next_cursor ?? null;
      if (!this.flags.all || data.length > 0 || nextCursor === null || empty >= MAX_EMPTY_PAGES) return { data, nextCursor };
      next = nextCursor;
    }
  }

  public async run(): Promise<MessageList> {
    const id = this.endpointId();
    const filters = messageListFilters(this.flags, this.now().getTime());
    const result: MessageList = await this.listRows({
      fetchPage: (cursor) => this.page(id, filters, cursor),
      all: this.flags.all,
      cursor: this.flags.cursor,
      table: (rows) => formatEndpointMessageTable(rows, this.style.out),
      noRows: filters.q === undefined ? 'No messages match.' : 'No messages hold that text.',
      noMoreRows: 'No more messages.',
      nextPage: { label: 'More messages', command: `hookrelay inbound messages list ${id}`, args: messageListArgs(filters, this.flags.limit) },
    });
    if (this.search !== undefined) {
      this.note(formatSearchNote(this.search, this.style.err));
      result.search = this.search;
    }
    return result;
  }
}
