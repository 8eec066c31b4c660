import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HTTP_STATUS_BY_ERROR_CODE, type ErrorCode } from '@hookrelay/shared';

/**
 * Fastify's `frameworkErrors` option: errors the router raises before a route (and its hooks and
 * error handler) is chosen. Left alone, Fastify answers them in its own shape — 400 FST_ERR_BAD_URL
 * for a path that is not valid percent-encoding (`/v1/endpoints/%ZZ`), 414 FST_ERR_MAX_PARAM_LENGTH
 * for a path parameter over 100 characters — outside the API's envelope and status table.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  let code: ErrorCode = 'INTERNAL_ERROR';
  let message = 'internal error';
  if (error.code === 'FST_ERR_BAD_URL') {
    code = 'INVALID_REQUEST';
    message = 'the request path is not valid percent-encoding';
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    code = 'INVALID_REQUEST';
    message = 'a path parameter is too long to be an identifier';
  } else {
    request.log.error({ err: error }, 'router error');
  }
  // No onRequest hook ran, so its headers are set here too.
  void reply
    .status(HTTP_STATUS_BY_ERROR_CODE[code])
    .header('x-request-id', request.id)
    .header('x-content-type-options', 'nosniff')
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ error: { code, message }, meta: { request_id: request.id } }));
}
