import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { Refusal } from './rejections.js';

/** What a refusal keeps of its request and endpoint, whatever the reason. */
export type RefusalBase = Omit<Refusal, 'reason' | 'detail' | 'status' | 'verification' | 'body' | 'unreadSize' | 'whole'>;
type Reasoned = Pick<Refusal, 'reason' | 'detail' | 'status' | 'verification'>;

/**
 * A refusal from what every refusal keeps, why this one was refused, and what of its body was read.
 * Copied field by field: built with an object spread (`{ ...base, ...why }`), every refusal reached
 * V8's old generation (`node --trace-gc` under bench/rejections.mjs), so a flood kept the old
 * generation's collector running, and its pauses held up every endpoint's requests.
 */
export function refusalOf(base: RefusalBase, why: Reasoned, read: Pick<Refusal, 'body' | 'unreadSize' | 'whole'>): Refusal {
  return {
    endpointKind: base.endpointKind,
    endpointId: base.endpointId,
    projectId: base.projectId,
    receivedAt: base.receivedAt,
    method: base.method,
    path: base.path,
    query: base.query,
    rawHeaders: base.rawHeaders,
    sourceAddress: base.sourceAddress,
    secretHeader: base.secretHeader,
    secretQueryParam: base.secretQueryParam,
    reason: why.reason,
    detail: why.detail,
    status: why.status,
    verification: why.verification,
    body: read.body,
    whole: read.whole,
    unreadSize: read.unreadSize,
  };
}

/** Methods Fastify routes that no ingest URL takes (others never reach a route: 404). */
export const METHOD_NOT_ALLOWED_METHODS = ['TRACE', 'QUERY'] as const;

export function pausedRefusal(retryAfterSeconds: number): Reasoned {
  return {
    reason: 'endpoint_paused',
    detail: `the endpoint is paused, so the sender was answered 503 with Retry-After: ${retryAfterSeconds} (senders that retry send it again later); resume the endpoint to take requests again`,
    status: 503,
    verification: false,
  };
}

export function methodRefusal(method: string): Reasoned {
  return {
    reason: 'method_not_allowed',
    detail: `${method} is not a method an ingest URL takes: it stores POST, PUT, PATCH, DELETE and GET requests and answers HEAD and OPTIONS`,
    status: 405,
    verification: false,
  };
}

export function methodNotAllowed(method: string): AppError {
  return new AppError('METHOD_NOT_ALLOWED', `${method} is not accepted here: send POST, PUT, PATCH, DELETE or GET`);
}

/** Whether `error` refuses a request for its body's size (Fastify's limit, or a route's own). */
export function isBodyTooLarge(error: unknown): boolean {
  if (error instanceof AppError) return error.code === 'PAYLOAD_TOO_LARGE';
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE';
}

/**
 * A body refused for its size was not read: the size kept is the one the sender announced, and the
 * limit the one the request was held to (the endpoint's own, or the server's ingest limit).
 */
export function bodyTooLargeRefusal(request: FastifyRequest, limit: number): Reasoned & Pick<Refusal, 'body' | 'unreadSize'> {
  const announced = request.headers['content-length'];
  const size = typeof announced === 'string' && /^\d{1,15}$/.test(announced) ? Number(announced) : null;
  return {
    reason: 'body_too_large',
    detail:
      size === null
        ? `the body, sent without Content-Length, grew past the ingest limit of ${limit} bytes before it ended, so the sender was answered 413 and the body was not kept`
        : `the body is ${size} bytes (its Content-Length), over the ingest limit of ${limit} bytes, so the sender was answered 413 and the body was not read`,
    status: 413,
    verification: false,
    body: undefined,
    unreadSize: size ?? limit + 1,
  };
}
