import { isDatabaseUnavailable } from './errors.js';

/**
 * How long the PostgreSQL driver waits before reconnecting after a failed attempt (seconds, by
 * failures so far). Its default grows to 10–20 s, during which queries queue inside the driver:
 * kept short so that the end of an outage is noticed within half a second.
 */
export function reconnectBackoffSeconds(failures: number): number {
  return Math.min(0.05 * 2 ** failures, 0.5);
}

/** Thrown instead of queueing a query while the database is known to be unreachable. */
export class DatabaseUnreachableError extends Error {
  override readonly name = 'DatabaseUnreachableError';

  /** `code` is the last connection failure's (ECONNREFUSED, 57P01 …), so callers classify it as such. */
  constructor(
    readonly code: string,
    lastMessage: string,
  ) {
    super(`the database is unreachable (${lastMessage})`);
  }
}

/**
 * Fails queries at once while the database is unreachable rather than letting every request wait in
 * the driver's queue for the outage to end. The first failure that means "unreachable" closes the
 * gate; then one query at a time is let through as a probe, and the first one that reaches the
 * database (succeeding, or failing for any other reason) opens it again. A failure of a query that
 * began before the last success is old news (its connection attempt predates the recovery) and
 * does not close the gate again.
 */
export class AvailabilityGate {
  private lastFailure: { code: string; message: string } | null = null;
  private probing = false;
  /** Counts starts and successes, to order them. */
  private clock = 0;
  private lastSuccessAt = 0;

  get open(): boolean {
    return this.lastFailure === null;
  }

  async run<T>(query: () => Promise<T>): Promise<T> {
    if (this.lastFailure === null) return this.observe(query);
    if (this.probing) throw new DatabaseUnreachableError(this.lastFailure.code, this.lastFailure.message);
    this.probing = true;
    try {
      return await this.observe(query);
    } finally {
      this.probing = false;
    }
  }

  private async observe<T>(query: () => Promise<T>): Promise<T> {
    const startedAt = ++this.clock;
    try {
      const result = await query();
      this.reached();
      return result;
    } catch (error) {
      if (isDatabaseUnavailable(error)) {
        if (startedAt > this.lastSuccessAt) {
          this.lastFailure = { code: String((error as { code: unknown }).code), message: error instanceof Error ? error.message : String(error) };
        }
      } else if (error instanceof Error && typeof (error as { severity?: unknown }).severity === 'string') {
        // Any other PostgreSQL error came from the server: it is reachable.
        this.reached();
      }
      throw error;
    }
  }

  private reached(): void {
    this.lastFailure = null;
    this.lastSuccessAt = ++this.clock;
  }
}
