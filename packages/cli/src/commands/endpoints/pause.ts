import type { PauseOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { ENDPOINT_ID_DESCRIPTION } from '../../flags/endpoint.js';
import { formatPauseResult } from '../../format/endpoints.js';

export default class EndpointsPause extends BaseCommand<typeof EndpointsPause> {
  static override summary = 'Pause deliveries to an outbound endpoint; messages are still accepted and wait.';
  static override description = 'Messages sent while the endpoint is paused are queued and delivered after `endpoints resume`.';

  static override examples = ['<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef'];

  static override args = {
    id: Args.string({ description: ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PauseOut> {
    const { data } = await this.client.endpoints.pause(this.args.id);
    this.print(formatPauseResult(data, this.style.out));
    return data;
  }
}
