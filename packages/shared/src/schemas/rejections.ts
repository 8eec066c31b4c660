import { z } from 'zod';
import { Cursor, limitParam, Timestamp, TimestampIn, Uuid } from './common.js';

/**
 * Why a request at an ingest URL was refused (docs/api.md, Refused requests). A closed set: a client
 * may switch on it.
 */
export const REJECTION_REASONS = [
  'signature_missing',
  'signature_malformed',
  'signature_mismatch',
  'timestamp_missing',
  'timestamp_malformed',
  'timestamp_out_of_tolerance',
  'token_missing',
  'token_mismatch',
  'ip_not_allowed',
  'verification_misconfigured',
  'body_too_large',
  'endpoint_paused',
  'method_not_allowed',
] as const;
export const RejectionReason = z.enum(REJECTION_REASONS, { message: `must be one of ${REJECTION_REASONS.join(', ')}` });
export type RejectionReason = z.infer<typeof RejectionReason>;

/** The kind of endpoint whose ingest URL refused a request. */
export const RejectionEndpointKind = z.enum(['inbound', 'pull']);
export type RejectionEndpointKind = z.infer<typeof RejectionEndpointKind>;

/** Most refused requests kept per endpoint; older ones are removed as new ones are stored. */
export const REJECTIONS_KEPT_PER_ENDPOINT = 1000;
/** Most bytes of a refused request's body that are kept. */
export const REJECTION_BODY_PREFIX_BYTES = 64 * 1024;
/** The text that replaces a redacted header value. */
export const REDACTED_HEADER_VALUE = '[redacted]';

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
