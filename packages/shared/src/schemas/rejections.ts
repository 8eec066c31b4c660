import { z } from 'zod';
import { Cursor, limitParam, Timestamp, TimestampIn, Uuid } from './common.js';
import { REJECTION_REASONS } from '../rejections.js';

/** A reason a request was refused: one of REJECTION_REASONS. */
export const RejectionReason = z.enum(REJECTION_REASONS, { message: `must be one of ${REJECTION_REASONS.join(', ')}` });
export type RejectionReason = z.infer<typeof RejectionReason>;

/** The kind of endpoint whose ingest URL refused a request. */
export const RejectionEndpointKind = z.enum(['inbound', 'pull']);
export type RejectionEndpointKind = z.infer<typeof RejectionEndpointKind>;


/** One refused request as lists, stream frames and the inspector show it (without its body). */
export const RejectionOut = z.object({
  id: Uuid,
  endpoint_kind: RejectionEndpointKind,
  endpoint_id: Uuid,
  received_at: Timestamp,
  reason: RejectionReason,
  /** What to check, in a sentence; never a secret or an expected signature. */
  detail: z.string(),
  /** The HTTP status the sender was answered. */
  status: z.number().int(),
  method: z.string(),
  /** The path after the endpoint's ingest URL (`/` when bare). */
  path: z.string(),
  query: z.string(),
  /** The header lines as received, in order; the endpoint's own static token is redacted. */
  raw_headers: z.array(z.tuple([z.string(), z.string()])),
  /** The body's size in bytes (for `body_too_large`, the size announced or read before the refusal). */
  size_bytes: z.number().int().nonnegative(),
  /** SHA-256 (hex) of the whole body; null when the body was not read (`body_too_large`). */
  body_sha256: z.string().nullable(),
  /** Whether the kept body is shorter than the request's (over 64 KiB, or not read). */
  body_truncated: z.boolean(),
  source_address: z.string(),
});
export type RejectionOut = z.infer<typeof RejectionOut>;

/** GET one refused request: the record and the start of its body, base64. */
export const RejectionDetailOut = RejectionOut.extend({
  /** The first bytes of the body (at most 64 KiB), base64. */
  body: z.string(),
  body_encoding: z.literal('base64'),
});
export type RejectionDetailOut = z.infer<typeof RejectionDetailOut>;

/** GET …/rejections: newest first; `received_after` inclusive, `received_before` exclusive. */
export const RejectionsQuery = z.strictObject({
  reason: RejectionReason.optional(),
  received_after: TimestampIn.optional(),
  received_before: TimestampIn.optional(),
  limit: limitParam(200, 50),
  cursor: Cursor.optional(),
});
export type RejectionsQuery = z.infer<typeof RejectionsQuery>;

export const RejectionParams = z.object({ id: Uuid, rejection_id: Uuid });

/**
 * Server → client, on the CLI stream and the inspector's watch socket: a request the endpoint's
 * ingest URL refused, once it is stored. It is not a message: it moves no cursor and takes no result.
 */
export const RejectionFrame = z.object({ type: z.literal('rejection'), rejection: RejectionOut });
export type RejectionFrame = z.infer<typeof RejectionFrame>;
