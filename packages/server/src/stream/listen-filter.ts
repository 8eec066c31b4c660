import { globListToRegExp, globToRegExp } from '@hookrelay/shared';

/**
 * A listener's filters (listen page and stream `events` / `path`), compiled once per request or
 * connection. Messages that do not match are skipped before anything is sent, but still move the
 * listener's cursor.
 */
export interface ListenFilter {
  /** Event type globs; a message without an event type never matches. */
  events: RegExp | null;
  /** A glob of the message's sub-path. */
  path: RegExp | null;
}

/** The filter of a listen or stream query; null when it sets none (every message matches). */
export function listenFilterOf(query: { events?: string | undefined; path?: string | undefined }): ListenFilter | null {
  if (query.events === undefined && query.path === undefined) return null;
  return {
    events: query.events === undefined ? null : globListToRegExp(query.events),
    path: query.path === undefined ? null : globToRegExp(query.path),
  };
}

export function matchesFilter(filter: ListenFilter | null, message: { event_type: string | null; path: string }): boolean {
  if (filter === null) return true;
  if (filter.events !== null && (message.event_type === null || !filter.events.test(message.event_type))) return false;
  return filter.path === null || filter.path.test(message.path);
}
