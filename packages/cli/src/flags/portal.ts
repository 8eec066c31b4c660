import type { PortalLinkCreateIn } from '@hookrelay/shared';
import { PORTAL_LINK_LIMITS } from '@hookrelay/shared/constants';
import { usageFailure } from '../errors.js';
import { durationFlag } from './forwarding.js';

export const PORTAL_LINK_ID_DESCRIPTION = 'Portal link id (a UUID, from `portal-links list`).';

const MINUTE_MS = 60_000;

/**
 * The body of `portal-links create`: --expires is a duration (30m, 2h, 1d) of whole minutes, from
 * one minute to a day; without it the server's default (an hour) applies.
 */
export function portalLinkBody(flags: { owner: string; 'read-only'?: boolean; expires?: string | undefined }): PortalLinkCreateIn {
  const body: PortalLinkCreateIn = { owner_id: flags.owner };
  if (flags['read-only'] === true) body.read_only = true;
  const ms = durationFlag('expires', flags.expires);
  if (ms !== undefined) {
    if (ms % MINUTE_MS !== 0) throw usageFailure('--expires must be whole minutes (30m, 2h, 1d)');
    const minutes = ms / MINUTE_MS;
    if (minutes < 1 || minutes > PORTAL_LINK_LIMITS.maxMinutes) throw usageFailure('--expires must be from 1m to 24h');
    body.expires_in_minutes = minutes;
  }
  return body;
}
