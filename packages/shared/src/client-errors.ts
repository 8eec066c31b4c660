/**
 * What the client throws when it gets no API answer, and how it tells a wrong address from a
 * dropped connection: apart from the client's one method per route (client.ts re-exports the errors).
 */
/** The API could not be reached, or a 5xx came without the API's envelope (a proxy in front of a restarting server). */
export class HookrelayNetworkError extends Error {
  override readonly name = 'HookrelayNetworkError';
  constructor(
    message: string,
    readonly url: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Something answered at the API address, but not the hookrelay API: a wrong path in the URL (a web
 * page's 404, or a hookrelay server's `ROUTE_NOT_FOUND` for a base address with `/v1` or another
 * path in it), `https://` against a plain-HTTP server, or `http://` against a TLS one. Retrying
 * cannot help; the address must change.
 */
export class HookrelayWrongServerError extends Error {
  override readonly name = 'HookrelayWrongServerError';
  /** The base address the client was given, which is the one to change. */
  readonly apiUrl: string | undefined;
  constructor(
    message: string,
    readonly url: string,
    /**
     * `not_api`: an answer without the API's envelope; `not_base_address`: a hookrelay server's
     * `ROUTE_NOT_FOUND` (the `cause`, with its request id); the others: the scheme does not match the server.
     */
    readonly kind: 'not_api' | 'not_base_address' | 'https_to_plain_http' | 'http_to_tls',
    /** The HTTP status of a `not_api` or `not_base_address` answer. */
    readonly status: number | undefined = undefined,
    options?: { cause?: unknown; apiUrl?: string },
  ) {
    super(message, options);
    this.apiUrl = options?.apiUrl;
  }
}

/** Whether an error (or one in its cause chain) is OpenSSL reading plain HTTP where a TLS record was due. */
export function isPlainHttpUnderTls(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' || code === 'EPROTO') return true;
    if (/wrong version number|packet length too long/iu.test(current.message)) return true;
  }
  return false;
}

/** Whether the connection was closed or reset before any answer: what a TLS server does to plain HTTP. */
export function isClosedWithoutAnswer(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET') return true;
  }
  return false;
}

/**
 * Does `host:port` complete a TLS handshake? Asked only after a plain-HTTP request was cut off, to
 * tell "this server speaks TLS" from any other dropped connection. The certificate is not judged:
 * only whether TLS is spoken.
 */
export async function speaksTls(url: URL, timeoutMs = 3_000): Promise<boolean> {
  const { connect } = await import('node:tls');
  const host = url.hostname.replace(/^\[|\]$/gu, '');
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(url.port || 80), servername: /^[\d.]+$|:/u.test(host) ? undefined : host, rejectUnauthorized: false });
    const done = (result: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('secureConnect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The base URL with another scheme, for the sentence that names the fix. */
export function withScheme(apiUrl: string, scheme: 'http:' | 'https:'): string {
  return apiUrl.replace(/^https?:/iu, scheme);
}

