import type { EndpointDeleteOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { ENDPOINT_ID_DESCRIPTION } from '../../flags/endpoint.js';
import { confirmDeletion } from '../../confirm-delete.js';
import { terminalText } from '../../format/text.js';

export default class EndpointsDelete extends BaseCommand<typeof EndpointsDelete> {
  static override summary = 'Delete an outbound endpoint; it asks first unless --force.';
  static override description = `Without a terminal to ask on (scripts, CI), --force is required.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef',
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --force',
  ];

  static override args = {
    id: Args.string({ description: ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    force: Flags.boolean({ char: 'f', summary: 'Delete without asking.' }),
  };

  public async run(): Promise<EndpointDeleteOut> {
    await confirmDeletion({
      force: this.flags.force,
      interactive: this.interactive,
      subject: this.args.id,
      streams: this.promptStreams,
      question: async () => {
        // Fetching first shows what is about to go, and fails with not-found before asking.
        const { data: endpoint } = await this.client.endpoints.get(this.args.id);
        return `Delete endpoint ${endpoint.id} (${endpoint.url})?`;
      },
    });
    const { data } = await this.client.endpoints.delete(this.args.id);
    this.print(`${this.style.out.green('Deleted')} ${terminalText(data.id)}`);
    return data;
  }
}
