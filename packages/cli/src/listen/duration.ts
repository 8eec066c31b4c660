import { isUuid, uuidv7AtTime } from '@hookrelay/shared/ids';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;

/**
 * `250ms`, `30s`, `10m`, `2h`, `1d`, or a sum such as `1h30m`, in milliseconds. A bare number is
 * refused: "5" could mean seconds or minutes, and a wrong guess silently changes what is replayed.
 */
export function parseDuration(text: string): number {
  const value = text.trim().toLowerCase();
  if (value === '') throw new Error('a duration is required, such as 30s, 10m or 2h');
  let total = 0;
  let at = 0;
  PART.lastIndex = 0;
  while (at < value.length) {
    PART.lastIndex = at;
    const match = PART.exec(value);
    if (match === null) {
      throw new Error(`"${text}" is not a duration: use a number and a unit (ms, s, m, h, d), such as 30s, 10m, 2h or 1h30m`);
    }
    total += Number(match[1]) * (UNIT_MS[match[2]!] ?? 0);
    at = PART.lastIndex;
  }
  if (!Number.isFinite(total)) throw new Error(`"${text}" is too long a duration`);
  return Math.round(total);
}

/** A short human form: `250ms`, `2s`, `1.5s`, `45s`, `5m`, `1h30m`. */
export function formatDuration(ms: number): string {
  const value = Math.max(0, Math.round(ms));
  if (value < 1000) return `${value}ms`;
  if (value < 10_000) {
    const seconds = Math.round(value / 100) / 10;
    return `${seconds}s`;
  }
  if (value < 60_000) return `${Math.round(value / 1000)}s`;
  if (value < 3_600_000) {
    const minutes = Math.floor(value / 60_000);
    const seconds = Math.round((value % 60_000) / 1000);
    return seconds === 0 ? `${minutes}m` : `${minutes}m${seconds}s`;
  }
  const hours = Math.floor(value / 3_600_000);
  const minutes = Math.round((value % 3_600_000) / 60_000);
  return minutes === 0 ? `${hours}h` : `${hours}h${minutes}m`;
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

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?$/iu;

/**
 * The listen cursor (`after`) of `--since`:
 * - a message id: start with that message (the cursor is the UUID just before it);
 * - a duration (`10m`): the UUIDv7 of that long ago with zero random bits, below every id of that
 *   millisecond;
 * - an ISO 8601 time (`2026-05-01T12:00:00Z`): the UUIDv7 of that time.
 */
export function sinceCursor(value: string, now: number): string {
  const text = value.trim();
  if (isUuid(text)) return uuidBefore(text);
  if (ISO_DATE.test(text)) {
    const time = Date.parse(text);
    if (Number.isNaN(time)) throw new Error(`"${value}" is not a valid time`);
    if (time > now) throw new Error(`"${value}" is in the future`);
    return uuidv7AtTime(time);
  }
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch {
    throw new Error(`"${value}" is neither a duration (10m, 2h), a message id nor an ISO 8601 time`);
  }
  return uuidv7AtTime(Math.max(0, now - ms));
}
