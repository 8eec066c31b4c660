import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';
import { InboundEndpointMessageOut } from './inbound.js';
import { RejectionFrame } from './rejections.js';

/**
 * POST /v1/stream-tickets: a short-lived, single-use ticket that authenticates one WebSocket upgrade
 * (`?ticket=`) from a browser, which cannot set the Authorization header on a WebSocket.
 */
export const StreamTicketOut = z.object({
  ticket: z.string(),
  expires_at: Timestamp,
});
export type StreamTicketOut = z.infer<typeof StreamTicketOut>;

/** GET /v1/inbound-endpoints/{id}/watch (WebSocket): the ticket replaces the Authorization header. */
export const WatchQuery = z.strictObject({
  ticket: z.string().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters').optional(),
});
export type WatchQuery = z.infer<typeof WatchQuery>;

/**
 * Server frames of the watch socket: `ready` once, then one `message` per new message, oldest
 * first, as a row of the endpoint message list (without answers yet: they come later, read them
 * from the list); a `rejection` frame for each request the endpoint's ingest URL refused.
 */
export const WatchReadyFrame = z.object({ type: z.literal('ready'), cursor: Uuid.nullable() });
export const WatchMessageFrame = z.object({ type: z.literal('message'), message: InboundEndpointMessageOut });
export const WatchFrame = z.discriminatedUnion('type', [WatchReadyFrame, WatchMessageFrame, RejectionFrame]);
export type WatchFrame = z.infer<typeof WatchFrame>;
