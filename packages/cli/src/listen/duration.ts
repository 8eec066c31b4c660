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
