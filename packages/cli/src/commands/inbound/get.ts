import type { InboundEndpointOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatInboundEndpoint } from '../../format/inbound-endpoints.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../flags/inbound.js';

export default class InboundGet extends BaseCommand<typeof InboundGet> {
  static override summary = 'Show one inbound endpoint: its ingest URL, mode, verification checks and status.';
  static override description = `Secrets (static token, HMAC secret, signing secret) are never shown; the checks that use them are. "Rejected" counts the requests refused by verification. In cli mode, "Latest message" is where a new \`hookrelay listen\` starts.

With --json the output is the API's endpoint record.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --json | jq -r .ingest_url',
  ];

  static override args = {
    id: Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<InboundEndpointOut> {
    const { data } = await this.client.inboundEndpoints.get(this.args.id);
    this.print(formatInboundEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
