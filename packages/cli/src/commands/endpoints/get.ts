import type { EndpointOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { ENDPOINT_ID_DESCRIPTION } from '../../flags/endpoint.js';
import { formatEndpoint } from '../../format/endpoints.js';

export default class EndpointsGet extends BaseCommand<typeof EndpointsGet> {
  static override summary = 'Show one outbound endpoint: URL, status, rate limit, headers, owner and the events it receives, expiry.';
  static override description = 'The signing secret is never shown again after create; see `endpoints rotate-secret`.';

  static override examples = [
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef',
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --json | jq .paused',
  ];

  static override args = {
    id: Args.string({ description: ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<EndpointOut> {
    const { data } = await this.client.endpoints.get(this.args.id);
    this.print(formatEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
