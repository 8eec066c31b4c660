import type { FastifyInstance, FastifyRequest } from 'fastify';
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
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
 *
 * The counters are a {@link FixedWindowStore}, not the plugin's own store: that one hands every
 * caller the same live counter object, which the plugin reads only after an `await`, so requests
 * of one key that finish authentication in the same tick all read the final count and a burst of
 * 7 could be answered 429 seven times.
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
    store: FixedWindowStore,
    keyGenerator: (request: FastifyRequest) => request.principal?.api_key_id ?? request.portal?.link_id ?? request.clientAddress,
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

interface Window {
  count: number;
  startedAt: number;
}

/**
 * Fixed-window counters per key that answer each increment with its own count (a copy). Expired
 * windows are dropped at most once per window length, so memory follows the keys active lately.
 */
export class FixedWindowStore implements FastifyRateLimitStore {
  private readonly windows = new Map<string, Window>();
  private readonly windowMs: number;
  private nextSweepAt = 0;

  constructor(
    options: { timeWindow?: unknown },
    private readonly now: () => number = Date.now,
  ) {
    if (typeof options.timeWindow !== 'number') throw new TypeError('FixedWindowStore needs a timeWindow in milliseconds');
    this.windowMs = options.timeWindow;
  }

  incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void): void {
    const now = this.now();
    if (now >= this.nextSweepAt) this.dropExpired(now);
    let window = this.windows.get(key);
    if (window === undefined || window.startedAt + this.windowMs <= now) {
      window = { count: 0, startedAt: now };
      this.windows.set(key, window);
    }
    window.count += 1;
    callback(null, { current: window.count, ttl: window.startedAt + this.windowMs - now });
  }

  child(): FastifyRateLimitStore {
    // Only a route with a rateLimit config of its own asks for a child; none has one.
    return new FixedWindowStore({ timeWindow: this.windowMs }, this.now);
  }

  /** Keys with a window open now. */
  get size(): number {
    return this.windows.size;
  }

  private dropExpired(now: number): void {
    for (const [key, window] of this.windows) if (window.startedAt + this.windowMs <= now) this.windows.delete(key);
    this.nextSweepAt = now + this.windowMs;
  }
}
