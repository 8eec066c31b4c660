import type { EndpointDeleteOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { confirmDeletion } from '../../confirm-delete.js';
import { PULL_ENDPOINT_ID_DESCRIPTION } from '../../flags/pull.js';
import { terminalText } from '../../format/text.js';

export default class PullDelete extends BaseCommand<typeof PullDelete> {
  static override summary = 'Delete a pull endpoint and its events; its ingest URL then answers 410. It asks first unless --force.';
  static override description = `The events are removed with it (their payloads at once, the rest by the sweeper). Without a terminal to ask on (scripts, CI), --force is required.

With --json the output is { "id", "deleted": true }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --force',
  ];

  static override args = {
    id: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<EndpointDeleteOut> {
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: `pull endpoint ${this.args.id}`,
      streams: this.promptStreams,
      // Fetching first shows what is about to go, and fails with not-found before asking.
      question: async () => {
        const { data: endpoint } = await this.client.pullEndpoints.get(this.args.id);
        const stored = endpoint.event_counts === undefined ? '' : `, ${endpoint.event_counts.stored + endpoint.event_counts.fetched + endpoint.event_counts.delivered} events`;
        return `Delete pull endpoint ${endpoint.id} ("${endpoint.name}"${stored})? Its ingest URL will answer 410`;
      },
    });
    const { data } = await this.client.pullEndpoints.delete(this.args.id);
    this.print(`${this.style.out.green('Deleted')} pull endpoint ${terminalText(data.id)}`);
    return data;
  }
}
