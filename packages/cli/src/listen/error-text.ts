/**
 * How a failure reads in the listener's lines and warnings, whatever threw it: the API client, undici,
 * `ws` or Node's sockets (whose AggregateError holds one error per address tried).
 */

interface ErrorShape {
  code?: unknown;
  message?: unknown;
  errors?: unknown;
  cause?: unknown;
}

/** The code of an error, looking into AggregateError (IPv4 and IPv6 both refused) and causes. */
export function errorCode(error: unknown): string | undefined {
  const shape = error as ErrorShape | null;
  if (shape === null || typeof shape !== 'object') return undefined;
  if (typeof shape.code === 'string') return shape.code;
  if (Array.isArray(shape.errors)) {
    for (const inner of shape.errors) {
      const code = errorCode(inner);
      if (code !== undefined) return code;
    }
  }
  return shape.cause === undefined ? undefined : errorCode(shape.cause);
}

/** The error's message (each inner error's, once, for an AggregateError), else its code. */
export function errorText(error: unknown): string {
  const shape = error as ErrorShape | null;
  if (shape !== null && typeof shape === 'object') {
    if (Array.isArray(shape.errors) && shape.errors.length > 0) {
      return [...new Set(shape.errors.map((inner) => errorText(inner)))].join('; ');
    }
    if (typeof shape.message === 'string' && shape.message !== '') return shape.message;
    const code = errorCode(error);
    if (code !== undefined) return code;
  }
  return String(error);
}
