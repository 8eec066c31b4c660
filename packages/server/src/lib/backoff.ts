/**
 * Exponential backoff with jitter for background loops that retry while a dependency (the
 * database) is down: quick retries for a blip, then one try every `maxMs` at most, so that an outage
 * costs a handful of connection attempts and log lines rather than a steady stream. Jitter keeps the
 * processes of a cluster from retrying in step when the database comes back.
 */
export class Backoff {
  private failures = 0;

  constructor(
    private readonly initialMs = 500,
    private readonly maxMs = 5_000,
    private readonly random: () => number = Math.random,
  ) {}

  /** Records one more failure and returns how long to wait before the next try (±25 %). */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    return Math.round(Math.min(this.maxMs, base * (0.75 + this.random() / 2)));
  }

  /** Back to quick retries after a success. */
  reset(): void {
    this.failures = 0;
  }

  /** Failures since the last success. */
  get consecutiveFailures(): number {
    return this.failures;
  }
}
