import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';
import { InboundMessageStatus } from './inbound.js';

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
 * A new message as the watch socket announces it: its metadata, never its headers or body (the
 * page fetches those when the message is opened). Fields a server does not know are absent.
 */
export const WatchMessageOut = z.object({
  id: Uuid,
  inbound_endpoint_id: Uuid,
  status: InboundMessageStatus,
  method: z.string(),
  path: z.string(),
  query: z.string(),
  content_type: z.string(),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  replay_count: z.number().int().nonnegative(),
  received_at: Timestamp,
  response_status: z.number().int().nullable(),
  response_latency_ms: z.number().int().nonnegative().nullable(),
});
export type WatchMessageOut = z.infer<typeof WatchMessageOut>;

/** Server frames of the watch socket: `ready` once, then one `message` per new message, oldest first. */
export const WatchReadyFrame = z.object({ type: z.literal('ready'), cursor: Uuid.nullable() });
export const WatchMessageFrame = z.object({ type: z.literal('message'), message: WatchMessageOut });
export const WatchFrame = z.discriminatedUnion('type', [WatchReadyFrame, WatchMessageFrame]);
export type WatchFrame = z.infer<typeof WatchFrame>;
