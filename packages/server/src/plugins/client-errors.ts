import { STATUS_CODES, maxHeaderSize, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { HTTP_STATUS_BY_ERROR_CODE, newUuidv7, type ErrorCode } from '@hookrelay/shared';

type ClientError = Error & { code?: string; reason?: string; bytesParsed?: number };

/** How long a refusal waits for the answer of the request before it when no request timeout is set. */
const ANSWER_WAIT_MS = 60_000;

/** Connections whose refusal is written or waiting to be: the parser may report more errors on them. */
const answered = new WeakSet<Socket>();

/** The response being written on a connection, if any (Node's own field; not in its types). */
function inFlight(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/** The code and message of an answer to a request the HTTP parser refused, or that did not arrive in time. */
function answerOf(this: FastifyInstance, error: ClientError): { code: ErrorCode; message: string } {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT': {
      const server = this.server;
      return {
        code: 'REQUEST_TIMEOUT',
        message: `the request did not arrive in time: its headers within ${server.headersTimeout / 1000} s, the whole request within ${server.requestTimeout / 1000} s`,
      };
    }
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'HEADERS_TOO_LARGE', message: `the request's header section is larger than the limit of ${(this.server as { maxHeaderSize?: number }).maxHeaderSize ?? maxHeaderSize} bytes` };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { code: 'PAYLOAD_TOO_LARGE', message: 'the chunk extensions of the request body are too large' };
    default: {
      // llhttp's reasons are fixed texts ("Invalid header value char"), never request bytes.
      const reason = typeof error.reason === 'string' && error.reason !== '' ? `: ${error.reason}` : '';
      return { code: 'INVALID_REQUEST', message: `the request is not valid HTTP/1.1${reason}` };
    }
  }
}

/**
 * Fastify's `clientErrorHandler`: the HTTP parser refused what a connection sent (a header section
 * over the limit, a NUL in a header, bytes after a body shorter than its Content-Length says), or a
 * request did not arrive within the header or request timeout. No request exists yet, so no hook
 * runs: the answer is written here, in the API's envelope with a request id of its own, and the
 * connection closed. Clients cause these at will, so they are logged at info, without a stack.
 */
export function answerClientError(this: FastifyInstance, error: ClientError, socket: Socket): void {
  // A reset connection has nobody to answer; a refused one is answered once.
  if (error.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  answered.add(socket);
  const { code, message } = answerOf.call(this, error);
  const status = HTTP_STATUS_BY_ERROR_CODE[code];
  const requestId = newUuidv7();
  this.log.info({ reqId: requestId, remoteAddress: socket.remoteAddress, err: { code: error.code, message: error.message }, statusCode: status }, 'request refused before routing');
  const answer = (): void => {
    // An answer already under way (a timeout while a response was being written) cannot be replaced.
    if (socket.writable && inFlight(socket)?.headersSent !== true) {
      const body = JSON.stringify({ error: { code, message }, meta: { request_id: requestId } });
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
          'Content-Type: application/json; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          `X-Request-Id: ${requestId}\r\n` +
          'X-Content-Type-Options: nosniff\r\n' +
          'Connection: close\r\n\r\n' +
          body,
      );
    }
    socket.destroy(error);
  };
  // Bytes after a complete request (a body longer than its Content-Length says) are refused while
  // that request is still being handled: its answer goes out first, then the refusal. A webhook
  // stored and answered with only the 400 would be sent again.
  const earlier = inFlight(socket);
  if (earlier !== undefined && earlier.req?.complete === true && !earlier.writableEnded) {
    const timer = setTimeout(answer, this.server.requestTimeout || ANSWER_WAIT_MS);
    const answerNow = (): void => {
      clearTimeout(timer);
      earlier.off('finish', answerNow);
      earlier.off('close', answerNow);
      answer();
    };
    earlier.once('finish', answerNow);
    earlier.once('close', answerNow);
    return;
  }
  answer();
}
