import type { PauseOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatPullPauseResult } from '../../format/pull.js';
import { PULL_ENDPOINT_ID_DESCRIPTION } from '../../flags/pull.js';

export default class PullPause extends BaseCommand<typeof PullPause> {
  static override summary = 'Pause a pull endpoint: webhooks sent to it are refused (503) and not stored; stored events stay readable.';
  static override description = `Senders get 503 ENDPOINT_PAUSED with Retry-After: 60, so most retry later. Events already stored can still be listed, fetched, acknowledged and deleted.

With --json the output is { "id", "paused": true }.`;

  static override examples = ['<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70'];

  static override args = {
    id: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PauseOut> {
    const { data } = await this.client.pullEndpoints.pause(this.args.id);
    this.print(formatPullPauseResult(data, this.style.out));
    return data;
  }
}
