import type { RotateSecretOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { ENDPOINT_ID_DESCRIPTION } from '../../flags/endpoint.js';
import { formatRotatedSecret } from '../../format/endpoints.js';

export default class EndpointsRotateSecret extends BaseCommand<typeof EndpointsRotateSecret> {
  static override summary = "Replace an outbound endpoint's signing secret; the new one is shown once.";
  static override description = `For 24 hours deliveries are signed with both the old and the new key, so receivers can switch over without dropping a message.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef',
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --json | jq -r .signing_secret',
  ];

  static override args = {
    id: Args.string({ description: ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<RotateSecretOut> {
    const { data } = await this.client.endpoints.rotateSecret(this.args.id);
    this.print(formatRotatedSecret(this.args.id, data, this.style.out, this.now()));
    return data;
  }
}
