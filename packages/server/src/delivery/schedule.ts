/**
 * When the next attempt of a failed delivery runs (docs/api.md, How a delivery is sent): the
 * schedule's delay for the attempt that just failed, ±20 % jitter, and at least what a 429/503
 * Retry-After asked for. A schedule of N delays allows N + 1 attempts; after the last one the
 * message is failed_permanent.
 */

export const JITTER_FRACTION = 0.2;
/** A Retry-After beyond this is taken as this: a receiver cannot park a message for a year. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * Delay in ms before the next attempt, or null when the delivery has used its last attempt.
 * `attemptInDelivery` is 1 for the first attempt of a delivery (manual retries and replays start a
 * new delivery, so they get the whole schedule again).
 */
export function nextRetryDelayMs(
  scheduleSeconds: readonly number[],
  attemptInDelivery: number,
  retryAfterMs: number | null = null,
  random: () => number = Math.random,
): number | null {
  const seconds = scheduleSeconds[attemptInDelivery - 1];
  if (seconds === undefined) return null;
  const jitter = 1 + (random() * 2 - 1) * JITTER_FRACTION;
  const scheduled = Math.round(seconds * 1000 * jitter);
  return retryAfterMs === null ? scheduled : Math.max(scheduled, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

/**
 * A Retry-After header value in ms: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); null when
 * absent or unreadable. A date in the past means "now" (0).
 */
export function parseRetryAfterMs(value: string | string[] | undefined, now: number = Date.now()): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // An HTTP-date names its month (`Sun, 06 Nov 1994 08:49:37 GMT`); Date.parse alone takes "-1" too.
  if (!/[a-z]{3}/i.test(text)) return null;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, Math.min(date - now, MAX_RETRY_AFTER_MS));
}

/** The statuses whose Retry-After is honoured: the two that say "come back later". */
export function honoursRetryAfter(status: number): boolean {
  return status === 429 || status === 503;
}
