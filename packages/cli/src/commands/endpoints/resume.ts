import type { PauseOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { ENDPOINT_ID_DESCRIPTION } from '../../flags/endpoint.js';
import { formatPauseResult } from '../../format/endpoints.js';

export default class EndpointsResume extends BaseCommand<typeof EndpointsResume> {
  static override summary = 'Resume deliveries to a paused outbound endpoint.';
  static override description = 'Messages that waited while the endpoint was paused are delivered.';

  static override examples = ['<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef'];

  static override args = {
    id: Args.string({ description: ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PauseOut> {
    const { data } = await this.client.endpoints.resume(this.args.id);
    this.print(formatPauseResult(data, this.style.out));
    return data;
  }
}
