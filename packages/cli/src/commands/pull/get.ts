import type { PullEndpointOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatPullEndpoint } from '../../format/pull.js';
import { PULL_ENDPOINT_ID_DESCRIPTION } from '../../flags/pull.js';

export default class PullGet extends BaseCommand<typeof PullGet> {
  static override summary = 'Show one pull endpoint: settings, status and how many events it holds in each state.';
  static override description = `The ingest URL is shown without its secret token: only \`pull create\` shows the token.

With --json the output is the API's record, with event_counts { stored, fetched, delivered, deleted }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --json | jq .event_counts.stored',
  ];

  static override args = {
    id: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PullEndpointOut> {
    const { data } = await this.client.pullEndpoints.get(this.args.id);
    this.print(formatPullEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
