import type { InboundMessageOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { formatInboundMessage, SHOWN_BODY_MAX_BYTES } from '../../../format/inbound-messages.js';

export default class InboundMessagesGet extends BaseCommand<typeof InboundMessagesGet> {
  static override summary = 'Show one inbound message: status, attempts, the request as received and its body.';
  static override description = `The headers are the original lines in order (repeats kept). A JSON body is shown pretty-printed; binary bodies are summarised; a body above 256 KiB is not fetched, only its size shown.

With --json the output is the API's message record; add --base64 to get the body as base64 (the exact bytes) even when it is JSON.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --json | jq .status',
    {
      description: 'The exact payload bytes, into a file:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --json --base64 | jq -r .body | base64 -d > payload.bin',
    },
  ];

  static override args = {
    id: Args.string({ description: 'Inbound message id (a UUID).', required: true }),
  };

  static override flags = {
    base64: Flags.boolean({ summary: 'Return the body as base64 (its exact bytes), also when it is JSON.' }),
  };

  public async run(): Promise<InboundMessageOut> {
    // People see at most a preview: a large body is not fetched for them.
    const shown = this.jsonEnabled() ? {} : { body_max_bytes: SHOWN_BODY_MAX_BYTES };
    const { data } = await this.client.inboundMessages.get(this.args.id, { ...(this.flags.base64 ? { body_encoding: 'base64' as const } : {}), ...shown });
    this.print(formatInboundMessage(data, this.style.out, this.now(), this.jsonEnabled() ? undefined : SHOWN_BODY_MAX_BYTES));
    return data;
  }
}
