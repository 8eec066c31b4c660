import type { PullEventDeleteBatchOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { batchIds, DELETE_BATCH_SIZE, mergeBatchResults } from '../../../batch-delete.js';
import { confirmDeletion } from '../../../confirm-delete.js';
import { formatPullEventBatchDeleted } from '../../../format/pull.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, PULL_EVENT_ID_DESCRIPTION } from '../../../flags/pull.js';

export default class PullEventsDeleteBatch extends BaseCommand<typeof PullEventsDeleteBatch> {
  static override summary = 'Delete several events of a pull endpoint at once; it asks first unless --force.';
  static override description = `Each id gets an outcome: deleted, already_deleted or not_found (an event of another endpoint is not_found). The command succeeds (exit 0) whatever the outcomes; check not_found_count in scripts. More than 100 ids are sent in several requests of 100. Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is the API's batch result: { "results": [{ "event_id", "outcome", "deleted_at"? }], "deleted_count", "already_deleted_count", "not_found_count" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21 0190b2c4-8b02-7a15-8c44-1d2e3f4a5b6c',
    {
      description: 'Delete every delivered event, without asking:',
      command: "<%= config.bin %> pull events list $EP --status delivered --all --json | jq -r '.data[].id' | xargs <%= config.bin %> <%= command.id %> $EP --force",
    },
  ];

  static override strict = false;

  static override args = {
    endpoint: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
    ids: Args.string({ description: `${PULL_EVENT_ID_DESCRIPTION} One or more.`, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<PullEventDeleteBatchOut> {
    // A variadic argument: oclif gives every positional in argv, the endpoint first.
    const { argv } = await this.parse(PullEventsDeleteBatch);
    const ids = batchIds(argv.slice(1).map(String), 'an event');
    const what = `${ids.length} ${ids.length === 1 ? 'event' : 'events'}`;
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: what,
      streams: this.promptStreams,
      question: async () => {
        const { data: endpoint } = await this.client.pullEndpoints.get(this.args.endpoint);
        return `Delete ${what} of pull endpoint "${endpoint.name}"?`;
      },
    });
    const parts: PullEventDeleteBatchOut[] = [];
    for (let at = 0; at < ids.length; at += DELETE_BATCH_SIZE) {
      const { data } = await this.client.pullEvents.deleteBatch(this.args.endpoint, ids.slice(at, at + DELETE_BATCH_SIZE));
      parts.push(data);
    }
    const result = mergeBatchResults(parts);
    this.print(formatPullEventBatchDeleted(result, this.style.out));
    return result;
  }
}
