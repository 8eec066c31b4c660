import type { FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { AppError } from '../errors.js';

export interface ApiRateLimit {
  /** Requests per second per API key; 0 turns the limit off. */
  perSecond: number;
  /** Requests a key may make at once before the rate applies. */
  burst: number;
}

/**
 * A request limit per API key on the scope it is registered in (the /v1 API, never ingestion:
 * external senders are not ours to throttle). The plugin counts in fixed windows of
 * `burst / perSecond` seconds allowing `burst` requests each, so the long-run rate is `perSecond`
 * and a burst of `burst` passes at once. The counters live in this process's memory: N processes
 * allow N times the rate.
 *
 * It runs as a route-level onRequest hook, which Fastify runs after the scope's own onRequest
 * hooks: the API key is known by then (unauthenticated requests were answered 401 without
 * counting) and a throttled caller's body is never read.
 */
export async function registerApiRateLimit(scope: FastifyInstance, limit: ApiRateLimit): Promise<void> {
  if (limit.perSecond <= 0) return;
  // Rounded up so that the window never lets more than `perSecond` through on average.
  const windowMs = Math.max(1, Math.ceil((limit.burst * 1000) / limit.perSecond));
  await scope.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max: limit.burst,
    timeWindow: windowMs,
    keyGenerator: (request: FastifyRequest) => request.principal?.api_key_id ?? request.ip,
    errorResponseBuilder: (_request, context) => {
      const retryAfterSeconds = Math.max(1, Math.ceil(context.ttl / 1000));
      return new AppError(
        'RATE_LIMITED',
        `rate limit exceeded: at most ${limit.perSecond} requests/s per API key (bursts of ${limit.burst}); retry in ${retryAfterSeconds} s`,
        { retryAfterSeconds },
      );
    },
  });
}
