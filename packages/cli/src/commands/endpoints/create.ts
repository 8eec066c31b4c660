import type { EndpointCreateIn, EndpointCreateOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { endpointSettingFlags } from '../../flags/endpoint.js';
import { subscriptionBody, subscriptionFlags } from '../../flags/events.js';
import { formatCreatedEndpoint } from '../../format/endpoints.js';
import { headersFromFlags } from '../../headers.js';

export default class EndpointsCreate extends BaseCommand<typeof EndpointsCreate> {
  static override summary = 'Create an outbound endpoint: an HTTPS URL hookrelay delivers messages to.';
  static override description = `The answer includes the endpoint's signing secret (whsec_…). It is shown once, now: store it where the receiver can verify deliveries (Standard Webhooks).

--owner, --event-types and --channels say which events (\`hookrelay events send\`) it receives: those sent for its owner (none: your own), of a type one of its globs takes and, when it has channels, sent to one of them. Without them it receives every event sent without an owner.

With --json the output is exactly the API's endpoint object, so \`jq -r .id\` gives the id.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --url https://example.com/webhooks',
    '<%= config.bin %> <%= command.id %> --url https://example.com/hooks --description "billing" --rate-limit 10 --burst 20 --header X-Team=billing',
    {
      description: "A customer's endpoint that receives their invoice events:",
      command: "<%= config.bin %> <%= command.id %> --url https://acme.example/hooks --owner acme --event-types 'invoice.*,customer.created'",
    },
    {
      description: 'A throwaway endpoint for a CI run, deleted after 30 minutes; print only its id:',
      command: '<%= config.bin %> <%= command.id %> --url https://example.com/ci --ephemeral --ttl 30 --json | jq -r .id',
    },
  ];

  static override flags = {
    url: Flags.string({ summary: 'Destination URL: https://, public address, 12-2048 characters.', required: true }),
    ...endpointSettingFlags,
    ...subscriptionFlags,
    ephemeral: Flags.boolean({ summary: 'Delete the endpoint automatically after --ttl minutes (CI and tests).' }),
    ttl: Flags.integer({ summary: 'Minutes an ephemeral endpoint lives, 1-1440 (server default 30).', dependsOn: ['ephemeral'] }),
  };

  public async run(): Promise<EndpointCreateOut> {
    const body: EndpointCreateIn = { url: this.flags.url, ...subscriptionBody(this.flags) };
    if (this.flags.description !== undefined) body.description = this.flags.description;
    if (this.flags['rate-limit'] !== undefined) body.rate_limit_rps = this.flags['rate-limit'];
    if (this.flags.burst !== undefined) body.burst = this.flags.burst;
    if (this.flags.header !== undefined) body.headers = headersFromFlags(this.flags.header);
    if (this.flags.ephemeral) body.ephemeral = true;
    if (this.flags.ttl !== undefined) body.ttl_minutes = this.flags.ttl;

    const { data } = await this.client.endpoints.create(body);
    this.print(formatCreatedEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
