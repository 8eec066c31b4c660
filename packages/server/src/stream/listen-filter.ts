import { globListMatcher, globMatcher, type ListenFilter } from '@hookrelay/shared';

/**
 * A listener's filters (listen page and stream `events` / `path`), compiled once per request or
 * connection. Messages that do not match are skipped before anything is sent, but still move the
 * listener's cursor. The globs come from requests: they are matched without regular expressions.
 */
export interface MessageFilter {
  /** Event type globs; a message without an event type never matches. */
  events: ((eventType: string) => boolean) | null;
  /** A glob of the message's sub-path. */
  path: ((path: string) => boolean) | null;
}

/** The filter of a listen or stream query; null when it sets none (every message matches). */
export function listenFilterOf(query: ListenFilter): MessageFilter | null {
  if (query.events === undefined && query.path === undefined) return null;
  return {
    events: query.events === undefined ? null : globListMatcher(query.events),
    path: query.path === undefined ? null : globMatcher(query.path),
  };
}

export function matchesFilter(filter: MessageFilter | null, message: { event_type: string | null; path: string }): boolean {
  if (filter === null) return true;
  if (filter.events !== null && (message.event_type === null || !filter.events(message.event_type))) return false;
  return filter.path === null || filter.path(message.path);
}
