/**
 * The error codes of the API and the one table that maps each code to its HTTP status (docs/api.md,
 * Status codes). Server, client and CLI all read this table.
 */
export const ERROR_CODES = [
  'INVALID_REQUEST',
  'INVALID_HEADERS',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'ENDPOINT_NOT_FOUND',
  'NOT_FOUND',
  'ROUTE_NOT_FOUND',
  'DUPLICATE_URL',
  'DUPLICATE_NAME',
  'IDEMPOTENCY_CONFLICT',
  'PAYLOAD_TOO_LARGE',
  'HEADERS_TOO_LARGE',
  'REQUEST_TIMEOUT',
  'RATE_LIMITED',
  'GONE',
  'INTERNAL_ERROR',
  'DELETE_FAILED',
  'PARTIAL_DELETE_FAILURE',
  'SERVICE_UNAVAILABLE',
  'ENDPOINT_PAUSED',
  'METHOD_NOT_ALLOWED',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export const HTTP_STATUS_BY_ERROR_CODE: Readonly<Record<ErrorCode, number>> = {
  INVALID_REQUEST: 400,
  INVALID_HEADERS: 400,
  UNAUTHORIZED: 401,
  // A portal token that may read but not write (a read-only portal link).
  FORBIDDEN: 403,
  ENDPOINT_NOT_FOUND: 404,
  NOT_FOUND: 404,
  // No route at that path: the caller's base address (or version) is wrong, not an id.
  ROUTE_NOT_FOUND: 404,
  DUPLICATE_URL: 409,
  DUPLICATE_NAME: 409,
  IDEMPOTENCY_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  RATE_LIMITED: 429,
  GONE: 410,
  INTERNAL_ERROR: 500,
  DELETE_FAILED: 500,
  PARTIAL_DELETE_FAILURE: 500,
  SERVICE_UNAVAILABLE: 503,
  ENDPOINT_PAUSED: 503,
  METHOD_NOT_ALLOWED: 405,
};

/** Codes whose responses carry a Retry-After header: the caller may succeed by retrying later. */
export const RETRY_AFTER_ERROR_CODES: ReadonlySet<ErrorCode> = new Set([
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  'ENDPOINT_PAUSED',
]);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}

export function httpStatusForErrorCode(code: ErrorCode): number {
  return HTTP_STATUS_BY_ERROR_CODE[code];
}

/** One offending field of a validation error: `path` is dotted (`headers.Host`, `allowed_cidrs.1`). */
export interface ErrorDetail {
  path: string;
  message: string;
}
