import type { EventTypeOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { EVENT_TYPE_NAME_DESCRIPTION } from '../../flags/events.js';
import { formatEventType } from '../../format/event-types.js';

export default class EventTypesGet extends BaseCommand<typeof EventTypesGet> {
  static override summary = 'Show one event type: description, status, schema and example.';
  static override description = `hookrelay's own types (hookrelay.endpoint.paused, hookrelay.message.failed) answer too.

With --json the output is the API's event type record.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> invoice.paid',
    {
      description: 'The schema alone, to a file:',
      command: '<%= config.bin %> <%= command.id %> invoice.paid --json | jq .schema > invoice-paid.schema.json',
    },
  ];

  static override args = {
    name: Args.string({ description: EVENT_TYPE_NAME_DESCRIPTION, required: true }),
  };

  public async run(): Promise<EventTypeOut> {
    const { data } = await this.client.eventTypes.get(this.args.name);
    this.print(formatEventType(data, this.style.out, this.now()));
    return data;
  }
}
