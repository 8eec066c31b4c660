import type { EventOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { EVENT_ID_DESCRIPTION } from '../../flags/events.js';
import { formatEvent } from '../../format/events.js';

export default class EventsGet extends BaseCommand<typeof EventsGet> {
  static override summary = 'Show one event: its type, owner and channels, its fan-out (endpoint, message, delivery status) and its payload.';
  static override description = `The fan-out lists every message the event became, by id: the endpoint it goes to and how its delivery stands (status, attempts, last HTTP status, last error). \`messages get ID\` and \`messages attempts ID\` show one message in full; \`messages retry ID\` sends one again.

With --json the output is the API's event record, with "messages" and the payload ("payload" for JSON, "body" for text).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    {
      description: 'The messages of the fan-out that failed for good:',
      command: `<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71 --json | jq -r '.messages[] | select(.status == "failed_permanent") | .message_id'`,
    },
  ];

  static override args = {
    id: Args.string({ description: EVENT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<EventOut> {
    const { data } = await this.client.events.get(this.args.id);
    this.print(formatEvent(data, this.style.out, this.now()));
    return data;
  }
}
