import { parseDuration } from '../listen/duration.js';
import { usageFailure } from '../errors.js';

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?$/iu;

/**
 * A point in time given on the command line, as the RFC 3339 timestamp the API takes: an ISO 8601
 * date or time (`2026-05-01`, `2026-05-01T12:00:00Z`; without an offset it is local time, as
 * `Date.parse` reads it), or a duration ago (`10m`, `2h`, `1d`, `1h30m`).
 */
export function parseTimeFlag(flag: string, value: string, now: number): string {
  const text = value.trim();
  if (ISO_DATE.test(text)) {
    const time = Date.parse(text);
    if (Number.isNaN(time)) throw usageFailure(`--${flag}: "${value}" is not a valid time`);
    return new Date(time).toISOString();
  }
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch {
    throw usageFailure(
      `--${flag}: "${value}" is neither a duration (10m, 2h, 1d) nor an ISO 8601 time (2026-05-01T12:00:00Z)`,
    );
  }
  return new Date(now - ms).toISOString();
}
