import type { PullDeleteAllOut, PullEventFilterParams } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { confirmDeletion } from '../../../confirm-delete.js';
import { describeFailure, failureToJson } from '../../../errors.js';
import { formatDeleteAll } from '../../../format/pull.js';
import { committedByError, deleteAllInRounds } from '../../../pull-events.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, pullEventFilterFlags, pullEventFilters } from '../../../flags/pull.js';
import { terminalText } from '../../../format/text.js';

function describeFilters(filters: PullEventFilterParams): string {
  const statuses = filters.status === undefined ? 'stored, fetched and delivered' : [filters.status].flat().join(', ');
  const parts = [`every ${statuses} event`];
  if (filters.event_type !== undefined) parts.push(`of type ${filters.event_type}`);
  if (filters.received_after !== undefined) parts.push(`received at or after ${filters.received_after}`);
  if (filters.received_before !== undefined) parts.push(`received before ${filters.received_before}`);
  return parts.join(' ');
}

export default class PullEventsDeleteAll extends BaseCommand<typeof PullEventsDeleteAll> {
  static override summary = 'Delete every event of a pull endpoint that matches the filters (all statuses by default); it asks first unless --force.';
  static override description = `Without --status every event matches, whatever its status (the list's default of stored does not apply here). The oldest go first, at most 1000 per request; the command repeats requests until nothing matches, or until --limit events are deleted. Without a terminal to ask on (scripts, CI), --force is required.

It prints "deleted N" and then the deleted ids, one per line. If the server fails part-way (DELETE_FAILED or PARTIAL_DELETE_FAILURE, exit 6), the events deleted before the failure stay deleted and their ids are still reported: on stderr, and under --json in the error object's "data".

With --json the output is { "deleted", "deleted_event_ids" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --status delivered --until 7d --force',
    "<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --event-type ping --force --json | jq .deleted",
  ];

  static override args = {
    endpoint: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    ...pullEventFilterFlags,
    limit: Flags.integer({ summary: 'Delete at most this many events (default: every match).', min: 1 }),
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  /** What was committed when the run failed, for the error output. */
  private committed: PullDeleteAllOut | undefined;

  public async run(): Promise<PullDeleteAllOut> {
    const filters = pullEventFilters(this.flags, this.now().getTime());
    const what = describeFilters(filters);
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: `${what} of pull endpoint ${this.args.endpoint}`,
      streams: this.promptStreams,
      question: async () => {
        const { data: endpoint } = await this.client.pullEndpoints.get(this.args.endpoint);
        return `Delete ${what} of pull endpoint ${endpoint.id} ("${endpoint.name}")?`;
      },
    });
    const { result, error } = await deleteAllInRounds(
      async (limit) => (await this.client.pullEvents.deleteAll(this.args.endpoint, { ...filters, limit })).data,
      this.flags.limit,
    );
    if (error !== undefined) {
      if (result.deleted > 0 || committedByError(error) !== undefined) this.committed = result;
      throw error;
    }
    this.print(formatDeleteAll(result, this.style.out));
    return result;
  }

  /** Under --json the error object carries what was committed, as the API's error envelope does. */
  public override toErrorJson(error: unknown): unknown {
    const json = failureToJson(describeFailure(error));
    return this.committed === undefined ? json : { ...json, data: this.committed };
  }

  public override async catch(error: Error & { exitCode?: number }): Promise<never> {
    if (this.committed !== undefined && !this.jsonEnabled()) {
      const { deleted, deleted_event_ids: ids } = this.committed;
      process.stderr.write(
        `${this.style.err.yellow(`deleted ${deleted} ${deleted === 1 ? 'event' : 'events'} before the failure`)}${ids.length > 0 ? ':' : ''}\n`,
      );
      for (const id of ids) process.stderr.write(`${terminalText(id)}\n`);
    }
    return super.catch(error);
  }
}
