import type { InboundEndpointCreateIn, InboundEndpointCreateOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { formatCreatedInboundEndpoint } from '../../format/inbound-endpoints.js';
import { inboundSettingFlags, inboundSettingsBody } from '../../flags/inbound.js';

export default class InboundCreate extends BaseCommand<typeof InboundCreate> {
  static override summary = 'Create an inbound endpoint: an ingest URL that providers (GitHub, Stripe, …) send webhooks to.';
  static override description = `Mode cli (the default without --url): webhooks wait for \`hookrelay listen ID --forward-to 3000\` to forward them to your machine. Mode forward (the default with --url): hookrelay delivers them to --url itself, with retries.

Verification: each check is switched on by its secret or list. --static-token turns on the static-token check (give --static-token-header or --static-token-query), --hmac-secret the signature check (--hmac-scheme github|stripe|slack|standard_webhooks know their header; hex and base64 need --hmac-header), --allow-cidr the IP allowlist. --no-verify-static-token, --no-verify-hmac and --no-verify-ip store the settings with the check off.

The ingest URL ends in the endpoint's secret token: anyone who has it can post. With --signing, what hookrelay forwards is signed, and the signing secret is shown once, now.

With --json the output is exactly the API's create answer (id, ingest_url, secret_token, …), so \`jq -r .ingest_url\` gives the URL.`;

  static override examples = [
    {
      description: 'A cli-mode endpoint for local development:',
      command: '<%= config.bin %> <%= command.id %> --name "github dev"',
    },
    {
      description: 'GitHub webhooks, verified, forwarded by hookrelay to your service:',
      command: '<%= config.bin %> <%= command.id %> --name github --url https://api.example.com/webhooks/github --hmac-scheme github --hmac-secret "$GITHUB_WEBHOOK_SECRET"',
    },
    {
      description: 'Stripe, deduplicated by event id:',
      command: '<%= config.bin %> <%= command.id %> --name stripe --mode cli --hmac-scheme stripe --hmac-secret whsec_... --idempotency-header Stripe-Event-Id',
    },
    {
      description: 'A static token in a header, only from one network:',
      command: '<%= config.bin %> <%= command.id %> --name partner --static-token s3cret --static-token-header X-Token --allow-cidr 203.0.113.0/24',
    },
    {
      description: 'Refuse bodies over 1 MiB at this endpoint (the server takes up to 25 MiB):',
      command: '<%= config.bin %> <%= command.id %> --name small --max-body-bytes 1048576',
    },
    {
      description: 'A throwaway endpoint for a CI run; print its ingest URL:',
      command: '<%= config.bin %> <%= command.id %> --name ci --ephemeral --ttl 30 --json | jq -r .ingest_url',
    },
  ];

  static override flags = {
    name: Flags.string({ summary: 'Name shown in lists (1-200 characters).', required: true }),
    ...inboundSettingFlags,
    ephemeral: Flags.boolean({ summary: 'Delete the endpoint automatically after --ttl minutes (CI and tests).' }),
    ttl: Flags.integer({ summary: 'Minutes an ephemeral endpoint lives, 1-1440 (server default 30).', dependsOn: ['ephemeral'] }),
  };

  public async run(): Promise<InboundEndpointCreateOut> {
    const body = { ...inboundSettingsBody(this.flags), name: this.flags.name } as InboundEndpointCreateIn;
    if (this.flags.ephemeral) body.ephemeral = true;
    if (this.flags.ttl !== undefined) body.ttl_minutes = this.flags.ttl;

    const { data } = await this.client.inboundEndpoints.create(body);
    this.print(formatCreatedInboundEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
