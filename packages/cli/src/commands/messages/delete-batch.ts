import type { MessageDeleteBatchOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { batchIds, DELETE_BATCH_SIZE, mergeBatchResults } from '../../batch-delete.js';
import { confirmDeletion } from '../../confirm-delete.js';
import { formatMessageBatchDeleted } from '../../format/messages.js';
import { MESSAGE_ID_DESCRIPTION } from '../../flags/message.js';

export default class MessagesDeleteBatch extends BaseCommand<typeof MessagesDeleteBatch> {
  static override summary = 'Delete several outbound messages at once; it asks first unless --force.';
  static override description = `Each id gets an outcome: deleted, already_deleted or not_found (an id of another project is not_found). The command succeeds (exit 0) whatever the outcomes; check not_found_count in scripts. More than 100 ids are sent in several requests of 100. Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is the API's batch result: { "results": [{ "message_id", "outcome", "deleted_at"? }], "deleted_count", "already_deleted_count", "not_found_count" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21',
    {
      description: 'Every message of one endpoint from the last hour, without asking:',
      command:
        "<%= config.bin %> logs --endpoint ep_0123456789abcdef0123456789abcdef --since 1h --all --json | jq -r '.data[].message_id' | xargs <%= config.bin %> <%= command.id %> --force",
    },
  ];

  static override strict = false;

  static override args = {
    ids: Args.string({ description: `${MESSAGE_ID_DESCRIPTION} One or more.`, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<MessageDeleteBatchOut> {
    // A variadic argument: oclif gives every positional in argv.
    const { argv } = await this.parse(MessagesDeleteBatch);
    const ids = batchIds(argv.map(String), 'a message');
    const what = `${ids.length} ${ids.length === 1 ? 'message' : 'messages'}`;
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: what,
      streams: this.promptStreams,
      question: () => `Delete ${what}?`,
    });
    const parts: MessageDeleteBatchOut[] = [];
    for (let at = 0; at < ids.length; at += DELETE_BATCH_SIZE) {
      const { data } = await this.client.messages.deleteBatch(ids.slice(at, at + DELETE_BATCH_SIZE));
      parts.push(data);
    }
    const result = mergeBatchResults(parts);
    this.print(formatMessageBatchDeleted(result, this.style.out));
    return result;
  }
}
