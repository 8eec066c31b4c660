import type { ErrorDetail } from '@hookrelay/shared';
import { HookrelayApiError, HookrelayNetworkError, HookrelayWrongServerError } from '@hookrelay/shared/client';
import { ExitCode, exitCodeForApiError } from './exit-codes.js';

/**
 * Codes of failures the CLI detects itself, beside the API's codes. They share the `code` field of
 * the error output so that scripts read one field whatever went wrong.
 */
export const CliErrorCode = {
  INVALID_ARGUMENTS: 'INVALID_ARGUMENTS',
  CONFIRMATION_REQUIRED: 'CONFIRMATION_REQUIRED',
  NO_API_KEY: 'NO_API_KEY',
  PROFILE_NOT_FOUND: 'PROFILE_NOT_FOUND',
  NETWORK_ERROR: 'NETWORK_ERROR',
  CONFIG_ERROR: 'CONFIG_ERROR',
  ABORTED: 'ABORTED',
  INTERRUPTED: 'INTERRUPTED',
  SLOT_IN_USE: 'SLOT_IN_USE',
  /** `pull events get --body-only` of a deleted event: the record is there, its payload is not. */
  PAYLOAD_DELETED: 'PAYLOAD_DELETED',
  /** The server could not read a payload from its storage (`body_error: payload_unavailable`). */
  PAYLOAD_UNAVAILABLE: 'PAYLOAD_UNAVAILABLE',
  /** `trigger --secret`: the endpoint's ingest URL refused the sample (its verification, a pause). */
  INGEST_REFUSED: 'INGEST_REFUSED',
  /** `messages wait`: the message failed for good. */
  DELIVERY_FAILED: 'DELIVERY_FAILED',
  /** `messages wait`: the message was deleted while it was waited on; it will never be final. */
  MESSAGE_DELETED: 'MESSAGE_DELETED',
  /** `messages wait`, `inbound messages wait`: nothing came within --timeout. */
  WAIT_TIMEOUT: 'WAIT_TIMEOUT',
  CLI_ERROR: 'CLI_ERROR',
} as const;

export type CliErrorCode = (typeof CliErrorCode)[keyof typeof CliErrorCode];

/** A failure the CLI raises on purpose: it knows the code, the exit code and what to suggest. */
export class CliFailure extends Error {
  override readonly name = 'CliFailure';
  constructor(
    readonly code: CliErrorCode,
    message: string,
    readonly exitCode: ExitCode,
    readonly hint?: string,
  ) {
    super(message);
  }
}

export function usageFailure(message: string, hint?: string): CliFailure {
  return new CliFailure(CliErrorCode.INVALID_ARGUMENTS, message, ExitCode.USAGE, hint ?? 'See --help for the flags of this command.');
}

/** Everything the error output shows, whatever kind of error produced it. */
export interface FailureReport {
  code: string;
  message: string;
  exitCode: ExitCode;
  requestId: string | null;
  status: number | null;
  hint: string | undefined;
  details: ErrorDetail[] | undefined;
}

/** The one-line JSON object written to stderr under `--json`. */
export interface FailureJson {
  error: {
    code: string;
    message: string;
    request_id: string | null;
    status: number | null;
    details?: ErrorDetail[];
  };
}

const FORBIDDEN_HEADERS_TEXT =
  'Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE, Trailer, Expect, Content-Type, hookrelay-event-type, Proxy-* and webhook-*';

const BASE_ADDRESS_HINT =
  "Set --api-url / HOOKRELAY_API_URL (or the profile's api_url) to the server's base address, such as https://hooks.example.com, without /v1 or another path the server does not serve.";

/** The words of a hookrelay server's ROUTE_NOT_FOUND, whose base address has a path too many (`…/v1`, `…/api`). */
function notBaseAddressMessage(apiUrl: string): string {
  return `${apiUrl} is not the hookrelay API's base address (HOOKRELAY_API_URL should be the server's root, e.g. http://127.0.0.1:8787, without /v1)`;
}

function hintForApiError(error: HookrelayApiError): string | undefined {
  const retry = error.retryAfterSeconds !== undefined ? ` Retry in ${error.retryAfterSeconds} s.` : '';
  switch (error.code) {
    case 'UNAUTHORIZED':
      return 'The API key was refused. Check --api-key / HOOKRELAY_API_KEY, or run `hookrelay login` again.';
    case 'ENDPOINT_NOT_FOUND':
      return "No such endpoint in this key's project. `hookrelay endpoints list`, `inbound list` and `pull list` show the ids you can use.";
    case 'NOT_FOUND':
      return "Nothing with that id (or name) exists in this key's project.";
    case 'ROUTE_NOT_FOUND':
      return BASE_ADDRESS_HINT;
    case 'INVALID_REQUEST':
      return 'Check the values named above; `--help` lists each flag and its range.';
    case 'INVALID_HEADERS':
      return `Custom headers may not set ${FORBIDDEN_HEADERS_TEXT}.`;
    case 'PAYLOAD_TOO_LARGE':
      return 'The request body is over the server limit.';
    case 'DUPLICATE_URL':
      return 'Another endpoint of this project already has this URL.';
    case 'DUPLICATE_NAME':
      return 'That name is taken in this project: change the existing one with `update`, or pick another name.';
    case 'IDEMPOTENCY_CONFLICT':
      return 'This idempotency key was already used with a different request (its body, or for an event its type, owner or channels): use a new key for a new request.';
    case 'GONE':
      return 'That resource was deleted.';
    case 'RATE_LIMITED':
      return `Too many requests.${retry}`;
    case 'SERVICE_UNAVAILABLE':
    case 'ENDPOINT_PAUSED':
      return `The server cannot serve this now.${retry}`;
    default:
      return error.status >= 500
        ? 'The server failed. Retry later; quote the request id if you report it.'
        : undefined;
  }
}

/**
 * oclif's parse errors span lines (a preamble, tab-indented detail, a help pointer); the error
 * output is one line, so that it fits `CODE: message` and a JSON string reads well.
 */
export function cleanOclifMessage(message: string): string {
  return message
    .replace(/\n?See more help with --help\s*$/u, '')
    .replace(/^The following errors? occurred:\s*/u, '')
    .replace(/\s*\n\t/gu, ': ')
    .replace(/:\s*\n\s*/gu, ': ')
    .replace(/\s*\n\s*/gu, '; ')
    .replace(/[ \t]{2,}/gu, ' ')
    .trim();
}

interface OclifErrorShape {
  oclif?: { exit?: number | false };
  code?: unknown;
}

/** Classify any thrown value into the CLI's error output and exit code. */
export function describeFailure(error: unknown): FailureReport {
  const base = { requestId: null, status: null, hint: undefined, details: undefined };
  if (error instanceof CliFailure) {
    return { ...base, code: error.code, message: error.message, exitCode: error.exitCode, hint: error.hint };
  }
  if (error instanceof HookrelayApiError) {
    return {
      code: error.code,
      message: error.message,
      exitCode: exitCodeForApiError(error.code, error.status),
      requestId: error.requestId ?? null,
      status: error.status,
      hint: hintForApiError(error),
      details: error.details,
    };
  }
  if (error instanceof HookrelayWrongServerError) {
    // The address is wrong, not the resource: a script must not read this as "not found" or retry it.
    if (error.kind === 'not_base_address') {
      const answer = error.cause instanceof HookrelayApiError ? error.cause : undefined;
      return {
        ...base,
        code: CliErrorCode.CONFIG_ERROR,
        message: error.apiUrl === undefined ? error.message : notBaseAddressMessage(error.apiUrl),
        exitCode: ExitCode.GENERIC,
        requestId: answer?.requestId ?? null,
        status: error.status ?? null,
        // The server's own words name the path it was asked for; the same answer from the root itself means a server older than this CLI.
        hint: `The server answered ${answer === undefined ? 'ROUTE_NOT_FOUND' : `"${answer.message}"`}. ${BASE_ADDRESS_HINT} If that is the address already, the server is older than this CLI.`,
      };
    }
    return {
      ...base,
      code: CliErrorCode.CONFIG_ERROR,
      message: error.message,
      exitCode: ExitCode.GENERIC,
      hint: error.kind === 'not_api' ? BASE_ADDRESS_HINT : "Change the scheme in --api-url / HOOKRELAY_API_URL (or the profile's api_url).",
    };
  }
  if (error instanceof HookrelayNetworkError) {
    return {
      ...base,
      code: CliErrorCode.NETWORK_ERROR,
      message: error.message,
      exitCode: ExitCode.NETWORK,
      hint: 'Is the server running at that address? Set it with --api-url or HOOKRELAY_API_URL.',
    };
  }
  if (error instanceof Error) {
    const oclif = (error as OclifErrorShape).oclif;
    // oclif marks its own parse and validation errors with an exit code (2 unless configured).
    if (oclif !== undefined && typeof oclif.exit === 'number' && oclif.exit !== 0) {
      return {
        ...base,
        code: CliErrorCode.INVALID_ARGUMENTS,
        message: cleanOclifMessage(error.message),
        exitCode: ExitCode.USAGE,
        hint: 'See --help for the flags of this command.',
      };
    }
    return { ...base, code: CliErrorCode.CLI_ERROR, message: error.message || String(error), exitCode: ExitCode.GENERIC };
  }
  return { ...base, code: CliErrorCode.CLI_ERROR, message: String(error), exitCode: ExitCode.GENERIC };
}

export function failureToJson(report: FailureReport): FailureJson {
  const json: FailureJson = {
    error: { code: report.code, message: report.message, request_id: report.requestId, status: report.status },
  };
  if (report.details !== undefined && report.details.length > 0) json.error.details = report.details;
  return json;
}
