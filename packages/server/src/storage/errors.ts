import { AppError } from '../errors.js';

/** The store could not be read (not: the payload is gone on purpose). Answered as `body_error`. */
export class PayloadUnavailableError extends Error {
  override readonly name = 'PayloadUnavailableError';
}

/**
 * An object store refused or did not answer a write. Answered 503 SERVICE_UNAVAILABLE with
 * Retry-After; like a database outage, retrying the same batch item by item would not help.
 */
export class PayloadStoreUnavailableError extends AppError {
  constructor(cause: unknown) {
    super('SERVICE_UNAVAILABLE', 'payload storage is unavailable; retry later', { retryAfterSeconds: 5, cause });
  }
}
