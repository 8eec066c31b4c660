import type { MessageOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { CliErrorCode, CliFailure } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { formatMessage } from '../../format/messages.js';
import { MESSAGE_ID_DESCRIPTION } from '../../flags/message.js';
import { parseTimeout, timeoutFlag, WaitDeadline } from '../../wait.js';

/** The statuses after which a message's delivery changes no more (unless someone retries it). */
const FINAL = new Set<MessageOut['status']>(['succeeded', 'failed_permanent']);

export default class MessagesWait extends BaseCommand<typeof MessagesWait> {
  static override summary = 'Wait until an outbound message is delivered (exit 0) or has failed for good (exit 8), at most --timeout (exit 9).';
  static override description = `Reads the message every half second (GET /v1/messages/{id}) until its status is final. With --for delivered (the default) the command exits 0 when the message succeeded and 8 (DELIVERY_FAILED) when it failed for good (failed_permanent, every retry spent); with --for final it exits 0 at either final state, and the status tells which. After --timeout (default 60s) it exits 9 (WAIT_TIMEOUT). An unknown message exits 4 at once, and so does a message deleted while it waits (MESSAGE_DELETED): its waiting deliveries are cancelled. Every request of the wait ends by --timeout: a server that does not answer in time ends it with exit 9 too.

The message's record is printed when the wait ends on a final state (also with exit 8); with --json it is the API's record, as \`messages get --json\` prints it.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    {
      description: 'Send, then wait up to two minutes for the delivery (CI):',
      command:
        '<%= config.bin %> <%= command.id %> "$(<%= config.bin %> messages send --endpoint "$EP" --data \'{"type":"ping"}\' --json | jq -r .message_id)" --timeout 2m',
    },
    { description: 'Wait for the last word, delivered or not:', command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --for final --json | jq -r .status' },
  ];

  static override args = {
    id: Args.string({ description: MESSAGE_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    for: Flags.string({ summary: 'delivered: exit 0 only when delivered (8 when it failed for good); final: exit 0 at either final state.', options: ['delivered', 'final'], default: 'delivered' }),
    timeout: timeoutFlag,
  };

  public async run(): Promise<MessageOut> {
    const timeoutMs = parseTimeout(this.flags.timeout);
    const id = this.args.id;
    const deadline = new WaitDeadline(timeoutMs, `message ${id} reached no final state (succeeded or failed_permanent)`);
    const message = await deadline.pollUntil(async (signal) => {
      const { data } = await this.client.messages.get(id, { signal });
      if (FINAL.has(data.status)) return data;
      // A delete cancels the waiting deliveries: only an attempt already in flight can still end it.
      if (data.deleted_at !== undefined && data.deleted_at !== null && data.status !== 'delivering') {
        throw new CliFailure(
          CliErrorCode.MESSAGE_DELETED,
          `message ${id} was deleted (at ${data.deleted_at}) while ${data.status}: it will never be delivered`,
          ExitCode.NOT_FOUND,
          `\`hookrelay messages get ${id}\` shows its record; send it again with \`hookrelay messages send\`.`,
        );
      }
      return undefined;
    });
    if (message.status === 'failed_permanent' && this.flags.for === 'delivered') {
      // The record is the answer a script inspects (attempts, last error): stdout carries it here too.
      if (this.jsonEnabled()) this.logJson(message);
      else this.print(formatMessage(message, this.style.out, this.now()));
      throw new CliFailure(
        CliErrorCode.DELIVERY_FAILED,
        `message ${id} failed for good after ${message.attempt_count} attempt(s)${message.last_error === null ? '' : `: ${message.last_error}`}`,
        ExitCode.DELIVERY_FAILED,
        `\`hookrelay messages attempts ${id}\` lists every attempt; \`hookrelay messages retry ${id}\` sends it again.`,
      );
    }
    this.print(formatMessage(message, this.style.out, this.now()));
    return message;
  }
}
