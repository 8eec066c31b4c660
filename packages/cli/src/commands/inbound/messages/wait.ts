import type { InboundMessageOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { formatInboundMessage, SHOWN_BODY_MAX_BYTES } from '../../../format/inbound-messages.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../../flags/inbound.js';
import { waitStartCursor } from '../../../flags/time.js';
import { inboundMessageMatcher, waitForInboundMessage } from '../../../inbound-wait.js';
import { parseTimeout, timeoutFlag, WaitDeadline } from '../../../wait.js';

export default class InboundMessagesWait extends BaseCommand<typeof InboundMessagesWait> {
  static override summary = 'Wait for the first inbound message matching --event / --path to arrive at an endpoint (a CI job asserting that a webhook was sent).';
  static override description = `Reads the endpoint's message list (GET /v1/inbound-endpoints/{id}/messages) every half second and returns the first message from --since on that matches: the oldest such message, in the endpoint's id order. It only reads: no listener's cursor moves, no listener is registered, and cli-mode messages stay queued for \`listen\` / \`dev\`.

--since takes what \`listen --since\` takes, with the same meaning: a duration (10m, 2h: what arrived that long ago and since), an ISO 8601 / RFC 3339 time, or a message id (that message and those after it); --from-start counts every stored message. --since now, the default, counts what arrives from the moment the CLI process started, less one second for a server clock a little behind this machine's: a command started in the background just before the system under test sends its webhook finds it, however long the CLI takes to load. --event and --path are globs (* any run of characters) over the event type and the sub-path after the ingest URL; a message without an event type never matches --event.

The message's record is printed (with --json the API's record, as \`inbound messages get --json\` prints it). After --timeout (default 60s) the command exits 9 (WAIT_TIMEOUT) and prints nothing on stdout; an unknown endpoint exits 4 at once. Every request of the wait ends by --timeout: a server that does not answer in time ends it with exit 9 too.`;

  static override examples = [
    { description: 'The first push to arrive from now on:', command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --event push' },
    {
      description: 'In CI: wait in the background while the system under test runs, then check what it sent:',
      command: '<%= config.bin %> <%= command.id %> "$EP" --event "order.*" --timeout 2m --json > webhook.json & WAITER=$!; ./run-the-system; wait $WAITER && jq .body webhook.json',
    },
    { description: 'Anything under /github from a given message on (that message included):', command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --path "/github*" --since 0190b2c4-8000-7000-8000-000000000001' },
    { description: 'A push of the last two hours, or one still to come:', command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --event push --since 2h' },
  ];

  static override args = {
    'endpoint-id': Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    event: Flags.string({ summary: 'Only a message whose event type matches this glob (push, order.*).' }),
    path: Flags.string({ summary: 'Only a message whose sub-path matches this glob (/github*).' }),
    since: Flags.string({
      summary: 'now (from the start of the command, less 1s), a duration (10m, 2h), an ISO 8601 time, or a message id (that message first).',
      default: 'now',
      exclusive: ['from-start'],
    }),
    'from-start': Flags.boolean({ summary: "Count every stored message, from the endpoint's first.", exclusive: ['since'] }),
    timeout: timeoutFlag,
  };

  public async run(): Promise<InboundMessageOut> {
    const endpointId = this.args['endpoint-id'];
    const timeoutMs = parseTimeout(this.flags.timeout);
    // Parsed before any request: a bad --since is a usage error, whatever the server would say.
    const start = waitStartCursor({ since: this.flags.since, fromStart: this.flags['from-start'] }, this.now().getTime(), performance.timeOrigin);
    const matches = inboundMessageMatcher({ event: this.flags.event, path: this.flags.path });
    const deadline = new WaitDeadline(timeoutMs, `no message${this.describeFilter()} arrived at inbound endpoint ${endpointId}`);
    const found = await waitForInboundMessage(this.client, endpointId, start, matches, deadline);
    // People see at most a preview: a large body is not fetched for them.
    const shown = this.jsonEnabled() ? {} : { body_max_bytes: SHOWN_BODY_MAX_BYTES };
    const { data } = await deadline.within((signal) => this.client.inboundMessages.get(found.id, shown, { signal }));
    this.print(formatInboundMessage(data, this.style.out, this.now(), this.jsonEnabled() ? undefined : SHOWN_BODY_MAX_BYTES));
    return data;
  }

  private describeFilter(): string {
    const parts = [this.flags.event === undefined ? '' : ` with event ${this.flags.event}`, this.flags.path === undefined ? '' : ` at path ${this.flags.path}`];
    return parts.join('');
  }
}
