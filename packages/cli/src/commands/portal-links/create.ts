import type { PortalLinkCreateOut } from '@hookrelay/shared';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { portalLinkBody } from '../../flags/portal.js';
import { formatPortalLinkCreated } from '../../format/portal-links.js';

export default class PortalLinksCreate extends BaseCommand<typeof PortalLinksCreate> {
  static override summary = "Make a link to the customer portal for one owner's endpoints and messages.";
  static override description = `The link opens the portal for the endpoints, events and messages of --owner (their owner_id) and nothing else; with --read-only the customer may look but not change anything. It works until --expires (default 1h, at most 24h) or until \`portal-links revoke\`.

The URL carries its token after #, which browsers never send to a server; it is shown only now. Human output prints the URL on the first line. With --json the output is the API's record, token and url included.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> --owner cus_1842',
    '<%= config.bin %> <%= command.id %> --owner cus_1842 --read-only --expires 2h',
    {
      description: 'The URL alone, for an email:',
      command: '<%= config.bin %> <%= command.id %> --owner cus_1842 --json | jq -r .url',
    },
  ];

  static override flags = {
    owner: Flags.string({ summary: 'The owner_id whose endpoints the portal shows.', required: true, helpValue: 'OWNER_ID' }),
    'read-only': Flags.boolean({ summary: 'The portal may read, not change anything (retries included).' }),
    expires: Flags.string({ summary: 'How long the link works: whole minutes from 1m to 24h (30m, 2h, 1d). Default 1h.', helpValue: 'DURATION' }),
  };

  public async run(): Promise<PortalLinkCreateOut> {
    const { data } = await this.client.portalLinks.create(portalLinkBody(this.flags));
    this.print(formatPortalLinkCreated(data, this.style.out, this.now()));
    return data;
  }
}
