import { HTTP_STATUS_BY_ERROR_CODE, type ErrorCode, type ErrorDetail } from '@hookrelay/shared';

/**
 * An error the API answers in its envelope. The HTTP status comes from the shared code → status
 * table, never from here. `data` is sent beside `error` only by delete-all, to report what it
 * committed before failing (docs/api.md, Pull event deletes and retention).
 */
export class AppError extends Error {
  override readonly name = 'AppError';
  readonly details: ErrorDetail[] | undefined;
  readonly data: unknown;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { details?: ErrorDetail[]; data?: unknown; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    // A client's mistake is an answer, not a fault: nobody reads its stack, and collecting one costs
    // more than the rest of refusing a request (a flood of bad signatures is thousands a second).
    const stackTraceLimit = Error.stackTraceLimit;
    if (HTTP_STATUS_BY_ERROR_CODE[code] < 500) Error.stackTraceLimit = 0;
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = stackTraceLimit;
    this.details = options.details;
    this.data = options.data;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** Which bound refused an ingest body: the whole process's budget or one source address's share. */
export type BudgetRefusal = 'process' | 'source';

/** Seconds a sender refused for the ingest budget is told to wait (uploads in flight end within them). */
const BUDGET_RETRY_AFTER_SECONDS = 5;

/**
 * The 503 of a body the process has no room for now: a provider retries it later. A state of the
 * load, not an outage of a dependency: counted (`over_budget`), not logged as one.
 */
export class IngestBudgetError extends AppError {
  constructor(readonly bound: BudgetRefusal) {
    const whose = bound === 'source' ? "this sender's share of" : "this server's";
    super('SERVICE_UNAVAILABLE', `${whose} budget of webhook bodies being received at once is spent; retry later`, {
      retryAfterSeconds: BUDGET_RETRY_AFTER_SECONDS,
    });
  }
}

export const endpointNotFound = (id: string) => new AppError('ENDPOINT_NOT_FOUND', `endpoint ${id} not found`);
export const notFound = (what: string, id: string) => new AppError('NOT_FOUND', `${what} ${id} not found`);
export const invalidRequest = (message: string, details?: ErrorDetail[]) =>
  new AppError('INVALID_REQUEST', message, details ? { details } : {});

/**
 * The 413 of a body over a limit. The message names the limit and, when the request declared it, the
 * size (a chunked body is refused as soon as it passes the limit, its whole size never known).
 */
export function bodyTooLarge(limit: number, size: number | null): AppError {
  const message = size === null
    ? `request body is larger than the limit of ${limit} bytes`
    : `request body of ${size} bytes is larger than the limit of ${limit} bytes`;
  return new AppError('PAYLOAD_TOO_LARGE', message);
}

/**
 * A start refused by its settings (the environment, a flag, a key, a missing optional package): the
 * process prints the message and exits 2, having changed nothing.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
