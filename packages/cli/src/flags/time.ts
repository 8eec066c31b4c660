import { isUuid, uuidv7AtTime } from '@hookrelay/shared/ids';
import { usageFailure } from '../errors.js';
import { parseDuration } from '../listen/duration.js';
import { ZERO_CURSOR } from '../listen/ports.js';

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?$/iu;

/**
 * The milliseconds of an ISO 8601 date or time (RFC 3339 among them; without an offset it is local
 * time, as `Date.parse` reads it); undefined for text of another shape.
 */
function isoTime(flag: string, value: string, text: string): number | undefined {
  if (!ISO_DATE.test(text)) return undefined;
  const time = Date.parse(text);
  if (Number.isNaN(time)) throw usageFailure(`--${flag}: "${value}" is not a valid time`);
  return time;
}

/**
 * A point in time given on the command line, as the RFC 3339 timestamp the API takes: an ISO 8601
 * date or time (`2026-05-01`, `2026-05-01T12:00:00Z`), or a duration ago (`10m`, `2h`, `1d`, `1h30m`).
 */
export function parseTimeFlag(flag: string, value: string, now: number): string {
  const text = value.trim();
  const time = isoTime(flag, value, text);
  if (time !== undefined) return new Date(time).toISOString();
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

/** The UUID just below `id` (128-bit minus one), so that `after=` it starts with `id` itself. */
export function uuidBefore(id: string): string {
  const hex = id.replace(/-/gu, '').toLowerCase();
  let value = BigInt(`0x${hex}`);
  if (value === 0n) return id.toLowerCase();
  value -= 1n;
  const text = value.toString(16).padStart(32, '0');
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
}

/**
 * The cursor (the id that reading starts after) of `--since`, as `listen` and `inbound messages
 * wait` read it:
 * - a message id: start with that message (the cursor is the UUID just before it);
 * - a duration (`10m`): the UUIDv7 of that long ago with zero random bits, below every id of that
 *   millisecond;
 * - an ISO 8601 time (`2026-05-01T12:00:00Z`): the UUIDv7 of that time; a time after `now` is refused.
 */
export function sinceCursor(value: string, now: number): string {
  const text = value.trim();
  if (isUuid(text)) return uuidBefore(text);
  const time = isoTime('since', value, text);
  if (time !== undefined) {
    if (time > now) throw usageFailure(`--since: "${value}" is in the future`);
    return uuidv7AtTime(time);
  }
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch {
    throw usageFailure(`--since: "${value}" is neither a duration (10m, 2h), a message id nor an ISO 8601 time (2026-05-01T12:00:00Z)`);
  }
  return uuidv7AtTime(Math.max(0, now - ms));
}

/**
 * How far the server's clock may be behind this machine's for `--since now` still to count a
 * message that arrived after the command started: message ids carry the server's time.
 */
export const CLOCK_SKEW_MS = 1000;

/**
 * The cursor a wait reads after: `--from-start` the endpoint's first message; `--since now` (or no
 * `--since`) the moment the CLI process started (`startedAt`, `performance.timeOrigin`) less
 * CLOCK_SKEW_MS, so that a message posted while the CLI loads is counted; any other `--since` as
 * `sinceCursor` reads it.
 */
export function waitStartCursor(flags: { since?: string | undefined; fromStart: boolean }, now: number, startedAt: number): string {
  if (flags.fromStart) return ZERO_CURSOR;
  if (flags.since === undefined || flags.since.trim().toLowerCase() === 'now') return uuidv7AtTime(Math.max(0, startedAt - CLOCK_SKEW_MS));
  return sinceCursor(flags.since, now);
}
