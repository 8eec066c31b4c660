import { z } from 'zod';
import { PageMetaWithMore } from '../envelope.js';
import { Timestamp } from './common.js';

// Defined without zod in constants.ts, for clients that only name it; exported here too, beside its schemas.
export { MESSAGE_SEARCH } from '../constants.js';

/**
 * What a search read: the window (as resolved from the defaults), whether it stopped at the scan
 * limit before the window's start (then `has_more`, and `next_cursor` continues after the last
 * message read), and which bodies it searched: `inline`, those stored in the database itself
 * (bodies that came in pieces or files, or live in an object store, are not searched: only their
 * headers are); `none`, no body (the payloads live in an object store).
 */
export const MessageSearchMeta = z.object({
  q: z.string(),
  received_after: Timestamp,
  received_before: Timestamp,
  scan_limit: z.number().int().positive(),
  scan_limit_reached: z.boolean(),
  bodies: z.enum(['inline', 'none']),
});
export type MessageSearchMeta = z.infer<typeof MessageSearchMeta>;

/** meta of GET /v1/inbound-endpoints/{id}/messages: `search` only with `q`. */
export const EndpointMessagesMeta = PageMetaWithMore.extend({ search: MessageSearchMeta.optional() });
export type EndpointMessagesMeta = z.infer<typeof EndpointMessagesMeta>;
