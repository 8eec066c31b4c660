import type { EventTypeSource } from '@hookrelay/shared';

/** Longest event type stored: the list's `event_type` filter takes at most this many characters. */
export const MAX_EVENT_TYPE_LENGTH = 255;

function usable(value: string): string | null {
  return value.length > 0 && value.length <= MAX_EVENT_TYPE_LENGTH ? value : null;
}

/** `a.b.c` into a parsed JSON document; a numeric segment also indexes into an array (`items.0.type`). */
function walk(document: unknown, path: string): unknown {
  let current = document;
  for (const segment of path.split('.')) {
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (typeof current === 'object' && current !== null && Object.hasOwn(current, segment)) {
      current = (current as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

/**
 * The event type of a webhook (interface "Event type extraction"), or null when extraction is not
 * configured or fails: a body that is not JSON, a missing field, a value that is an object, array
 * or null, an empty value or one longer than 255 characters. It never throws, so a webhook is
 * never refused for its event type.
 *
 * - `body`: the body is parsed as JSON whatever its Content-Type (a UTF-8 BOM is skipped); strings
 *   are stored as they are, numbers and booleans as their JSON text.
 * - `header`: the first header line of that name (case-insensitive), as sent.
 */
export function extractEventType(
  source: EventTypeSource | null,
  path: string | null,
  body: Buffer,
  rawHeaders: readonly [string, string][],
): string | null {
  if (source === null || path === null) return null;
  try {
    if (source === 'header') {
      const name = path.toLowerCase();
      const line = rawHeaders.find(([n]) => n.toLowerCase() === name);
      return line ? usable(line[1]) : null;
    }
    if (body.length === 0) return null;
    const text = body.toString('utf8');
    const value = walk(JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text), path);
    if (typeof value === 'string') return usable(value);
    if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return usable(String(value));
    return null;
  } catch {
    return null;
  }
}
