import type { z } from 'zod';

export const NUL_MESSAGE = 'must not contain NUL (\\u0000) characters';

/**
 * The same request schema, refusing U+0000 in every string it accepts (object keys too), with the
 * offending field named. PostgreSQL text and jsonb cannot hold U+0000: without this a NUL in a name,
 * a description or a filter reaches the INSERT or WHERE and fails there as a 500. `except` names
 * top-level fields that carry webhook bytes rather than text (they are stored as bytes, NUL and all).
 * A refinement, not a new type: the OpenAPI document and the inferred types stay as they were.
 */
export function refuseNul<T extends z.ZodType>(schema: T, except: readonly string[] = []): T {
  const exempt = new Set(except);
  return schema.superRefine((value, ctx) => {
    const visit = (node: unknown, path: (string | number)[], depth: number): void => {
      if (typeof node === 'string') {
        if (node.includes('\u0000')) ctx.addIssue({ code: 'custom', path, message: NUL_MESSAGE });
        return;
      }
      // Request bodies that parse are bounded by the body limit; the depth bound keeps a deeply
      // nested one from costing a stack.
      if (node === null || typeof node !== 'object' || depth > 64) return;
      if (Array.isArray(node)) {
        node.forEach((item, i) => visit(item, [...path, i], depth + 1));
        return;
      }
      for (const [key, item] of Object.entries(node)) {
        if (depth === 0 && exempt.has(key)) continue;
        if (key.includes('\u0000')) ctx.addIssue({ code: 'custom', path: [...path, key], message: `field name ${NUL_MESSAGE}` });
        visit(item, [...path, key], depth + 1);
      }
    };
    visit(value, [], 0);
  });
}
