/**
 * How an answer of the API reads: the `{ data, meta }` envelope, the error envelope, or a body that
 * is neither (a proxy's error page, another server at that address). The typed client and the
 * inspector decode with this one module; it imports neither zod nor node modules, so the
 * inspector's bundle takes it as it is.
 */
import type { ErrorCode, ErrorDetail } from './errors.js';
import { isErrorCode } from './errors.js';

/** An answer of the API in the error envelope. `data` is set only where the API sends it (delete-all). */
export class HookrelayApiError extends Error {
  override readonly name = 'HookrelayApiError';
  constructor(
    readonly code: ErrorCode | string,
    message: string,
    readonly status: number,
    readonly requestId: string | undefined,
    readonly details: ErrorDetail[] | undefined = undefined,
    readonly data: unknown = undefined,
    readonly retryAfterSeconds: number | undefined = undefined,
  ) {
    super(message);
  }

  get isKnownCode(): boolean {
    return isErrorCode(this.code);
  }
}

export type Answer<T, M> =
  | { kind: 'data'; data: T; meta: M }
  | { kind: 'error'; error: HookrelayApiError }
  /** Not the API's envelope: an error status without the error envelope, or a success without `data`. */
  | { kind: 'foreign' };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Decodes the body `text` of an answer with HTTP `status`. An error status, or an `error` member
 * at any status, is an error only when it carries the envelope's string `code`; its message falls
 * back to the code. `retryAfterSeconds` comes from the caller, who has the headers.
 */
export function decodeAnswer<T, M = Record<string, unknown>>(status: number, text: string, retryAfterSeconds?: number): Answer<T, M> {
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!isRecord(parsed)) return { kind: 'foreign' };
  const meta = isRecord(parsed.meta) ? parsed.meta : {};
  if (status >= 400 || parsed.error !== undefined) {
    const error = parsed.error;
    if (!isRecord(error) || typeof error.code !== 'string') return { kind: 'foreign' };
    return {
      kind: 'error',
      error: new HookrelayApiError(
        error.code,
        typeof error.message === 'string' ? error.message : error.code,
        status,
        typeof meta.request_id === 'string' ? meta.request_id : undefined,
        Array.isArray(error.details) ? (error.details as ErrorDetail[]) : undefined,
        parsed.data,
        retryAfterSeconds,
      ),
    };
  }
  if (!('data' in parsed)) return { kind: 'foreign' };
  return { kind: 'data', data: parsed.data as T, meta: meta as M };
}

/** A list page's cursor for the next page: `meta.next_cursor`, or null when there is none ("" and null alike). */
export function nextCursor(meta: Readonly<Record<string, unknown>>): string | null {
  return typeof meta.next_cursor === 'string' && meta.next_cursor !== '' ? meta.next_cursor : null;
}
