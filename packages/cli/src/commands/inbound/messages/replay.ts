import type { InboundReplayOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { replayEditsFromFlags } from '../../../flags/edits.js';
import { formatReplay } from '../../../format/inbound-messages.js';

export default class InboundMessagesReplay extends BaseCommand<typeof InboundMessagesReplay> {
  static override summary = 'Send an inbound message again: to every connected `hookrelay listen` (cli mode) or to the forward URL; with edits, as an edited copy.';
  static override description = `In cli mode the message is pushed again to every listener connected by WebSocket, which forwards it even though it was delivered before; the listeners' cursors do not move back, and a listener that is polling does not see it.

With --set, --header or --body the server stores an edited copy instead: a new message of the same endpoint (replay_of the original, edited: true), which every listener receives and a forward-mode endpoint delivers like any webhook; the original stays as it was. --set edits the JSON body (a dotted path, array items by index, and a value read as JSON when it is a JSON scalar, else as text, as \`trigger --set\` does); --body replaces the body whole (TEXT, @FILE or @- for stdin, sent as UTF-8 text); --header "Name: value" sets a header, "Name:" removes it, "Name;" sends it empty. The copy goes without the original's signature headers, which no longer match, unless --resign has the server sign it with the endpoint's stored secret, in its scheme; listen and dev mark it "(edited)" or "(edited, unsigned)".

With --json the output is { "message_id", "replay_count", "status" }; for an edited copy also "replay_of", "edited" and "signed", and message_id is the copy's.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --json | jq .replay_count',
    {
      description: 'The same Stripe event with another amount, signed by the server as Stripe would:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --set data.object.amount=5000 --resign',
    },
    {
      description: 'A new body from a file, another event header, no User-Agent:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --body @push.json --header "X-GitHub-Event: push" --header "User-Agent:"',
    },
  ];

  static override args = {
    id: Args.string({ description: 'Inbound message id (a UUID).', required: true }),
  };

  static override flags = {
    set: Flags.string({ summary: 'Edit the JSON body: PATH=VALUE (data.object.amount=5000); repeatable.', multiple: true, exclusive: ['body'] }),
    body: Flags.string({ summary: 'Replace the body whole: TEXT, @FILE or @- (stdin).', helpValue: 'TEXT|@FILE', exclusive: ['set'] }),
    header: Flags.string({ summary: 'Set a header ("Name: value"), remove it ("Name:"), or send it empty ("Name;"); repeatable.', multiple: true }),
    resign: Flags.boolean({ summary: "Have the server sign the edited copy with the endpoint's stored secret (needs an edit)." }),
  };

  public async run(): Promise<InboundReplayOut> {
    const edits = await replayEditsFromFlags(this.flags);
    const { data } = await this.client.inboundMessages.replay(this.args.id, edits);
    this.print(formatReplay(data, this.style.out, this.args.id));
    return data;
  }
}
