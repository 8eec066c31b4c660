import { z } from 'zod';
import { Cursor, EndpointId, limitParam, Timestamp, Uuid, intRange } from './common.js';
import { PORTAL_LINK_LIMITS, PORTAL_WATCH_LIMITS } from '../constants.js';
import { AttemptOut, LogRecordOut } from './messages.js';
import { EventTypeName } from './event-catalogue.js';
import { EndpointOut } from './outbound-endpoints.js';
import { OwnerId } from './subscriptions.js';

export { PORTAL_LINK_LIMITS, PORTAL_WATCH_LIMITS };

/**
 * POST /v1/portal-links: a link to the customer portal for one owner (docs/api.md, Portal links).
 * `read_only`: the portal may read that owner's resources and change none.
 */
export const PortalLinkCreateIn = z.strictObject({
  owner_id: OwnerId,
  expires_in_minutes: intRange(1, PORTAL_LINK_LIMITS.maxMinutes).optional(),
  read_only: z.boolean().optional(),
});
export type PortalLinkCreateIn = z.infer<typeof PortalLinkCreateIn>;

/** A portal link as lists show it: never its token, which only its create answers with. */
export const PortalLinkOut = z.object({
  id: Uuid,
  owner_id: z.string(),
  read_only: z.boolean(),
  expires_at: Timestamp,
  created_at: Timestamp,
  /** Omitted until the link is revoked. */
  revoked_at: Timestamp.optional(),
});
export type PortalLinkOut = z.infer<typeof PortalLinkOut>;

/** The create's answer: the record with the token (`hrp_` + 40 hex), shown once, and the portal URL that carries it. */
export const PortalLinkCreateOut = PortalLinkOut.omit({ revoked_at: true }).extend({
  url: z.string(),
  token: z.string(),
});
export type PortalLinkCreateOut = z.infer<typeof PortalLinkCreateOut>;

/** GET /v1/portal-links: newest first; `owner_id` exact. */
export const PortalLinkListQuery = z.strictObject({
  owner_id: OwnerId.optional(),
  limit: limitParam(200, 50),
  cursor: Cursor.optional(),
});
export type PortalLinkListQuery = z.infer<typeof PortalLinkListQuery>;

export const PortalLinkIdParams = z.object({ id: Uuid });

/** DELETE /v1/portal-links/{id}: the link, revoked (a second revoke keeps the first `revoked_at`). */
export const PortalLinkRevokeOut = PortalLinkOut.required({ revoked_at: true });
export type PortalLinkRevokeOut = z.infer<typeof PortalLinkRevokeOut>;

/** GET /v1/portal/session: what a portal token may do, for the portal page. */
export const PortalSessionOut = z.object({
  owner_id: z.string(),
  read_only: z.boolean(),
  expires_at: Timestamp,
  project_name: z.string(),
});
export type PortalSessionOut = z.infer<typeof PortalSessionOut>;

/**
 * GET /v1/portal/watch (WebSocket): what changes among the portal owner's outbound endpoints, their
 * newest messages (PORTAL_WATCH_LIMITS.messagesPerEndpoint of each) and those messages' attempts.
 * `ready` comes once the socket follows them: a page reads what it shows after `ready`, and every
 * frame after it is a change since. An `endpoint` frame is an endpoint created or changed,
 * `endpoint_removed` one deleted or given to another owner, a `message` frame a message created or
 * changed (status, attempts, last answer), an `attempt` frame an attempt recorded.
 */
export const PortalWatchReadyFrame = z.object({ type: z.literal('ready') });
export const PortalWatchEndpointFrame = z.object({ type: z.literal('endpoint'), endpoint: EndpointOut });
export const PortalWatchEndpointRemovedFrame = z.object({ type: z.literal('endpoint_removed'), endpoint_id: EndpointId });
export const PortalWatchMessageFrame = z.object({ type: z.literal('message'), endpoint_id: EndpointId, message: LogRecordOut });
export const PortalWatchAttemptFrame = z.object({ type: z.literal('attempt'), endpoint_id: EndpointId, attempt: AttemptOut });
export const PortalWatchFrame = z.discriminatedUnion('type', [
  PortalWatchReadyFrame,
  PortalWatchEndpointFrame,
  PortalWatchEndpointRemovedFrame,
  PortalWatchMessageFrame,
  PortalWatchAttemptFrame,
]);
export type PortalWatchFrame = z.infer<typeof PortalWatchFrame>;

/**
 * POST /v1/portal/test-events: the example of a catalogue type (one with an example), sent as a
 * message of that type to one of the portal owner's endpoints. 202 with the message.
 */
export const PortalTestEventIn = z.strictObject({
  endpoint_id: EndpointId,
  event_type: EventTypeName,
});
export type PortalTestEventIn = z.infer<typeof PortalTestEventIn>;
