import type { PauseOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatInboundPauseResult } from '../../format/inbound-endpoints.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../flags/inbound.js';

export default class InboundResume extends BaseCommand<typeof InboundResume> {
  static override summary = 'Resume a paused inbound endpoint: its ingest URL accepts webhooks again.';
  static override description = 'Nothing sent while it was paused was stored; senders that retry deliver it now.';

  static override examples = ['<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70'];

  static override args = {
    id: Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PauseOut> {
    const { data } = await this.client.inboundEndpoints.resume(this.args.id);
    this.print(formatInboundPauseResult(data, this.style.out));
    return data;
  }
}
