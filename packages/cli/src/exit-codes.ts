import type { ErrorCode } from '@hookrelay/shared';

/**
 * The one table of the CLI's exit codes. Scripts branch on these numbers, so they never change
 * meaning; docs/cli.md repeats this table.
 */
export const ExitCode = {
  OK: 0,
  GENERIC: 1,
  USAGE: 2,
  AUTH: 3,
  NOT_FOUND: 4,
  CONFLICT: 5,
  SERVER: 6,
  NETWORK: 7,
  /** `messages wait`: the message failed for good (failed_permanent). */
  DELIVERY_FAILED: 8,
  /** `messages wait`, `inbound messages wait`: the awaited state or message did not come in time. */
  WAIT_TIMEOUT: 9,
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Every API error code and the exit code it leaves the CLI with. */
export const EXIT_CODE_BY_API_ERROR: Readonly<Record<ErrorCode, ExitCode>> = {
  // The request itself was wrong: the same as a bad flag, the caller has to change the command.
  INVALID_REQUEST: ExitCode.USAGE,
  INVALID_HEADERS: ExitCode.USAGE,
  PAYLOAD_TOO_LARGE: ExitCode.USAGE,
  HEADERS_TOO_LARGE: ExitCode.USAGE,
  METHOD_NOT_ALLOWED: ExitCode.USAGE,
  UNAUTHORIZED: ExitCode.AUTH,
  // A credential that may not do this (a read-only portal link): as a wrong key, change the credential.
  FORBIDDEN: ExitCode.AUTH,
  ENDPOINT_NOT_FOUND: ExitCode.NOT_FOUND,
  NOT_FOUND: ExitCode.NOT_FOUND,
  // Not a missing resource but a wrong API address: a configuration failure, as CONFIG_ERROR is.
  ROUTE_NOT_FOUND: ExitCode.GENERIC,
  // Gone is "it existed once": for a script it is as absent as never-existed.
  GONE: ExitCode.NOT_FOUND,
  DUPLICATE_URL: ExitCode.CONFLICT,
  DUPLICATE_NAME: ExitCode.CONFLICT,
  IDEMPOTENCY_CONFLICT: ExitCode.CONFLICT,
  INTERNAL_ERROR: ExitCode.SERVER,
  DELETE_FAILED: ExitCode.SERVER,
  PARTIAL_DELETE_FAILURE: ExitCode.SERVER,
  SERVICE_UNAVAILABLE: ExitCode.SERVER,
  ENDPOINT_PAUSED: ExitCode.SERVER,
  // Neither the caller's fault nor the server's: retrying later is the answer.
  RATE_LIMITED: ExitCode.GENERIC,
  // The request did not reach the server in time: a network that slow is the network's failure.
  REQUEST_TIMEOUT: ExitCode.NETWORK,
};

/**
 * Exit code of an API error. Codes this CLI version does not know yet (a newer server) fall back to
 * their HTTP status, so that a script still sees the right class of failure.
 */
export function exitCodeForApiError(code: string, status: number): ExitCode {
  // The code is the server's text: only the table's own entries count (not `constructor`).
  const known = Object.hasOwn(EXIT_CODE_BY_API_ERROR, code) ? (EXIT_CODE_BY_API_ERROR as Readonly<Record<string, ExitCode>>)[code] : undefined;
  if (known !== undefined) return known;
  if (status === 401 || status === 403) return ExitCode.AUTH;
  if (status === 404 || status === 410) return ExitCode.NOT_FOUND;
  if (status === 409) return ExitCode.CONFLICT;
  if (status >= 500) return ExitCode.SERVER;
  if (status >= 400 && status < 500 && status !== 429) return ExitCode.USAGE;
  return ExitCode.GENERIC;
}
