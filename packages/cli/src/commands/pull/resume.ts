import type { PauseOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatPullPauseResult } from '../../format/pull.js';
import { PULL_ENDPOINT_ID_DESCRIPTION } from '../../flags/pull.js';

export default class PullResume extends BaseCommand<typeof PullResume> {
  static override summary = 'Resume a paused pull endpoint: webhooks are stored again.';
  static override description = `With --json the output is { "id", "paused": false }.`;

  static override examples = ['<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70'];

  static override args = {
    id: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PauseOut> {
    const { data } = await this.client.pullEndpoints.resume(this.args.id);
    this.print(formatPullPauseResult(data, this.style.out));
    return data;
  }
}
