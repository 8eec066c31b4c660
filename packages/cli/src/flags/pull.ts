import type { PullEventFilterParams, PullEventStatus } from '@hookrelay/shared';
import { EVENT_TYPE_SOURCES, PULL_EVENT_STATUSES } from '@hookrelay/shared/constants';
import { Flags } from '@oclif/core';
import { parseTimeFlag } from './time.js';

/** Argument descriptions, the same everywhere. */
export const PULL_ENDPOINT_ID_DESCRIPTION = 'Pull endpoint id (a UUID).';
export const PULL_EVENT_ID_DESCRIPTION = 'Event id (a UUID).';

/** Flags shared by `pull create` and `pull update`. */
export const pullEndpointSettingFlags = {
  description: Flags.string({ summary: 'Free text shown in lists (at most 500 characters).' }),
  'retention-days': Flags.integer({ summary: 'Days events are kept, 1-90 (server default 7).' }),
  'max-body-bytes': Flags.integer({
    summary: "Refuse (413) a webhook whose body is larger than this many bytes; at most the server's ingest limit (default 26214400).",
    min: 1,
  }),
  'event-type-source': Flags.string({
    summary: 'Where the event type of each webhook is read: a JSON body field or a header. Needs --event-type-path.',
    options: [...EVENT_TYPE_SOURCES],
  }),
  'event-type-path': Flags.string({
    summary: 'The body field as a dot path (data.type, items.0.kind) or the header name (X-Event-Type).',
  }),
};

/**
 * The event filters of `pull events list` and `delete-all`. `--status` takes a comma list or is
 * repeated; times are ISO 8601 or a duration ago.
 */
export const pullEventFilterFlags = {
  status: Flags.string({
    summary: 'Only events in these statuses (comma list or repeated): stored, fetched, delivered.',
    options: [...PULL_EVENT_STATUSES],
    multiple: true,
    delimiter: ',',
  }),
  'event-type': Flags.string({ summary: 'Only events of this type (exact, case-sensitive).' }),
  since: Flags.string({
    summary: 'Only events received at or after this time: ISO 8601, or a duration ago (10m, 2h, 1d).',
    aliases: ['received-after'],
  }),
  until: Flags.string({
    summary: 'Only events received before this time: ISO 8601, or a duration ago.',
    aliases: ['received-before'],
  }),
};

export interface PullEventFilterFlagValues {
  status?: string[] | undefined;
  'event-type'?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** The filters as the API takes them; statuses once each, in the order given. */
export function pullEventFilters(flags: PullEventFilterFlagValues, now: number): PullEventFilterParams {
  const filters: PullEventFilterParams = {};
  if (flags.status !== undefined && flags.status.length > 0) {
    filters.status = [...new Set(flags.status)] as PullEventStatus[];
  }
  if (flags['event-type'] !== undefined) filters.event_type = flags['event-type'];
  if (flags.since !== undefined) filters.received_after = parseTimeFlag('since', flags.since, now);
  if (flags.until !== undefined) filters.received_before = parseTimeFlag('until', flags.until, now);
  return filters;
}

/** The filters as flags, for the next-page hint (times resolved, so that "10m" does not move on). */
export function pullEventFilterArgs(filters: PullEventFilterParams): string[] {
  const args: string[] = [];
  if (filters.status !== undefined) args.push('--status', Array.isArray(filters.status) ? filters.status.join(',') : String(filters.status));
  if (filters.event_type !== undefined) args.push('--event-type', filters.event_type);
  if (filters.received_after !== undefined) args.push('--since', filters.received_after);
  if (filters.received_before !== undefined) args.push('--until', filters.received_before);
  return args;
}
