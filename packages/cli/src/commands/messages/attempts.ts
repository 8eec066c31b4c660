import type { AttemptOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatAttemptTable } from '../../format/messages.js';
import { MESSAGE_ID_DESCRIPTION } from '../../flags/message.js';

export default class MessagesAttempts extends BaseCommand<typeof MessagesAttempts> {
  static override summary = "List a message's delivery attempts, oldest first: when, the answer, latency, error.";
  static override description = `RESPONSE is "-" when no HTTP answer came (timeout, refused connection); ERROR then says why.

With --json the output is the API's array of attempts ({ "attempt_number", "started_at", "response_status", "latency_ms", "error", "response_body"? }).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    "<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --json | jq '.[-1].response_status'",
  ];

  static override args = {
    id: Args.string({ description: MESSAGE_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<AttemptOut[]> {
    const { data } = await this.client.messages.attempts(this.args.id);
    this.print(data.length === 0 ? 'No delivery attempt yet.' : formatAttemptTable(data, this.style.out));
    return data;
  }
}
