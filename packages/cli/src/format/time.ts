/** "in 30m", "2h ago", "now": how far `iso` is from `now`, at the coarsest useful unit. */
export function formatRelative(iso: string, now: Date): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const deltaSeconds = Math.round((then - now.getTime()) / 1000);
  const magnitude = Math.abs(deltaSeconds);
  // A record written a moment ago by a server whose clock is a little ahead is not "in 0s".
  if (magnitude === 0) return 'now';
  let amount: string;
  if (magnitude < 60) amount = `${magnitude}s`;
  else if (magnitude < 3600) amount = `${Math.round(magnitude / 60)}m`;
  else if (magnitude < 86_400) amount = `${Math.round(magnitude / 3600)}h`;
  else amount = `${Math.round(magnitude / 86_400)}d`;
  return deltaSeconds >= 0 ? `in ${amount}` : `${amount} ago`;
}

/** An ISO timestamp with its distance from now, e.g. `2026-11-22T12:00:00.000Z (in 30m)`. */
export function formatTimestamp(iso: string, now: Date): string {
  return `${iso} (${formatRelative(iso, now)})`;
}

/** A short human form: `250ms`, `2s`, `1.5s`, `45s`, `5m`, `1h30m`. */
export function formatDuration(ms: number): string {
  const value = Math.max(0, Math.round(ms));
  if (value < 1000) return `${value}ms`;
  if (value < 9_950) return `${Math.round(value / 100) / 10}s`;
  // Rounded to the unit shown before it is split, so that 119.7 s is 2m, never 1m60s.
  const seconds = Math.round(value / 1000);
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return seconds % 60 === 0 ? `${seconds / 60}m` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
  const minutes = Math.round(value / 60_000);
  return minutes % 60 === 0 ? `${minutes / 60}h` : `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}
