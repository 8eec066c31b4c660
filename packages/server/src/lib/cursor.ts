import { z } from 'zod';
import { AppError } from '../errors.js';

/**
 * Opaque keyset cursors (decisions.md §8): base64url of a small JSON object. Callers must not
 * parse them; the server validates every decoded cursor against the shape it expects.
 */
export function encodeCursor(position: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(position), 'utf8').toString('base64url');
}

export function decodeCursor<T extends z.ZodType>(cursor: string, shape: T): z.infer<T> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = shape.safeParse(value);
  if (!parsed.success) {
    throw new AppError('INVALID_REQUEST', 'query.cursor: is not a cursor this list returned', {
      details: [{ path: 'query.cursor', message: 'is not a cursor this list returned' }],
    });
  }
  return parsed.data;
}

/** Keyset position on a bigint sequence column. */
export const SeqCursor = z.strictObject({ s: z.string().regex(/^\d{1,19}$/) });
