import type { PullEventDeleteOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { confirmDeletion } from '../../../confirm-delete.js';
import { formatPullEventDeleted } from '../../../format/pull.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, PULL_EVENT_ID_DESCRIPTION } from '../../../flags/pull.js';

export default class PullEventsDelete extends BaseCommand<typeof PullEventsDelete> {
  static override summary = "Delete an event's payload; it asks first unless --force.";
  static override description = `The event's metadata stays (with deleted_at) until retention; its body can no longer be fetched and it leaves the list. Deleting a deleted event succeeds again (already_deleted: true). Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is { "event_id", "deleted_at", "already_deleted" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21 --force --json',
  ];

  static override args = {
    endpoint: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
    id: Args.string({ description: PULL_EVENT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<PullEventDeleteOut> {
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: `event ${this.args.id}`,
      streams: this.promptStreams,
      // Not the event itself: fetching it would move it to fetched. The endpoint's name is shown.
      question: async () => {
        const { data: endpoint } = await this.client.pullEndpoints.get(this.args.endpoint);
        return `Delete event ${this.args.id} of pull endpoint "${endpoint.name}"?`;
      },
    });
    const { data } = await this.client.pullEvents.delete(this.args.endpoint, this.args.id);
    this.print(formatPullEventDeleted(data, this.style.out));
    return data;
  }
}
