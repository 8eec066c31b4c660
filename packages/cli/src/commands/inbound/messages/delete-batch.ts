import type { InboundMessageDeleteBatchOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { batchIds, DELETE_BATCH_SIZE, mergeBatchResults } from '../../../batch-delete.js';
import { formatBatchDeleteResult } from '../../../format/inbound-messages.js';
import { INBOUND_MESSAGE_ID_DESCRIPTION } from '../../../flags/inbound.js';
import { confirmDeletion } from '../../../confirm-delete.js';

export default class InboundMessagesDeleteBatch extends BaseCommand<typeof InboundMessagesDeleteBatch> {
  static override summary = 'Delete several inbound messages at once; it asks first unless --force.';
  static override description = `Each id gets an outcome: deleted, already_deleted or not_found (an id of another project is not_found). The command succeeds (exit 0) whatever the outcomes; check not_found_count in scripts. More than 100 ids are sent in several requests of 100. Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is the API's batch result: { "results": [{ "message_id", "outcome", "deleted_at"? }], "deleted_count", "already_deleted_count", "not_found_count" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21',
    {
      description: 'Every failed message of the last day, without asking:',
      command:
        "<%= config.bin %> inbound logs --status failed_permanent --since 1d --all --json | jq -r '.data[].message_id' | xargs <%= config.bin %> <%= command.id %> --force",
    },
  ];

  static override strict = false;

  static override args = {
    ids: Args.string({ description: `${INBOUND_MESSAGE_ID_DESCRIPTION} One or more.`, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<InboundMessageDeleteBatchOut> {
    // A variadic argument: oclif gives every positional in argv.
    const { argv } = await this.parse(InboundMessagesDeleteBatch);
    const ids = batchIds(argv.map(String), 'an inbound message');
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: `${ids.length} inbound ${ids.length === 1 ? 'message' : 'messages'}`,
      streams: this.promptStreams,
      question: async () => {
        return `Delete ${ids.length} inbound ${ids.length === 1 ? 'message' : 'messages'}?`;
      },
    });
    const parts: InboundMessageDeleteBatchOut[] = [];
    for (let at = 0; at < ids.length; at += DELETE_BATCH_SIZE) {
      const { data } = await this.client.inboundMessages.deleteBatch(ids.slice(at, at + DELETE_BATCH_SIZE));
      parts.push(data);
    }
    const result = mergeBatchResults(parts);
    this.print(formatBatchDeleteResult(result, this.style.out));
    return result;
  }
}
