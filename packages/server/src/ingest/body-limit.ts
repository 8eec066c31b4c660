import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import type { Config } from '../config.js';
import { AppError, IngestBudgetError, bodyTooLarge, type BudgetRefusal } from '../errors.js';
import type { BodyBudget, BodyReservation } from './body-budget.js';

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

/** What bounds the bodies being received (docs/operating.md, Body limits and memory). */
export interface IngestGuards {
  budget: BodyBudget;
  /** Bytes a second a body must keep arriving at once past its first MiB; 0 = no minimum. */
  minBytesPerSecond: number;
  /** The window over which that rate is judged. */
  rateWindowMs?: number;
  /** Counts a refusal of the budget, by the bound it would have passed. */
  onBudgetRefusal?: (why: BudgetRefusal) => void;
}

/** A body may start slowly: the rate is judged only past this many bytes. */
export const MIN_RATE_GRACE_BYTES = 1024 * 1024;
const DEFAULT_RATE_WINDOW_MS = 5000;

export const overBudget = (why: BudgetRefusal): AppError => new IngestBudgetError(why);

/** The 408 of a body that stopped arriving at the minimum rate. */
export function uploadTooSlow(minBytesPerSecond: number, windowMs: number): AppError {
  return new AppError(
    'REQUEST_TIMEOUT',
    `the request body arrived at less than ${minBytesPerSecond} bytes per second over ${windowMs / 1000} s (HOOKRELAY_INGEST_MIN_UPLOAD_BYTES_PER_SECOND)`,
  );
}

/**
 * Passes chunks through by reference while it counts them: fails once more than `limit` bytes went
 * by (a chunked body), grows the body's budget reservation by what arrives beyond what was reserved,
 * and cuts a body past its first MiB that arrives slower than the minimum rate.
 */
class GuardedBody extends Transform {
  private received = 0;
  private receivedAtTick = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limit: number,
    private readonly reservation: BodyReservation,
    private reserved: number,
    private readonly guards: IngestGuards,
    private readonly onCut: () => void,
  ) {
    super();
    const windowMs = guards.rateWindowMs ?? DEFAULT_RATE_WINDOW_MS;
    if (guards.minBytesPerSecond > 0) {
      const least = (guards.minBytesPerSecond * windowMs) / 1000;
      this.timer = setInterval(() => {
        const past = this.received - this.receivedAtTick;
        this.receivedAtTick = this.received;
        if (this.received >= MIN_RATE_GRACE_BYTES && past < least) this.cut(uploadTooSlow(guards.minBytesPerSecond, windowMs));
      }, windowMs);
      this.timer.unref();
    }
  }

  private cut(error: AppError): void {
    this.stopTimer();
    this.onCut();
    this.destroy(error);
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.limit) {
      this.stopTimer();
      callback(bodyTooLarge(this.limit, null));
      return;
    }
    if (this.received > this.reserved) {
      const why = this.reservation.grow(this.received - this.reserved);
      if (why !== null) {
        this.guards.onBudgetRefusal?.(why);
        this.stopTimer();
        this.onCut();
        callback(overBudget(why));
        return;
      }
      this.reserved = this.received;
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.stopTimer();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stopTimer();
    callback(error);
  }
}

/**
 * A preParsing step of the ingest routes, once the endpoint (and so its limit) is known and before
 * any of the body is read: a declared length over the limit is refused at once (413), and so is one
 * the process has no room for (503, its connection closed after the answer); then the body is
 * counted as it arrives (a chunked one refused as it passes the limit or the budget) and cut with
 * 408 when it stops arriving at the minimum rate. The reservation is returned when the answer is
 * sent or the connection closes.
 */
export function guardIngestBody(request: FastifyRequest, reply: FastifyReply, payload: RequestPayload, limit: number, guards: IngestGuards): RequestPayload {
  const size = declaredLength(request);
  // The HTTP parser hands over no more than the declared length.
  if (size !== null && size > limit) throw bodyTooLarge(limit, size);
  const chunked = size === null && request.headers['transfer-encoding'] !== undefined;
  if (size === 0 || (size === null && !chunked)) return payload;
  const reserved = size ?? 0;
  const reservation = guards.budget.reserve(request.clientAddress, reserved);
  // Past the budget nothing of the body is read, and the connection is not kept for the rest of it.
  const closeAfterAnswer = () => {
    reply.header('connection', 'close');
  };
  if (typeof reservation === 'string') {
    guards.onBudgetRefusal?.(reservation);
    closeAfterAnswer();
    throw overBudget(reservation);
  }
  reply.raw.once('close', () => reservation.release());
  // A declared body within its first MiB needs nothing more: the parser stops at its length, its
  // bytes are reserved, and the minimum rate applies only past the first MiB. It keeps the request
  // stream as it is, without a stream between (the common webhook's path).
  if (size !== null && size <= MIN_RATE_GRACE_BYTES) return payload;
  const guarded = new GuardedBody(limit, reservation, reserved, guards, closeAfterAnswer);
  payload.on('error', (error: Error) => guarded.destroy(error));
  return payload.pipe(guarded);
}
