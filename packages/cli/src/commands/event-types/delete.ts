import type { EventTypeDeleteOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { confirmDeletion } from '../../confirm-delete.js';
import { EVENT_TYPE_NAME_DESCRIPTION } from '../../flags/events.js';
import { formatEventTypeDeleted } from '../../format/event-types.js';

export default class EventTypesDelete extends BaseCommand<typeof EventTypesDelete> {
  static override summary = 'Remove an event type from the catalogue; it asks first unless --force.';
  static override description = `Events of a type that is not in the catalogue are still accepted. To keep the schema but say the type is no longer sent, archive it instead (\`event-types update NAME --archived\`). Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is { "name", "deleted": true }.`;

  static override examples = ['<%= config.bin %> <%= command.id %> invoice.legacy', '<%= config.bin %> <%= command.id %> invoice.legacy --force'];

  static override args = {
    name: Args.string({ description: EVENT_TYPE_NAME_DESCRIPTION, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<EventTypeDeleteOut> {
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: `event type ${this.args.name}`,
      streams: this.promptStreams,
      question: async () => {
        // Fetching first fails with not-found before asking.
        const { data: type } = await this.client.eventTypes.get(this.args.name);
        return `Delete event type ${type.name}${type.schema === null ? '' : ' and its schema'}?`;
      },
    });
    const { data } = await this.client.eventTypes.delete(this.args.name);
    this.print(formatEventTypeDeleted(data, this.style.out));
    return data;
  }
}
