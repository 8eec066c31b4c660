import type { RejectionEndpointKind, RejectionOut, RejectionsQuery } from '@hookrelay/shared';
import { isUuid } from '@hookrelay/shared/ids';
import { REJECTION_REASONS } from '@hookrelay/shared/rejections';
import { Args, Flags, type Command } from '@oclif/core';
import { usageFailure } from './errors.js';
import { formatRejectionRow, formatRejectionTable } from './format/rejections.js';
import { ListCommand } from './list-command.js';
import type { ListResult, Page } from './paging.js';
import { parseTimeFlag } from './flags/time.js';

type Filters = Omit<Partial<RejectionsQuery>, 'limit' | 'cursor'>;

/** What `inbound rejections` and `pull rejections` say, with the noun of their endpoint. */
export function rejectionsHelp(noun: 'inbound' | 'pull'): { summary: string; description: string; examples: Command.Example[] } {
  const id = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
  return {
    summary: `List the requests ${noun === 'inbound' ? 'an inbound' : 'a pull'} endpoint's ingest URL refused, newest first, with why.`,
    description: `Every request refused at the endpoint's ingest URL (bad or missing signature, timestamp out of tolerance, static token, IP allowlist, body too large, paused, method) is kept with a reason and a sentence saying what to check; the last 1,000 per endpoint. A refusal over the recording rate (10 a second per endpoint) is only counted.

Filters: --reason, --since (received at or after; alias --received-after) and --until (received before; alias --received-before). A time is an ISO 8601 date or time or a duration ago (10m, 2h, 1d).

One page at a time (--limit, server default 50, at most 200); when more rows follow, the command prints the command for the next page. --all walks every page. --follow prints new refusals as they come (polls every 2 s) until Ctrl-C.

With --json the output is { "data": [...], "next_cursor": "..." | null }, each row the API's refused-request record; with --follow, one JSON object per line (NDJSON).`,
    examples: [
      `<%= config.bin %> <%= command.id %> ${id}`,
      `<%= config.bin %> <%= command.id %> ${id} --reason signature_mismatch --since 1h`,
      { description: 'Watch refusals while configuring a provider:', command: `<%= config.bin %> <%= command.id %> ${id} --follow` },
      { description: 'The reasons of the last 20, as JSON:', command: `<%= config.bin %> <%= command.id %> ${id} --limit 20 --json | jq -r '.data[].reason'` },
    ],
  };
}

export const rejectionsFlags = {
  reason: Flags.string({ summary: 'Only refusals for this reason.', options: [...REJECTION_REASONS] }),
  since: Flags.string({ summary: 'Only refusals at or after this time: ISO 8601, or a duration ago (10m, 2h, 1d).', aliases: ['received-after'] }),
  until: Flags.string({ summary: 'Only refusals before this time: ISO 8601, or a duration ago.', aliases: ['received-before'] }),
  limit: Flags.integer({ summary: 'Rows per page, 1-200 (server default 50).' }),
  cursor: Flags.string({ summary: 'Cursor of the page to show, from the previous page.' }),
  all: Flags.boolean({ summary: 'Fetch every page, from --cursor if given.' }),
  follow: Flags.boolean({ summary: 'Keep printing new refusals as they come (polls every 2 s) until Ctrl-C.', exclusive: ['cursor', 'all', 'until'] }),
};

export const rejectionsArgs = (description: string) => ({ id: Args.string({ description, required: true }) });

/** The list of refused requests of one endpoint; the command says which kind. */
export abstract class RejectionsCommand<T extends typeof Command> extends ListCommand<T> {
  protected abstract readonly kind: RejectionEndpointKind;

  private get options(): { reason?: string; since?: string; until?: string; limit?: number; cursor?: string; all: boolean; follow: boolean } {
    return this.flags as never;
  }

  private endpointId(): string {
    const id = (this.args as { id: string }).id;
    if (!isUuid(id)) throw usageFailure(`"${id}" is not a ${this.kind} endpoint id`, `${this.kind === 'inbound' ? 'Inbound' : 'Pull'} endpoint ids are UUIDs; \`hookrelay ${this.kind} list\` shows them.`);
    return id.toLowerCase();
  }

  private filters(): Filters {
    const flags = this.options;
    const now = this.now().getTime();
    const filters: Filters = {};
    if (flags.reason !== undefined) filters.reason = flags.reason as Filters['reason'];
    if (flags.since !== undefined) filters.received_after = parseTimeFlag('since', flags.since, now);
    if (flags.until !== undefined) filters.received_before = parseTimeFlag('until', flags.until, now);
    return filters;
  }

  private async page(id: string, filters: Filters, cursor: string | undefined, limit: number | undefined): Promise<Page<RejectionOut>> {
    const query: Partial<RejectionsQuery> = { ...filters };
    if (limit !== undefined) query.limit = limit;
    if (cursor !== undefined) query.cursor = cursor;
    const endpoints = this.kind === 'inbound' ? this.client.inboundEndpoints : this.client.pullEndpoints;
    const { data, meta } = await endpoints.rejections(id, query);
    return { data, nextCursor: meta.next_cursor ?? null };
  }

  public async run(): Promise<ListResult<RejectionOut> | void> {
    const id = this.endpointId();
    const filters = this.filters();
    const flags = this.options;
    if (flags.follow) {
      await this.followLog({
        fetchPage: ({ since, cursor, limit }) => this.page(id, since === undefined ? filters : { ...filters, received_after: since }, cursor, limit),
        since: filters.received_after,
        limit: flags.limit,
        key: (row) => row.id,
        time: (row) => row.received_at,
        line: (row) => formatRejectionRow(row, this.style.out),
        beforeFirstPage: 'mark-seen',
      });
      return;
    }
    return this.listRows({
      fetchPage: (cursor) => this.page(id, filters, cursor, flags.limit),
      all: flags.all,
      cursor: flags.cursor,
      table: (rows) => formatRejectionTable(rows, this.style.out),
      noRows: 'No refused requests match.',
      noMoreRows: 'No more refused requests.',
      nextPage: { label: 'More refused requests', command: `hookrelay ${this.kind} rejections ${id}`, args: this.filterArgs(filters) },
    });
  }

  /** The filters as flags for the next-page hint, times resolved (a "10m" would have moved on). */
  private filterArgs(filters: Filters): string[] {
    const args: string[] = [];
    if (filters.reason !== undefined) args.push('--reason', filters.reason);
    if (filters.received_after !== undefined) args.push('--since', filters.received_after);
    if (filters.received_before !== undefined) args.push('--until', filters.received_before);
    if (this.options.limit !== undefined) args.push('--limit', String(this.options.limit));
    return args;
  }
}
