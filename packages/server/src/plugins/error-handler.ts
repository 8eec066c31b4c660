import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { HTTP_STATUS_BY_ERROR_CODE, RETRY_AFTER_ERROR_CODES, type ErrorCode, type ErrorDetail } from '@hookrelay/shared';
import { AppError, IngestBudgetError, bodyTooLarge } from '../errors.js';
import { declaredLength } from '../ingest/body-limit.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { clientWentAway } from '../lib/client-abort.js';

const CONTEXT_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** Zod issues → `{ path, message }` with paths such as `body.url` or `query.limit`. */
function validationDetails(error: FastifyError & { validation: { instancePath: string; message?: string; keyword: string; params: Record<string, unknown> }[] }): ErrorDetail[] {
  const context = CONTEXT_NAMES[error.validationContext ?? 'body'] ?? 'body';
  return error.validation.map((issue) => {
    const segments = issue.instancePath.split('/').filter((s) => s.length > 0);
    if (issue.keyword === 'unrecognized_keys' && Array.isArray(issue.params.keys)) {
      const keys = issue.params.keys as string[];
      return { path: [context, ...segments, keys.join(', ')].join('.'), message: `unknown field${keys.length > 1 ? 's' : ''}` };
    }
    const message = (issue.message ?? 'is invalid').replace(/^Invalid input: /, '');
    return { path: [context, ...segments].join('.'), message };
  });
}

/** Retry-After of a 503 answered because the database cannot be reached (docs/operating.md). */
export const DATABASE_RETRY_AFTER_SECONDS = 5;
const OUTAGE_LOG_INTERVAL_MS = 10_000;

/**
 * The driver error behind `error` when it means "the database cannot be reached": the error itself
 * or one it wraps (`cause`), so that a layer adding context does not turn an outage into a 500.
 */
function databaseUnavailableCause(error: unknown): { message: string; code: string } | null {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    if (isDatabaseUnavailable(current)) return { message: (current as Error).message, code: String((current as { code: unknown }).code) };
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/**
 * During an outage every request fails the same way, and each one already has its access-log line
 * with the 503: the warning is written once, then at most once per interval with the count since.
 */
class OutageLog {
  private loggedAt = -Infinity;
  private since = 0;

  record(request: FastifyRequest, what: string, cause: { message: string; code: string }): void {
    this.since++;
    const now = Date.now();
    if (now - this.loggedAt < OUTAGE_LOG_INTERVAL_MS) return;
    request.log.warn({ err: cause, answered503: this.since }, `${what}: answering 503 SERVICE_UNAVAILABLE`);
    this.loggedAt = now;
    this.since = 0;
  }
}

function send(reply: FastifyReply, request: FastifyRequest, code: ErrorCode, message: string, extra: { details?: ErrorDetail[]; data?: unknown; retryAfterSeconds?: number } = {}) {
  const status = HTTP_STATUS_BY_ERROR_CODE[code];
  if (RETRY_AFTER_ERROR_CODES.has(code)) reply.header('retry-after', String(extra.retryAfterSeconds ?? 5));
  const body: Record<string, unknown> = {
    error: { code, message, ...(extra.details && extra.details.length > 0 ? { details: extra.details } : {}) },
    ...(extra.data !== undefined ? { data: extra.data } : {}),
    meta: { request_id: request.id },
  };
  // The error envelope is written by hand: the route's response schema describes only success.
  return reply.status(status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(body);
}

/**
 * One error handler for the whole app: AppError codes go through the shared status table,
 * framework errors become INVALID_REQUEST / PAYLOAD_TOO_LARGE, a database outage becomes
 * SERVICE_UNAVAILABLE, and anything else is a 500 whose details stay in the log.
 */
export function registerErrorHandling(app: FastifyInstance): void {
  const outageLog = new OutageLog();
  app.setErrorHandler((error: FastifyError, request, reply) => {
    // The client closed the connection before its body was complete: nobody reads an answer, and
    // its ECONNRESET is not the database's.
    if (!(error instanceof AppError) && clientWentAway(request)) {
      request.log.info({ err: { message: error.message, code: error.code } }, 'client closed the connection before its request body was complete');
      return send(reply, request, 'INVALID_REQUEST', 'the request body was not complete: the client closed the connection');
    }
    if (error instanceof AppError) {
      // 503s (a dependency down, a paused endpoint) are states, not faults: each is in the access log.
      if (error instanceof IngestBudgetError) {
        // A state of the load, counted in /metrics (hookrelay_ingest_budget_refusals_total) and in the access log.
      } else if (error.code === 'SERVICE_UNAVAILABLE') {
        const cause = databaseUnavailableCause(error.cause) ?? { message: error.cause instanceof Error ? error.cause.message : error.message, code: error.code };
        outageLog.record(request, error.message, cause);
      } else if (HTTP_STATUS_BY_ERROR_CODE[error.code] >= 500 && error.code !== 'ENDPOINT_PAUSED') {
        request.log.error({ err: error }, 'request failed');
      }
      return send(reply, request, error.code, error.message, {
        ...(error.details ? { details: error.details } : {}),
        ...(error.data !== undefined ? { data: error.data } : {}),
        ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
      });
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const details = validationDetails(error as never);
      const message = details.map((d) => `${d.path}: ${d.message}`).join('; ');
      return send(reply, request, 'INVALID_REQUEST', message, { details });
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return send(reply, request, 'PAYLOAD_TOO_LARGE', bodyTooLarge(request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 0, declaredLength(request)).message);
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return send(reply, request, 'INVALID_REQUEST', `unsupported Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')}: send application/json`);
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return send(reply, request, 'INVALID_REQUEST', 'Content-Length does not match the body');
      default:
        break;
    }
    const unavailable = databaseUnavailableCause(error);
    if (unavailable) {
      outageLog.record(request, 'database unavailable', unavailable);
      return send(reply, request, 'SERVICE_UNAVAILABLE', 'the service is temporarily unavailable; retry later', { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS });
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // Framework-level client errors (malformed JSON, bad Content-Type …) carry safe messages.
      return send(reply, request, 'INVALID_REQUEST', error.message);
    }
    request.log.error({ err: error }, 'unhandled error');
    return send(reply, request, 'INTERNAL_ERROR', 'internal error');
  });

  // Unlike NOT_FOUND (no such resource), this tells a client that its base address is wrong.
  app.setNotFoundHandler((request, reply) =>
    send(reply, request, 'ROUTE_NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`),
  );
}
