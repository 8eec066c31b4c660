import type { InboundEndpointMessageOut } from '@hookrelay/shared';
import type { HookrelayClient } from '@hookrelay/shared/client';
import { globMatcher } from '@hookrelay/shared/glob';
import type { WaitDeadline } from './wait.js';

/** The list's largest page: a burst of new messages between two reads takes few requests. */
const PAGE = 200;

/** What a message must match: globs over its event type and its sub-path; undefined matches all. */
export interface InboundMessageFilter {
  event?: string | undefined;
  path?: string | undefined;
}

/** Whether a row matches; a message without an event type never matches an event glob. */
export function inboundMessageMatcher(filter: InboundMessageFilter): (row: InboundEndpointMessageOut) => boolean {
  const eventMatches = filter.event === undefined ? null : globMatcher(filter.event);
  const pathMatches = filter.path === undefined ? null : globMatcher(filter.path);
  return (row) => (eventMatches === null || (row.event_type !== null && eventMatches(row.event_type))) && (pathMatches === null || pathMatches(row.path));
}

/**
 * The oldest message above the id `after` that matches, waited for until `deadline`
 * (`inbound messages wait`, the MCP server's wait_for_message). It only reads the endpoint's list:
 * no listener's cursor moves. Ids grow in the order messages become visible (docs/architecture.md,
 * Ordering), so everything up to the newest id seen has been seen and each read only needs the
 * messages above it. `cancel` ends the wait early, with its reason; `beforeRead` runs before each
 * read (a report of progress).
 */
export async function waitForInboundMessage(
  client: HookrelayClient,
  endpointId: string,
  after: string,
  matches: (row: InboundEndpointMessageOut) => boolean,
  deadline: WaitDeadline,
  cancel?: AbortSignal,
  beforeRead?: () => Promise<void>,
): Promise<InboundEndpointMessageOut> {
  let seen = after;
  return deadline.pollUntil(async (signal) => {
    cancel?.throwIfAborted();
    await beforeRead?.();
    const read = await readAfter(client, endpointId, seen, matches, cancel === undefined ? signal : AbortSignal.any([signal, cancel]));
    if (read.newest !== undefined) seen = read.newest;
    return read.oldestMatch;
  });
}

/**
 * The endpoint's messages above `after`, read newest first down to it: the newest id among them
 * and the oldest that `matches`. Only those two are kept, however many pages a wait from the
 * endpoint's first message reads.
 */
async function readAfter(
  client: HookrelayClient,
  endpointId: string,
  after: string,
  matches: (row: InboundEndpointMessageOut) => boolean,
  signal: AbortSignal,
): Promise<{ newest: string | undefined; oldestMatch: InboundEndpointMessageOut | undefined }> {
  let newest: string | undefined;
  let oldestMatch: InboundEndpointMessageOut | undefined;
  let cursor: string | undefined;
  for (;;) {
    const { data, meta } = await client.inboundEndpoints.messages(endpointId, { limit: PAGE, ...(cursor === undefined ? {} : { cursor }) }, { signal });
    for (const row of data) {
      if (row.id <= after) return { newest, oldestMatch };
      newest ??= row.id;
      if (matches(row)) oldestMatch = row;
    }
    if (!meta.has_more || meta.next_cursor === null) return { newest, oldestMatch };
    cursor = meta.next_cursor;
  }
}
