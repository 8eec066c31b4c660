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
 * The one deadline of a wait: `--timeout` from the command's start. Every request of the wait runs
 * under `signal`, which fires when the time is up, so a server that accepts the connection and never
 * answers (or trickles its answer a byte at a time) cannot hold the wait past it; whatever is in
 * flight then ends the wait with WAIT_TIMEOUT (exit 9). Every other error ends it with that error:
 * a revoked key or a deleted endpoint cannot turn up later.
 */
export class WaitDeadline {
  readonly signal: AbortSignal;
  private readonly endsAt: number;

  constructor(
    readonly timeoutMs: number,
    /** What did not happen, for the timeout's message: `… within 3s`. */
    private readonly what: string,
  ) {
    this.endsAt = Date.now() + timeoutMs;
    this.signal = AbortSignal.timeout(timeoutMs);
  }

  timedOut(): CliFailure {
    return new CliFailure(CliErrorCode.WAIT_TIMEOUT, `${this.what} within ${formatDuration(this.timeoutMs)}`, ExitCode.WAIT_TIMEOUT, 'Give more time with --timeout.');
  }

  /** Runs requests under the deadline (`fn` passes `signal` to each); the deadline's abort becomes WAIT_TIMEOUT. */
  async within<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.signal.aborted) throw this.timedOut();
    try {
      return await fn(this.signal);
    } catch (error) {
      if (this.signal.aborted && error === this.signal.reason) throw this.timedOut();
      throw error;
    }
  }

  /** Calls `poll` until it returns a value, every `intervalMs`, until the deadline. */
  async pollUntil<T>(poll: (signal: AbortSignal) => Promise<T | undefined>, intervalMs = WAIT_POLL_MS): Promise<T> {
    for (;;) {
      const found = await this.within(poll);
      if (found !== undefined) return found;
      const left = this.endsAt - Date.now();
      if (left <= 0) throw this.timedOut();
      await sleep(Math.min(intervalMs, left), this.signal);
    }
  }
}
