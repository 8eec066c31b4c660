import { z } from 'zod';
import { Uuid } from './common.js';

/**
 * The answers of the ingest URLs to their senders, in the success envelope (`successEnvelope`). A
 * refusal is the error envelope (`ErrorEnvelope`), as for the `/v1` API.
 */

/**
 * `/in/{secret_token}`: a stored webhook, answered with the endpoint's `ingest_response_code` after
 * the commit that holds it (no body for 204 and 205). A duplicate (the endpoint's idempotency
 * headers matched an earlier message) gets the same answer with the first message's id, and
 * `Hookrelay-Duplicate: true` (INGEST_DUPLICATE_HEADER).
 */
export const InboundIngestOut = z.object({ message_id: Uuid });
export type InboundIngestOut = z.infer<typeof InboundIngestOut>;

/** The header, `true`, that tells a duplicate's answer from a stored webhook's (lowercase, as Node reads headers). */
export const INGEST_DUPLICATE_HEADER = 'hookrelay-duplicate';

/** `/pull/{endpoint_id}/{secret_token}`: a stored event, answered 200 after the commit that holds it. */
export const PullIngestOut = z.object({ event_id: Uuid });
export type PullIngestOut = z.infer<typeof PullIngestOut>;
