import type { RotateSecretOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatInboundRotatedSecret } from '../../format/inbound-endpoints.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../flags/inbound.js';

export default class InboundRotateSecret extends BaseCommand<typeof InboundRotateSecret> {
  static override summary = "Replace an inbound endpoint's signing secret (what hookrelay signs forwarded webhooks with); the new one is shown once.";
  static override description = `For 24 hours forwarded webhooks are signed with both the old and the new key, so your receiver can switch over without dropping one. Signing must be on (\`inbound update ID --signing\`) for the key to be used. The ingest URL and its secret token do not change.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --json | jq -r .signing_secret',
  ];

  static override args = {
    id: Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<RotateSecretOut> {
    const { data } = await this.client.inboundEndpoints.rotateSecret(this.args.id);
    this.print(formatInboundRotatedSecret(this.args.id, data, this.style.out, this.now()));
    return data;
  }
}
