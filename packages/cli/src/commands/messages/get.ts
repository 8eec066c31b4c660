import type { MessageOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatMessage } from '../../format/messages.js';
import { MESSAGE_ID_DESCRIPTION } from '../../flags/message.js';

export default class MessagesGet extends BaseCommand<typeof MessagesGet> {
  static override summary = 'Show one outbound message: delivery status, last answer, timings and its payload.';
  static override description = `A deleted message still answers, with deleted_at and without its payload. \`messages attempts\` lists every attempt.

With --json the output is the API's message record; the payload is "payload" (sent as JSON) or "body" (sent as text).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --json | jq -r .status',
  ];

  static override args = {
    id: Args.string({ description: MESSAGE_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<MessageOut> {
    const { data } = await this.client.messages.get(this.args.id);
    this.print(formatMessage(data, this.style.out, this.now()));
    return data;
  }
}
