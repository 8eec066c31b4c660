import type { InboundReplayOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { formatReplay } from '../../../format/inbound-messages.js';

export default class InboundMessagesReplay extends BaseCommand<typeof InboundMessagesReplay> {
  static override summary = 'Send an inbound message again: to every connected `hookrelay listen` (cli mode) or to the forward URL.';
  static override description = `In cli mode the message is pushed again to every listener connected by WebSocket, which forwards it even though it was delivered before; the listeners' cursors do not move back, and a listener that is polling does not see it.

With --json the output is { "message_id", "replay_count", "status" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --json | jq .replay_count',
  ];

  static override args = {
    id: Args.string({ description: 'Inbound message id (a UUID).', required: true }),
  };

  public async run(): Promise<InboundReplayOut> {
    const { data } = await this.client.inboundMessages.replay(this.args.id);
    this.print(formatReplay(data, this.style.out));
    return data;
  }
}
