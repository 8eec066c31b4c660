import { z } from 'zod';
import { ERROR_CODES } from './errors.js';

export const Meta = z.object({ request_id: z.string() }).catchall(z.unknown());
export type Meta = z.infer<typeof Meta>;

export const ErrorBody = z.object({
  code: z.enum(ERROR_CODES),
  message: z.string(),
  details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/**
 * `{ error, meta }`; delete-all failures also carry `data`: the ids committed before the failure
 * (docs/api.md, Pull event deletes and retention).
 */
export const ErrorEnvelope = z.object({
  error: ErrorBody,
  data: z.unknown().optional(),
  meta: Meta,
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

/** `{ data, meta }` around any payload schema. */
export function successEnvelope<T extends z.ZodType, M extends z.ZodType = typeof Meta>(data: T, meta?: M) {
  return z.object({ data, meta: (meta ?? Meta) as M });
}

export interface SuccessEnvelope<T, M = Meta> {
  data: T;
  meta: M;
}

/** meta of a page: request_id plus `next_cursor` (null when there is no further page). */
export const PageMeta = z.object({ request_id: z.string(), next_cursor: z.string().nullable() });
export type PageMeta = z.infer<typeof PageMeta>;

/** meta of a page that also says whether more rows follow. */
export const PageMetaWithMore = z.object({
  request_id: z.string(),
  next_cursor: z.string().nullable(),
  has_more: z.boolean(),
});
export type PageMetaWithMore = z.infer<typeof PageMetaWithMore>;
