import type { EndpointOut, EndpointUpdateIn } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { ENDPOINT_ID_DESCRIPTION, endpointSettingFlags } from '../../flags/endpoint.js';
import { usageFailure } from '../../errors.js';
import { subscriptionBody, subscriptionFlags, subscriptionResetFlags } from '../../flags/events.js';
import { formatEndpoint } from '../../format/endpoints.js';
import { headersFromFlags } from '../../headers.js';
import { terminalText } from '../../format/text.js';

export default class EndpointsUpdate extends BaseCommand<typeof EndpointsUpdate> {
  static override summary = 'Change an outbound endpoint; settings not given keep their values.';
  static override description = `--header replaces the whole set of custom headers with the ones given; --clear-headers removes them all.
--owner, --event-types and --channels replace the endpoint's values (--event-types '' receives no event); --clear-owner, --all-event-types and --any-channel set them back to the defaults. A change applies to events sent after it.
Pause and resume have their own commands.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --url https://example.com/new-hook',
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --rate-limit 5 --burst 10',
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --header X-Team=billing --header X-Env=prod',
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --clear-headers',
    "<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --owner acme --event-types 'invoice.*' --event-types customer.created",
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --channels eu,priority',
    '<%= config.bin %> <%= command.id %> ep_0123456789abcdef0123456789abcdef --all-event-types --any-channel',
  ];

  static override args = {
    id: Args.string({ description: ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    url: Flags.string({ summary: 'New destination URL: https://, public address, 12-2048 characters.' }),
    ...endpointSettingFlags,
    'clear-headers': Flags.boolean({ summary: 'Remove every custom header.', exclusive: ['header'] }),
    ...subscriptionFlags,
    ...subscriptionResetFlags,
  };

  public async run(): Promise<EndpointOut> {
    const body: EndpointUpdateIn = subscriptionBody(this.flags);
    if (this.flags.url !== undefined) body.url = this.flags.url;
    if (this.flags.description !== undefined) body.description = this.flags.description;
    if (this.flags['rate-limit'] !== undefined) body.rate_limit_rps = this.flags['rate-limit'];
    if (this.flags.burst !== undefined) body.burst = this.flags.burst;
    if (this.flags.header !== undefined) body.headers = headersFromFlags(this.flags.header);
    if (this.flags['clear-headers']) body.headers = {};
    if (Object.keys(body).length === 0) {
      throw usageFailure('nothing to update', 'Give at least one of --url, --description, --rate-limit, --burst, --header, --clear-headers, --owner, --event-types, --channels (or their resets).');
    }

    const { data } = await this.client.endpoints.update(this.args.id, body);
    this.note(this.style.err.green(`Updated ${terminalText(data.id)}`));
    this.print(formatEndpoint(data, this.style.out, this.now()));
    return data;
  }
}
