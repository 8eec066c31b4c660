import { isUuid, type InboundEndpointMessageOut, type InboundMessageOut } from '@hookrelay/shared';
import { globMatcher } from '@hookrelay/shared/glob';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { usageFailure } from '../../../errors.js';
import { formatInboundMessage, SHOWN_BODY_MAX_BYTES } from '../../../format/inbound-messages.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../../flags/inbound.js';
import { parseTimeout, timeoutFlag, WaitDeadline } from '../../../wait.js';

/** The list's largest page: a burst of new messages between two reads takes few requests. */
const PAGE = 200;

export default class InboundMessagesWait extends BaseCommand<typeof InboundMessagesWait> {
  static override summary = 'Wait for the first inbound message matching --event / --path to arrive at an endpoint (a CI job asserting that a webhook was sent).';
  static override description = `Reads the endpoint's message list (GET /v1/inbound-endpoints/{id}/messages) every half second and returns the first message after --since that matches: the oldest such message, in the endpoint's id order. It only reads: no listener's cursor moves, no listener is registered, and cli-mode messages stay queued for \`listen\` / \`dev\`.

--since now (the default) counts only messages that arrive after the command starts; --since MESSAGE-ID counts those after that message (the id of a message you have seen, or a listener's cursor), so a webhook that came before the command started is not missed. --event and --path are globs (* any run of characters) over the event type and the sub-path after the ingest URL; a message without an event type never matches --event.

The message's record is printed (with --json the API's record, as \`inbound messages get --json\` prints it). After --timeout (default 60s) the command exits 9 (WAIT_TIMEOUT) and prints nothing on stdout; an unknown endpoint exits 4 at once. Every request of the wait ends by --timeout: a server that does not answer in time ends it with exit 9 too.`;

  static override examples = [
    { description: 'The first push to arrive from now on:', command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --event push' },
    {
      description: 'In CI: wait in the background while the system under test runs, then check what it sent:',
      command: '<%= config.bin %> <%= command.id %> "$EP" --event "order.*" --timeout 2m --json > webhook.json & WAITER=$!; ./run-the-system; wait $WAITER && jq .body webhook.json',
    },
    { description: 'Anything under /github after a message already seen:', command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --path "/github*" --since 0190b2c4-8000-7000-8000-000000000001' },
  ];

  static override args = {
    'endpoint-id': Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    event: Flags.string({ summary: 'Only a message whose event type matches this glob (push, order.*).' }),
    path: Flags.string({ summary: 'Only a message whose sub-path matches this glob (/github*).' }),
    since: Flags.string({ summary: 'now (only messages that arrive from here on) or a message id (messages after it).', default: 'now' }),
    timeout: timeoutFlag,
  };

  public async run(): Promise<InboundMessageOut> {
    const endpointId = this.args['endpoint-id'];
    const timeoutMs = parseTimeout(this.flags.timeout);
    const since = this.flags.since.toLowerCase();
    if (since !== 'now' && !isUuid(since)) throw usageFailure(`--since: "${this.flags.since}" is neither now nor a message id`, 'Give now, or the id (a UUID) of a message of this endpoint.');
    const eventMatches = this.flags.event === undefined ? null : globMatcher(this.flags.event);
    const pathMatches = this.flags.path === undefined ? null : globMatcher(this.flags.path);
    const matches = (row: InboundEndpointMessageOut): boolean =>
      (eventMatches === null || (row.event_type !== null && eventMatches(row.event_type))) && (pathMatches === null || pathMatches(row.path));

    const deadline = new WaitDeadline(timeoutMs, `no message${this.describeFilter()} arrived at inbound endpoint ${endpointId}`);
    // Ids grow in the order messages become visible (docs/architecture.md, Ordering): everything
    // up to the newest id seen has been seen, so each read only needs the messages above it.
    let seen: string | null = since === 'now' ? await deadline.within((signal) => this.newestId(endpointId, signal)) : since;
    const found = await deadline.pollUntil(async (signal) => {
      const fresh = await this.messagesAfter(endpointId, seen, signal);
      if (fresh.length === 0) return undefined;
      seen = fresh[0]!.id;
      // Newest first: the last match is the first to have arrived.
      return fresh.filter(matches).at(-1);
    });
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

  private async newestId(endpointId: string, signal: AbortSignal): Promise<string | null> {
    const { data } = await this.client.inboundEndpoints.messages(endpointId, { limit: 1 }, { signal });
    return data[0]?.id ?? null;
  }

  /** The endpoint's messages above `after` (all of them when null), newest first. */
  private async messagesAfter(endpointId: string, after: string | null, signal: AbortSignal): Promise<InboundEndpointMessageOut[]> {
    const rows: InboundEndpointMessageOut[] = [];
    let cursor: string | undefined;
    for (;;) {
      const { data, meta } = await this.client.inboundEndpoints.messages(endpointId, { limit: PAGE, ...(cursor === undefined ? {} : { cursor }) }, { signal });
      for (const row of data) {
        if (after !== null && row.id <= after) return rows;
        rows.push(row);
      }
      if (!meta.has_more || meta.next_cursor === null) return rows;
      cursor = meta.next_cursor;
    }
  }
}
