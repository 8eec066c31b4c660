import type { MessageRetryOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatMessageRetry } from '../../format/messages.js';
import { MESSAGE_ID_DESCRIPTION } from '../../flags/message.js';

export default class MessagesRetry extends BaseCommand<typeof MessagesRetry> {
  static override summary = 'Deliver a message again now, with the whole retry schedule, whatever its status.';
  static override description = `A message waiting for its next retry is sent at once; a finished one (succeeded or failed_permanent) is sent again. A deleted message cannot be retried (NOT_FOUND, exit 4).

With --json the output is { "message_id", "status" }: queued, or delivering when an attempt is in flight (the message is then delivered again once it ends).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    {
      description: 'Retry every permanently failed message of the last day:',
      command:
        "<%= config.bin %> logs --status failed_permanent --since 1d --all --json | jq -r '.data[].message_id' | xargs -n1 <%= config.bin %> <%= command.id %>",
    },
  ];

  static override args = {
    id: Args.string({ description: MESSAGE_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<MessageRetryOut> {
    const { data } = await this.client.messages.retry(this.args.id);
    this.print(formatMessageRetry(data, this.style.out));
    return data;
  }
}
