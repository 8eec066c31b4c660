import type { EventCreateIn, EventCreateOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { eventPayloadFromFlags, listFlagValues } from '../../flags/events.js';
import { formatEventAccepted } from '../../format/events.js';

export default class EventsSend extends BaseCommand<typeof EventsSend> {
  static override summary = 'Send an event: hookrelay delivers it to every endpoint subscribed to it, one message each.';
  static override description = `The event reaches every live endpoint of the project whose owner is --owner (none: your own endpoints), whose event types take --type and whose channels, if it has any, include one of --channel. Paused endpoints get their message too; it waits until they resume. No endpoint taking it is not an error: the event is kept with no messages.

The payload is --payload JSON or --body TEXT (with --content-type, default text/plain), each inline, @FILE for a file's contents, or @- for stdin.

--idempotency-key makes a retried send safe: within 24 hours the same key and request answer the first event and fan out nothing again; the same key with a different request fails with IDEMPOTENCY_CONFLICT (exit 5).

With --json the output is the API's answer: { "event_id", "event_type", "owner_id", "channels", "messages": [{ "message_id", "endpoint_id" }], "created_at" }.`;

  static override examples = [
    `<%= config.bin %> <%= command.id %> --type invoice.paid --owner acme --payload '{"invoice":"in_42","amount":1999}'`,
    '<%= config.bin %> <%= command.id %> --type invoice.paid --owner acme --payload @invoice.json --idempotency-key invoice-in_42-paid',
    '<%= config.bin %> <%= command.id %> --type deploy.finished --channel eu --channel staging --payload @- < deploy.json',
    {
      description: 'A body that is not JSON:',
      command: "<%= config.bin %> <%= command.id %> --type report.ready --body @report.csv --content-type text/csv",
    },
    {
      description: 'The message ids of the fan-out:',
      command: `<%= config.bin %> <%= command.id %> --type invoice.paid --owner acme --payload @invoice.json --json | jq -r '.messages[].message_id'`,
    },
  ];

  static override flags = {
    type: Flags.string({ summary: 'The event type (invoice.paid): 1-256 letters, digits and . _ - : /.', required: true, helpValue: 'TYPE' }),
    owner: Flags.string({ summary: 'The customer it is for: only endpoints of this owner receive it. Default: none (your own endpoints).', helpValue: 'OWNER' }),
    channel: Flags.string({
      summary: 'A channel it is sent to, a comma list or repeated: endpoints with channels receive it only when they have one of these.',
      helpValue: 'CHANNEL',
      multiple: true,
      multipleNonGreedy: true,
    }),
    payload: Flags.string({ summary: 'The payload as JSON: inline, @FILE or @- (stdin).', helpValue: 'JSON|@FILE' }),
    body: Flags.string({ summary: 'The payload as text, sent as it is: inline, @FILE or @- (stdin).', helpValue: 'TEXT|@FILE' }),
    'content-type': Flags.string({ summary: 'Content-Type of the deliveries: any type with --body (default text/plain); a +json type with --payload.' }),
    'idempotency-key': Flags.string({ summary: 'Send at most once per key within 24 hours (1-255 characters).' }),
  };

  public async run(): Promise<EventCreateOut> {
    const body: EventCreateIn = { event_type: this.flags.type, ...(await eventPayloadFromFlags(this.flags)) };
    if (this.flags.owner !== undefined) body.owner_id = this.flags.owner;
    const channels = listFlagValues(this.flags.channel);
    if (channels !== undefined) body.channels = channels;
    const key = this.flags['idempotency-key'];
    const { data } = await this.client.events.create(body, key === undefined ? {} : { idempotencyKey: key });
    this.print(formatEventAccepted(data, this.style.out));
    return data;
  }
}
