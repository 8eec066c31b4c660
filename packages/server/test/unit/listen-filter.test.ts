import { describe, expect, it } from 'vitest';
import { listenFilterOf, matchesFilter } from '../../src/stream/listen-filter.js';

/** The listen page's and the stream's filter: which messages a listener is sent. */
describe('listen filter', () => {
  const message = (event_type: string | null, path: string) => ({ event_type, path });

  it('is no filter when the query sets neither events nor path: every message matches', () => {
    expect(listenFilterOf({})).toBeNull();
    expect(matchesFilter(null, message(null, '/'))).toBe(true);
  });

  it('events: a list of globs; a message without an event type never matches', () => {
    const filter = listenFilterOf({ events: 'push, checkout.*' });
    expect(filter?.path).toBeNull();
    expect(matchesFilter(filter, message('push', '/x'))).toBe(true);
    expect(matchesFilter(filter, message('checkout.session.completed', '/'))).toBe(true);
    expect(matchesFilter(filter, message('pull_request', '/'))).toBe(false);
    expect(matchesFilter(filter, message(null, '/'))).toBe(false);
    expect(matchesFilter(listenFilterOf({ events: '*' }), message(null, '/'))).toBe(false);
    expect(matchesFilter(listenFilterOf({ events: '*' }), message('', '/'))).toBe(true);
  });

  it('path: one glob of the sub-path, whatever the event type', () => {
    const filter = listenFilterOf({ path: '/github/*' });
    expect(filter?.events).toBeNull();
    expect(matchesFilter(filter, message(null, '/github/push'))).toBe(true);
    expect(matchesFilter(filter, message('push', '/stripe'))).toBe(false);
    // One glob, not a list: the comma is a character of the path.
    expect(matchesFilter(listenFilterOf({ path: '/a,/b' }), message(null, '/a'))).toBe(false);
    expect(matchesFilter(listenFilterOf({ path: '/a,/b' }), message(null, '/a,/b'))).toBe(true);
  });

  it('both: a message must match both', () => {
    const filter = listenFilterOf({ events: 'push', path: '/github/*' });
    expect(matchesFilter(filter, message('push', '/github/x'))).toBe(true);
    expect(matchesFilter(filter, message('push', '/stripe/x'))).toBe(false);
    expect(matchesFilter(filter, message('issues', '/github/x'))).toBe(false);
  });
});
