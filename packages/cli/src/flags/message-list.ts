import type { InboundEndpointMessagesQuery } from '@hookrelay/shared';
import { MESSAGE_SEARCH } from '@hookrelay/shared/constants';
import { usageFailure } from '../errors.js';
import { parseTimeFlag } from './time.js';

/** The filters of `inbound messages list`, as the API's query takes them (without its paging). */
export type MessageListFilters = Omit<Partial<InboundEndpointMessagesQuery>, 'limit' | 'cursor'>;

export interface MessageListFlags {
  grep?: string | undefined;
  'event-type'?: string | undefined;
  answer?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/**
 * The list's filters from its flags at `now`. With --grep the search window is made explicit (the
 * server's default: the day before --until, else before now), so that every page, and the next
 * page's command, search the same one.
 */
export function messageListFilters(flags: MessageListFlags, now: number): MessageListFilters {
  const filters: MessageListFilters = {};
  if (flags.grep !== undefined) {
    if (flags.grep === '') throw usageFailure('--grep: the text to search for must not be empty');
    filters.q = flags.grep;
  }
  if (flags['event-type'] !== undefined) filters.event_type = flags['event-type'];
  if (flags.answer !== undefined) filters.answer = flags.answer as MessageListFilters['answer'];
  if (flags.since !== undefined) filters.received_after = parseTimeFlag('since', flags.since, now);
  if (flags.until !== undefined) filters.received_before = parseTimeFlag('until', flags.until, now);
  if (filters.q !== undefined) {
    filters.received_before ??= new Date(now).toISOString();
    filters.received_after ??= new Date(Date.parse(filters.received_before) - MESSAGE_SEARCH.defaultWindowMs).toISOString();
  }
  return filters;
}

/** The filters as flags for the next-page hint, times resolved (a "10m" would have moved on). */
export function messageListArgs(filters: MessageListFilters, limit: number | undefined): string[] {
  const args: string[] = [];
  if (filters.q !== undefined) args.push('--grep', filters.q);
  if (filters.event_type !== undefined) args.push('--event-type', filters.event_type);
  if (filters.answer !== undefined) args.push('--answer', filters.answer);
  if (filters.received_after !== undefined) args.push('--since', filters.received_after);
  if (filters.received_before !== undefined) args.push('--until', filters.received_before);
  if (limit !== undefined) args.push('--limit', String(limit));
  return args;
}
