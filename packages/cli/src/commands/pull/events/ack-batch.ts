import type { PullEventAckBatchOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { batchIds } from '../../../batch-delete.js';
import { formatPullEventAckBatch } from '../../../format/pull.js';
import { ACK_BATCH_SIZE, mergeAckResults } from '../../../pull-events.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, PULL_EVENT_ID_DESCRIPTION } from '../../../flags/pull.js';

export default class PullEventsAckBatch extends BaseCommand<typeof PullEventsAckBatch> {
  static override summary = 'Acknowledge several events of a pull endpoint at once.';
  static override description = `Each id gets an outcome: delivered, already_delivered or not_found (a deleted event, or one of another endpoint, is not_found). The command succeeds (exit 0) whatever the outcomes; check not_found_count in scripts. More than 1000 ids are sent in several requests.

With --json the output is the API's result: { "results": [{ "event_id", "outcome", "delivered_at"? }], "delivered_count", "already_delivered_count", "not_found_count" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21 0190b2c4-8b02-7a15-8c44-1d2e3f4a5b6c',
    {
      description: 'Acknowledge every fetched event:',
      command: "<%= config.bin %> pull events list $EP --status fetched --all --json | jq -r '.data[].id' | xargs <%= config.bin %> <%= command.id %> $EP",
    },
  ];

  static override strict = false;

  static override args = {
    endpoint: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
    ids: Args.string({ description: `${PULL_EVENT_ID_DESCRIPTION} One or more.`, required: true }),
  };

  public async run(): Promise<PullEventAckBatchOut> {
    // A variadic argument: oclif gives every positional in argv, the endpoint first.
    const { argv } = await this.parse(PullEventsAckBatch);
    const ids = batchIds(argv.slice(1).map(String), 'an event');
    const parts: PullEventAckBatchOut[] = [];
    for (let at = 0; at < ids.length; at += ACK_BATCH_SIZE) {
      const { data } = await this.client.pullEvents.ackBatch(this.args.endpoint, ids.slice(at, at + ACK_BATCH_SIZE));
      parts.push(data);
    }
    const result = mergeAckResults(parts);
    this.print(formatPullEventAckBatch(result, this.style.out));
    return result;
  }
}
