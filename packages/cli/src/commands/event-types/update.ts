import type { EventTypeOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { usageFailure } from '../../errors.js';
import { EVENT_TYPE_NAME_DESCRIPTION, eventTypeBody, eventTypeSettingFlags } from '../../flags/events.js';
import { formatEventType } from '../../format/event-types.js';
import { terminalText } from '../../format/text.js';

export default class EventTypesUpdate extends BaseCommand<typeof EventTypesUpdate> {
  static override summary = 'Change an event type; settings not given keep their values.';
  static override description = `A new --schema must accept the stored example, and a new --example must match the stored schema (or the new one). --clear-schema and --clear-example remove them. --archived marks the type as no longer sent (it stays in the catalogue), --no-archived makes it active again. The name cannot change: delete and create instead.

With --json the output is the API's event type record.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> invoice.paid --schema @invoice-paid.v2.schema.json --example @invoice-paid.v2.example.json',
    '<%= config.bin %> <%= command.id %> invoice.paid --description "An invoice was paid in full"',
    '<%= config.bin %> <%= command.id %> invoice.legacy --archived',
    '<%= config.bin %> <%= command.id %> invoice.paid --clear-schema',
  ];

  static override args = {
    name: Args.string({ description: EVENT_TYPE_NAME_DESCRIPTION, required: true }),
  };

  static override flags = {
    ...eventTypeSettingFlags,
    'clear-schema': Flags.boolean({ summary: 'Remove the schema.', exclusive: ['schema'] }),
    'clear-example': Flags.boolean({ summary: 'Remove the example.', exclusive: ['example'] }),
    archived: Flags.boolean({ summary: 'Mark it archived (no longer sent); --no-archived makes it active again.', allowNo: true }),
  };

  public async run(): Promise<EventTypeOut> {
    const body = await eventTypeBody(this.flags);
    if (Object.keys(body).length === 0) {
      throw usageFailure('nothing to update', 'Give at least one of --description, --schema, --example, --clear-schema, --clear-example, --archived, --no-archived.');
    }
    const { data } = await this.client.eventTypes.update(this.args.name, body);
    this.note(this.style.err.green(`Updated event type ${terminalText(data.name)}`));
    this.print(formatEventType(data, this.style.out, this.now()));
    return data;
  }
}
