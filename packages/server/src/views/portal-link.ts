import type { PortalLinkOut } from '@hookrelay/shared';
import type { PortalLinkRow } from '../db/portal-links.js';

/** A portal link as the API shows it (its token never: only the create's answer has it). */
export function toPortalLinkOut(row: PortalLinkRow): PortalLinkOut {
  return {
    id: row.id,
    owner_id: row.owner_id,
    read_only: row.read_only,
    expires_at: row.expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
    ...(row.revoked_at ? { revoked_at: row.revoked_at.toISOString() } : {}),
  };
}
