import type { MessageDeleteOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { confirmDeletion } from '../../confirm-delete.js';
import { formatMessageDeleted } from '../../format/messages.js';
import { MESSAGE_ID_DESCRIPTION } from '../../flags/message.js';

export default class MessagesDelete extends BaseCommand<typeof MessagesDelete> {
  static override summary = "Delete an outbound message's payload and cancel its waiting deliveries; it asks first unless --force.";
  static override description = `The record, its status and its attempts stay (with deleted_at) so logs add up. An attempt already in flight finishes but is never retried. Deleting a deleted message succeeds again (already_deleted: true). Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is { "message_id", "deleted_at", "already_deleted" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --force --json',
  ];

  static override args = {
    id: Args.string({ description: MESSAGE_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<MessageDeleteOut> {
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: `message ${this.args.id}`,
      streams: this.promptStreams,
      // Fetching first shows what is about to go, and fails with not-found before asking.
      question: async () => {
        const { data: message } = await this.client.messages.get(this.args.id);
        return `Delete message ${message.message_id} (${message.status}, to ${message.endpoint}, created ${message.created_at})?`;
      },
    });
    const { data } = await this.client.messages.delete(this.args.id);
    this.print(formatMessageDeleted(data, this.style.out));
    return data;
  }
}
