import type { PullEndpointOut, PullEndpointUpdateIn } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { usageFailure } from '../../errors.js';
import { formatPullEndpoint } from '../../format/pull.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, pullEndpointSettingFlags } from '../../flags/pull.js';
import { terminalText } from '../../format/text.js';

export default class PullUpdate extends BaseCommand<typeof PullUpdate> {
  static override summary = 'Change a pull endpoint; settings not given keep their values.';
  static override description = `A new --event-type-source alone keeps the stored path and a new --event-type-path alone keeps the stored source; the pair must fit. --clear-event-type stops extracting event types. New settings apply to webhooks received afterwards. Pause and resume have their own commands.

With --json the output is the API's updated record.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --name github-prod --retention-days 30',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --event-type-source header --event-type-path X-GitHub-Event',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --clear-event-type',
  ];

  static override args = {
    id: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    name: Flags.string({ summary: 'New name (1-200 characters).' }),
    ...pullEndpointSettingFlags,
    'clear-event-type': Flags.boolean({
      summary: 'Stop extracting event types (clears the source and the path).',
      exclusive: ['event-type-source', 'event-type-path'],
    }),
    'clear-max-body-bytes': Flags.boolean({ summary: "Back to the server's ingest body limit.", exclusive: ['max-body-bytes'] }),
  };

  public async run(): Promise<PullEndpointOut> {
    const body: PullEndpointUpdateIn = {};
    if (this.flags.name !== undefined) body.name = this.flags.name;
    if (this.flags.description !== undefined) body.description = this.flags.description;
    if (this.flags['retention-days'] !== undefined) body.retention_days = this.flags['retention-days'];
    if (this.flags['event-type-source'] !== undefined) body.event_type_source = this.flags['event-type-source'] as PullEndpointUpdateIn['event_type_source'];
    if (this.flags['event-type-path'] !== undefined) body.event_type_path = this.flags['event-type-path'];
    if (this.flags['clear-event-type']) body.event_type_source = '';
    if (this.flags['max-body-bytes'] !== undefined) body.max_body_bytes = this.flags['max-body-bytes'];
    if (this.flags['clear-max-body-bytes']) body.max_body_bytes = null;
    if (Object.keys(body).length === 0) {
      throw usageFailure(
        'nothing to update',
        'Give at least one of --name, --description, --retention-days, --max-body-bytes, --event-type-source, --event-type-path, --clear-event-type, --clear-max-body-bytes.',
      );
    }
    const { data } = await this.client.pullEndpoints.update(this.args.id, body);
    this.note(this.style.err.green(`Updated ${terminalText(data.id)}`));
    this.print(formatPullEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
