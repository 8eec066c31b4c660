import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Span, Tracing } from './tracing.js';

/** What an ingest request's span is named after: the route without its secret token. */
const ROUTES = { inbound: '/in/{token}', pull: '/pull/{id}/{token}' } as const;

/**
 * Whether a sender's `traceparent` is taken: it becomes a link of the ingest span, never its parent.
 * A sender is a third party on the internet: as a parent its header would choose the trace id of the
 * webhook's whole trace and, under a parent-based sampler, whether it is recorded at all.
 */
const W3C_TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * One SERVER span per ingest request (`POST /in/{token}`, `POST /pull/{id}/{token}`), from the
 * request's arrival to its answer, with its method, status and body size; the route handler adds
 * the endpoint and the message id through `spanOf`. Neither the URL (it holds the secret token),
 * the headers nor the body become attributes. Registered only when tracing is on: otherwise the
 * routes get no hook at all, and `spanOf` answers undefined.
 */
export function traceIngestRequests(app: FastifyInstance, tracing: Tracing, kind: keyof typeof ROUTES): (request: FastifyRequest) => Span | undefined {
  if (!tracing.enabled) return () => undefined;
  const spans = new WeakMap<FastifyRequest, Span>();
  const route = ROUTES[kind];
  app.addHook('onRequest', (request, _reply, done) => {
    const incoming = request.headers.traceparent;
    const link = typeof incoming === 'string' && W3C_TRACEPARENT.test(incoming.trim().toLowerCase()) ? incoming.trim().toLowerCase() : undefined;
    spans.set(
      request,
      tracing.startSpan(`${request.method} ${route}`, {
        kind: 'server',
        links: [link],
        attributes: { 'http.request.method': request.method, 'http.route': route, 'hookrelay.ingest.kind': kind },
      }),
    );
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const span = spans.get(request);
    if (span !== undefined) {
      const body = request.body;
      span.setAttribute('http.response.status_code', reply.statusCode);
      span.setAttribute('http.request.body.size', Buffer.isBuffer(body) ? body.length : Number(request.headers['content-length'] ?? 0) || 0);
      if (reply.hasHeader('hookrelay-duplicate')) span.setAttribute('hookrelay.ingest.duplicate', true);
      if (reply.statusCode >= 500) span.fail(`HTTP ${reply.statusCode}`);
      span.end();
      spans.delete(request);
    }
    done();
  });
  // A request whose client went away before the answer has no onResponse.
  app.addHook('onRequestAbort', (request, done) => {
    const span = spans.get(request);
    if (span !== undefined) {
      span.fail('the client closed the connection before the answer');
      span.end();
      spans.delete(request);
    }
    done();
  });
  return (request) => spans.get(request);
}
