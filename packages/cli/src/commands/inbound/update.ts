import type { InboundEndpointOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { usageFailure } from '../../errors.js';
import { formatInboundEndpoint } from '../../format/inbound-endpoints.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION, inboundSettingFlags, inboundSettingsBody } from '../../flags/inbound.js';
import { terminalText } from '../../format/text.js';

export default class InboundUpdate extends BaseCommand<typeof InboundUpdate> {
  static override summary = 'Change an inbound endpoint; settings not given keep their values.';
  static override description = `The flags are those of \`inbound create\`. A secret turns its check on (--static-token, --hmac-secret, --allow-cidr); --no-verify-static-token, --no-verify-hmac and --no-verify-ip turn a check off and keep what is stored, so it can be switched on again. An empty value clears an optional text setting: --url "", --description "", --static-token-header "", --static-token-query "", --hmac-header "", --timestamp-header "". --allow-cidr and --idempotency-header replace their whole list; --clear-allow-cidrs and --clear-idempotency-headers empty it; --clear-max-body-bytes goes back to the server's body limit. --signing turns signing on (a key is made if the endpoint never had one: see \`inbound rotate-secret\` to get its secret).
Pause and resume have their own commands.

With --json the output is the endpoint record after the change (the API answers the PATCH with { id, updated }; the CLI then reads the endpoint back).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --name "github (prod)"',
    {
      description: 'Switch a cli endpoint to forward mode:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --mode forward --url https://api.example.com/hooks',
    },
    {
      description: 'Start verifying Slack signatures:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --hmac-scheme slack --hmac-secret "$SLACK_SIGNING_SECRET"',
    },
    {
      description: 'Turn the IP allowlist off (the blocks are kept):',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --no-verify-ip',
    },
  ];

  static override args = {
    id: Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    name: Flags.string({ summary: 'New name (1-200 characters).' }),
    ...inboundSettingFlags,
    'clear-allow-cidrs': Flags.boolean({ summary: 'Empty the IP allowlist (turn it off with --no-verify-ip first, or together).', exclusive: ['allow-cidr'] }),
    'clear-idempotency-headers': Flags.boolean({ summary: 'Stop deduplicating: remove every idempotency header.', exclusive: ['idempotency-header'] }),
    'clear-max-body-bytes': Flags.boolean({ summary: "Back to the server's ingest body limit.", exclusive: ['max-body-bytes'] }),
  };

  public async run(): Promise<InboundEndpointOut> {
    const body = inboundSettingsBody(this.flags);
    if (Object.keys(body).length === 0) {
      throw usageFailure('nothing to update', 'Give at least one setting flag; `hookrelay inbound update --help` lists them.');
    }
    const { data: updated } = await this.client.inboundEndpoints.update(this.args.id, body);
    const { data } = await this.client.inboundEndpoints.get(updated.id);
    this.note(this.style.err.green(`Updated ${terminalText(data.id)}`));
    this.print(formatInboundEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
