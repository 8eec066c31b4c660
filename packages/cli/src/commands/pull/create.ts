import type { PullEndpointCreateIn, PullEndpointCreateOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatCreatedPullEndpoint } from '../../format/pull.js';
import { pullEndpointSettingFlags } from '../../flags/pull.js';

export default class PullCreate extends BaseCommand<typeof PullCreate> {
  static override summary = 'Create a pull endpoint: webhooks sent to its URL are stored until your code fetches them.';
  static override description = `The answer includes the full ingest URL, which ends in the endpoint's secret token. It is shown once, now: hookrelay keeps only a hash of the token.

--event-type-source and --event-type-path go together: each webhook's event type is read from that JSON body field (dot path) or header, for \`pull events list --event-type\`.

The endpoint's ingest_url (in \`pull get\`, \`pull list --json\` and the create answer) stops before the token: webhooks sent there are refused (404) with a message saying the token is missing.

With --ephemeral the endpoint deletes itself after --ttl minutes (default 30), like an ephemeral inbound or outbound endpoint: for a CI run.

With --json the output is exactly the API's create answer, so \`jq -r .full_ingest_url\` gives the URL.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --name github',
    '<%= config.bin %> <%= command.id %> --name stripe --retention-days 30 --event-type-source body --event-type-path type',
    '<%= config.bin %> <%= command.id %> --name shopify --event-type-source header --event-type-path X-Shopify-Topic',
    {
      description: 'A throwaway endpoint for a CI run; print its full ingest URL:',
      command: '<%= config.bin %> <%= command.id %> --name ci --ephemeral --ttl 30 --json | jq -r .full_ingest_url',
    },
    {
      description: 'Create one and keep its id and URL for a script:',
      command: "<%= config.bin %> <%= command.id %> --name ci --json | jq -r '.id, .full_ingest_url'",
    },
  ];

  static override flags = {
    name: Flags.string({ summary: 'Name shown in lists (1-200 characters).', required: true }),
    ...pullEndpointSettingFlags,
    ephemeral: Flags.boolean({ summary: 'Delete the endpoint automatically after --ttl minutes (CI and tests).' }),
    ttl: Flags.integer({ summary: 'Minutes an ephemeral endpoint lives, 1-1440 (server default 30).', dependsOn: ['ephemeral'] }),
  };

  public async run(): Promise<PullEndpointCreateOut> {
    const body: PullEndpointCreateIn = { name: this.flags.name };
    if (this.flags.description !== undefined) body.description = this.flags.description;
    if (this.flags['retention-days'] !== undefined) body.retention_days = this.flags['retention-days'];
    if (this.flags['max-body-bytes'] !== undefined) body.max_body_bytes = this.flags['max-body-bytes'];
    if (this.flags['event-type-source'] !== undefined) body.event_type_source = this.flags['event-type-source'] as PullEndpointCreateIn['event_type_source'];
    if (this.flags['event-type-path'] !== undefined) body.event_type_path = this.flags['event-type-path'];
    if (this.flags.ephemeral) body.ephemeral = true;
    if (this.flags.ttl !== undefined) body.ttl_minutes = this.flags.ttl;
    const { data } = await this.client.pullEndpoints.create(body);
    this.print(formatCreatedPullEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
