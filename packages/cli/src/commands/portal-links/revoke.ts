import type { PortalLinkRevokeOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { PORTAL_LINK_ID_DESCRIPTION } from '../../flags/portal.js';
import { formatPortalLinkRevoked } from '../../format/portal-links.js';

export default class PortalLinksRevoke extends BaseCommand<typeof PortalLinksRevoke> {
  static override summary = 'Revoke a portal link: its URL stops opening the portal at once.';
  static override description = `The next request of a portal open with it is refused (401). Revoking a link twice keeps the first time.

With --json the output is the API's portal link record, with revoked_at.`;

  static override examples = ['<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72'];

  static override args = {
    id: Args.string({ description: PORTAL_LINK_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<PortalLinkRevokeOut> {
    const { data } = await this.client.portalLinks.revoke(this.args.id);
    this.print(formatPortalLinkRevoked(data, this.style.out));
    return data;
  }
}
