import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyRequest, RequestPayload } from 'fastify';
import type { Config } from '../config.js';
import { AppError, bodyTooLarge } from '../errors.js';

/** The declared Content-Length, or null when the request has none (chunked) or an unreadable one. */
export function declaredLength(request: FastifyRequest): number | null {
  const header = request.headers['content-length'];
  if (header === undefined) return null;
  const size = Number(header);
  return Number.isSafeInteger(size) && size >= 0 ? size : null;
}

/** An endpoint's `max_body_bytes` may lower the server's ingest limit, never raise it. */
export function assertEndpointBodyLimit(config: Pick<Config, 'maxIngestBodyBytes'>, value: number | null | undefined): void {
  if (value === undefined || value === null || value <= config.maxIngestBodyBytes) return;
  const message = `must be at most ${config.maxIngestBodyBytes}, this server's ingest body limit (HOOKRELAY_MAX_INGEST_BODY_BYTES)`;
  throw new AppError('INVALID_REQUEST', `body.max_body_bytes: ${message}`, { details: [{ path: 'body.max_body_bytes', message }] });
}

/** The limit a request to an endpoint is held to: its own when set, the server's otherwise. */
export function effectiveBodyLimit(config: Pick<Config, 'maxIngestBodyBytes'>, endpointLimit: number | null): number {
  return endpointLimit === null ? config.maxIngestBodyBytes : Math.min(endpointLimit, config.maxIngestBodyBytes);
}

/** Passes chunks through by reference and fails once more than `limit` bytes went by. */
class LimitedBody extends Transform {
  private received = 0;

  constructor(private readonly limit: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.limit) callback(bodyTooLarge(this.limit, null));
    else callback(null, chunk);
  }
}

/**
 * A preParsing step of the ingest routes, once the endpoint (and so its limit) is known and before
 * any of the body is read: a declared length over the limit is refused at once; a chunked body is
 * counted as it arrives and refused as it passes the limit. What is left of a refused body is read
 * and dropped by Node after the answer, so the connection stays usable.
 */
export function limitIngestBody(request: FastifyRequest, payload: RequestPayload, limit: number): RequestPayload {
  const size = declaredLength(request);
  if (size !== null) {
    // The HTTP parser hands over no more than the declared length.
    if (size > limit) throw bodyTooLarge(limit, size);
    return payload;
  }
  if (request.headers['transfer-encoding'] === undefined) return payload;
  const limited = new LimitedBody(limit);
  payload.on('error', (error: Error) => limited.destroy(error));
  return payload.pipe(limited);
}
