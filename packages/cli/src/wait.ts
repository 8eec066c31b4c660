import { Flags } from '@oclif/core';
import { CliErrorCode, CliFailure, usageFailure } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { formatDuration, parseDuration } from './listen/duration.js';
import { sleep } from './listen/sleep.js';

/** Time between two reads of the API while waiting: short enough for CI, light on the server. */
export const WAIT_POLL_MS = 500;

export const timeoutFlag = Flags.string({
  summary: 'How long to wait before giving up (exit 9): a duration such as 30s, 5m, 1h30m.',
  default: '60s',
});

export function parseTimeout(text: string): number {
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (error) {
    throw usageFailure(`--timeout: ${(error as Error).message}`);
  }
  if (ms <= 0) throw usageFailure('--timeout must be more than 0');
  return ms;
}

/**
 * Calls `poll` until it returns a value, then returns that value; every read of the API happens in
 * `poll`, and the loop ends with WAIT_TIMEOUT (exit 9) once `timeoutMs` has passed. An error of
 * `poll` ends the wait with that error: a revoked key or a deleted endpoint cannot turn up later.
 */
export async function pollUntil<T>(timeoutMs: number, what: string, poll: () => Promise<T | undefined>, intervalMs = WAIT_POLL_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await poll();
    if (found !== undefined) return found;
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new CliFailure(CliErrorCode.WAIT_TIMEOUT, `${what} within ${formatDuration(timeoutMs)}`, ExitCode.WAIT_TIMEOUT, 'Give more time with --timeout.');
    }
    await sleep(Math.min(intervalMs, left));
  }
}
