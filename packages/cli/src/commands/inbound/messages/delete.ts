import type { InboundMessageDeleteOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { formatInboundMessageDeleted } from '../../../format/inbound-messages.js';
import { INBOUND_MESSAGE_ID_DESCRIPTION } from '../../../flags/inbound.js';
import { confirmDeletion } from '../../../confirm-delete.js';

export default class InboundMessagesDelete extends BaseCommand<typeof InboundMessagesDelete> {
  static override summary = "Delete an inbound message's payload and headers; it asks first unless --force.";
  static override description = `The message record stays (with deleted_at) so logs add up; its body can no longer be read or replayed. Deleting a deleted message succeeds again (already_deleted: true). Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is { "message_id", "deleted_at", "already_deleted" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --force --json',
  ];

  static override args = {
    id: Args.string({ description: INBOUND_MESSAGE_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<InboundMessageDeleteOut> {
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: this.args.id,
      streams: this.promptStreams,
      question: async () => {
        // Fetching first shows what is about to go, and fails with not-found before asking.
        const { data: message } = await this.client.inboundMessages.get(this.args.id);
        const request = `${message.method} ${message.path}${message.query === '' ? '' : `?${message.query}`}`;
        return `Delete inbound message ${message.id} (${request}, received ${message.received_at})?`;
      },
    });
    const { data } = await this.client.inboundMessages.delete(this.args.id);
    this.print(formatInboundMessageDeleted(data, this.style.out));
    return data;
  }
}
