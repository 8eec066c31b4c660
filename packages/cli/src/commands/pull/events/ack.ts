import type { PullEventAckOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { formatPullEventAck } from '../../../format/pull.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, PULL_EVENT_ID_DESCRIPTION } from '../../../flags/pull.js';

export default class PullEventsAck extends BaseCommand<typeof PullEventsAck> {
  static override summary = 'Acknowledge an event: it is processed, its status becomes delivered.';
  static override description = `Works from stored or fetched. Acknowledging it again succeeds (already_delivered: true, with the first delivered_at). A deleted event cannot be acknowledged (NOT_FOUND, exit 4).

With --json the output is { "event_id", "status": "delivered", "delivered_at", "already_delivered" }.`;

  static override examples = ['<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21'];

  static override args = {
    endpoint: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
    id: Args.string({ description: PULL_EVENT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PullEventAckOut> {
    const { data } = await this.client.pullEvents.ack(this.args.endpoint, this.args.id);
    this.print(formatPullEventAck(data, this.style.out));
    return data;
  }
}
