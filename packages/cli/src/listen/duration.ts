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

// Beside the other formatters of time, for the output's lines as well.
export { formatDuration } from '../format/time.js';
