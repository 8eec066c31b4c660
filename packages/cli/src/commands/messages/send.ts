import type { MessageCreateIn, MessageCreateOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatMessageCreated } from '../../format/messages.js';
import { messageBodyFromFlags } from '../../message-input.js';

export default class MessagesSend extends BaseCommand<typeof MessagesSend> {
  static override summary = 'Send a message to an outbound endpoint; hookrelay signs and delivers it, retrying on failure.';
  static override description = `The body comes from --data, from --file, or from stdin when neither is given and stdin is not a terminal (--file - also reads stdin).

Without --content-type (or with a JSON one such as application/cloudevents+json) the body must be JSON and is sent as the message payload. With any other --content-type it is sent verbatim as text with that Content-Type.

--idempotency-key makes a retried send safe: within 24 hours the same key and body answer the first message; the same key with a different body fails with IDEMPOTENCY_CONFLICT (exit 5).

With --json the output is the API's answer: { "message_id", "status", "created_at" }.`;

  static override examples = [
    `<%= config.bin %> <%= command.id %> --endpoint ep_0123456789abcdef0123456789abcdef --data '{"type":"invoice.paid","id":"in_123"}'`,
    '<%= config.bin %> <%= command.id %> --endpoint ep_0123456789abcdef0123456789abcdef --file event.json --event-type invoice.paid',
    {
      description: 'From another program, safe to retry, printing only the message id:',
      command: `./make-event | <%= config.bin %> <%= command.id %> --endpoint ep_0123456789abcdef0123456789abcdef --idempotency-key order-42 --json | jq -r .message_id`,
    },
    {
      description: 'A body that is not JSON:',
      command: `<%= config.bin %> <%= command.id %> --endpoint ep_0123456789abcdef0123456789abcdef --content-type text/plain --data 'hello'`,
    },
  ];

  static override flags = {
    endpoint: Flags.string({ summary: 'The outbound endpoint to deliver to (ep_ followed by 32 hex characters).', required: true }),
    data: Flags.string({ summary: 'The body, inline: JSON unless --content-type says otherwise.', exclusive: ['file'] }),
    file: Flags.string({ summary: 'Read the body from this file (- for stdin).', exclusive: ['data'] }),
    'event-type': Flags.string({ summary: 'Event type recorded with the message (1-255 characters), e.g. invoice.paid.' }),
    'content-type': Flags.string({
      summary: 'Content-Type of the delivery. JSON types (default application/json) take a JSON body; others send the text as is.',
    }),
    'idempotency-key': Flags.string({ summary: 'Send at most once per key within 24 hours (1-255 characters).' }),
  };

  public async run(): Promise<MessageCreateOut> {
    const body: MessageCreateIn = { endpoint_id: this.flags.endpoint, ...(await messageBodyFromFlags(this.flags)) };
    if (this.flags['event-type'] !== undefined) body.event_type = this.flags['event-type'];
    const key = this.flags['idempotency-key'];
    const { data } = await this.client.messages.create(body, key === undefined ? {} : { idempotencyKey: key });
    this.print(formatMessageCreated(data, this.flags.endpoint, this.style.out));
    return data;
  }
}
