import { Agent, request, type Dispatcher } from 'undici';
import { BodyFetchError, type BodyStream } from './forwarder.js';

export interface BodyFetchOptions {
  /** The API's base URL: a message's `body_url` is a path under it. */
  apiUrl: string;
  apiKey: string;
  userAgent: string;
  /** Per request: the answer's headers, and each pause between its bytes. */
  timeoutMs?: number;
  dispatcher?: Dispatcher;
}

/** What is read of a refusal's body, for its message. */
const ERROR_BODY_LIMIT = 16 * 1024;

/**
 * The URL of `bodyUrl` under the API's base URL (its path kept, as the client's requests do), or
 * null when it would lead anywhere else: the API key goes with the request.
 */
export function bodyRequestUrl(apiUrl: string, bodyUrl: string): URL | null {
  if (!bodyUrl.startsWith('/') || bodyUrl.startsWith('//')) return null;
  const base = new URL(apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`);
  const url = new URL(bodyUrl.slice(1), base);
  return url.origin === base.origin && url.pathname.startsWith(base.pathname) ? url : null;
}

/** The error envelope's message of a refusal, when there is one (else undefined: not the API's answer). */
async function refusalText(body: Dispatcher.ResponseData['body']): Promise<string | undefined> {
  let text = '';
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      text += chunk.toString('utf8');
      if (text.length > ERROR_BODY_LIMIT) break;
    }
  } catch {
    // The refusal's status says enough.
  } finally {
    body.destroy();
  }
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    return typeof message === 'string' ? message : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Opens the download of a body the server sent by reference (GET /v1/inbound-messages/{id}/body,
 * with the listener's API key): its bytes as they arrive, never gathered; null when the server no
 * longer has it (404). Any other failure is a BodyFetchError: `unreachable` without an answer of
 * the API (a proxy's 5xx page, 429 too), `server` for the API's own 5xx, `refused` otherwise. A
 * stop does not cut a download: the attempt in flight is finished.
 */
export function bodyOpener(options: BodyFetchOptions): (bodyUrl: string) => Promise<BodyStream | null> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  let dispatcher = options.dispatcher;
  return async (bodyUrl) => {
    const url = bodyRequestUrl(options.apiUrl, bodyUrl);
    if (url === null) throw new BodyFetchError(`the server named a body outside its API (${JSON.stringify(bodyUrl.slice(0, 200))}): not fetched`, 'refused');
    dispatcher ??= new Agent({ connect: { timeout: 10_000 } });
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method: 'GET',
        headers: { authorization: `Bearer ${options.apiKey}`, 'user-agent': options.userAgent, accept: '*/*' },
        dispatcher,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
    } catch (error) {
      throw new BodyFetchError(`could not fetch the body from the server: ${error instanceof Error ? error.message : String(error)}`, 'unreachable');
    }
    // Destroying a download not read to its end (the app went away) emits an error no one awaits.
    response.body.on('error', () => {});
    if (response.statusCode === 200) return response.body;
    if (response.statusCode === 404) {
      response.body.destroy();
      return null;
    }
    const status = response.statusCode;
    const message = await refusalText(response.body);
    const text = `the server answered the body's download with HTTP ${status}${message === undefined ? '' : `: ${message}`}`;
    if (status === 429 || (status >= 500 && message === undefined)) throw new BodyFetchError(text, 'unreachable');
    throw new BodyFetchError(text, status >= 500 ? 'server' : 'refused');
  };
}
