import type { EndpointDeleteOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../flags/inbound.js';
import { confirmDeletion } from '../../confirm-delete.js';
import { terminalText } from '../../format/text.js';

export default class InboundDelete extends BaseCommand<typeof InboundDelete> {
  static override summary = 'Delete an inbound endpoint; its ingest URL then answers 410. It asks first unless --force.';
  static override description = `Without a terminal to ask on (scripts, CI), --force is required.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --force',
  ];

  static override args = {
    id: Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
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
        const { data: endpoint } = await this.client.inboundEndpoints.get(this.args.id);
        return `Delete inbound endpoint ${endpoint.id} ("${endpoint.name}", ${endpoint.mode} mode)? Its ingest URL will answer 410`;
      },
    });
    const { data } = await this.client.inboundEndpoints.delete(this.args.id);
    this.print(`${this.style.out.green('Deleted')} inbound endpoint ${terminalText(data.id)}`);
    return data;
  }
}
