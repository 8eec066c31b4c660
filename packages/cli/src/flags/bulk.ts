import type { MessageStatus } from '@hookrelay/shared';
import { MESSAGE_STATUSES } from '@hookrelay/shared/constants';
import { Flags } from '@oclif/core';
import { usageFailure } from '../errors.js';
import { listFlagValues } from './events.js';
import { parseTimeFlag } from './time.js';

/** The flags of a bulk retry or replay (`messages retry --since …`, `inbound replay`). */
export const bulkJobFlags = {
  since: Flags.string({
    summary: 'Only messages from this time on: a duration ago (2h, 1d) or an ISO 8601 time. Required: a job never runs over every message.',
    helpValue: 'TIME',
  }),
  until: Flags.string({ summary: 'Only messages before this time (a duration ago or an ISO 8601 time). Default: when the job starts.', helpValue: 'TIME' }),
  'event-type': Flags.string({ summary: 'Only messages of this event type (exact).', helpValue: 'TYPE' }),
  'dry-run': Flags.boolean({ summary: 'Count the messages the job would take, and start nothing.' }),
  yes: Flags.boolean({ char: 'y', summary: `Start a job of more than 100 messages without asking (needed without a terminal).` }),
  wait: Flags.boolean({ summary: 'With --json: wait until the job ends and print the final job (without --json the command always waits).' }),
};

/** `--status`: statuses as a comma list or repeated. */
export function statusFlag(summary: string) {
  return Flags.string({ summary, helpValue: 'STATUS', multiple: true, multipleNonGreedy: true });
}

/** The statuses of `--status`, each known and kept once; undefined when not given. */
export function parseStatuses(values: readonly string[] | undefined): MessageStatus[] | undefined {
  const items = listFlagValues(values);
  if (items === undefined || items.length === 0) return undefined;
  const unknown = items.filter((item) => !(MESSAGE_STATUSES as readonly string[]).includes(item));
  if (unknown.length > 0) throw usageFailure(`--status: ${unknown.map((s) => JSON.stringify(s)).join(', ')} is not a status (${MESSAGE_STATUSES.join(', ')})`);
  return items as MessageStatus[];
}

/** The job's window from --since (required) and --until, as the RFC 3339 times the API takes. */
export function bulkWindow(flags: { since?: string | undefined; until?: string | undefined }, now: number): { from: string; to: string | undefined } {
  if (flags.since === undefined) throw usageFailure('--since is required: a bulk job takes the messages from a time on (2h, 1d, 2026-05-01T00:00:00Z)');
  return { from: parseTimeFlag('since', flags.since, now), to: flags.until === undefined ? undefined : parseTimeFlag('until', flags.until, now) };
}

/** A job id argument's description, the same everywhere. */
export const JOB_ID_DESCRIPTION = 'Bulk job id (a UUID, from `messages retry --since …`, `inbound replay` or `jobs list`).';
