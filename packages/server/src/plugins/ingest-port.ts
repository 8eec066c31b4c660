import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { answerClientError } from './client-errors.js';

/**
 * The ingest-only port (HOOKRELAY_INGEST_PORT): a second HTTP listener of the same app, for a
 * tunnel or a public load balancer that must reach the ingest URLs and nothing else. Requests on it
 * go through the app's own router, hooks, error handler and engines; a guard answers every path but
 * `/in/…`, `/pull/…` and `/healthz` with 404 in the envelope, as if no such route existed. It has no
 * `upgrade` listener, so no socket of the API can be opened through it.
 */

/** Connections accepted by an ingest-only listener. */
const ingestConnections = new WeakSet<Socket>();

/** The paths the ingest-only listener serves. */
const INGEST_ONLY_PATH = /^\/(?:in|pull)\/|^\/healthz(?:[?#]|$)/u;

/** The ingest-only listener of each app that has one, made by the guard and opened by `listenIngestOnly`. */
const ingestServers = new WeakMap<FastifyInstance, Server>();

/** How long the stop waits for requests in flight on the ingest-only listener before closing them. */
const CLOSE_WAIT_MS = 10_000;

/**
 * Registered by buildApp when the configuration has an ingest port, before any route: a request on
 * that listener to any other path never reaches a route or the inspector. The listener itself is
 * made here and opened by `listenIngestOnly`; the app's stop closes it first (no new connection,
 * then the requests in flight), before the main listener and the engines, so an ingest in flight
 * is stored and answered.
 */
export function registerIngestPortGuard(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (ingestConnections.has(request.raw.socket) && !INGEST_ONLY_PATH.test(request.url)) {
      done(new AppError('NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]} (this port serves only ingest URLs and /healthz)`));
      return;
    }
    done();
  });
  const main = app.server;
  const server: Server = createServer(
    {
      headersTimeout: main.headersTimeout,
      requestTimeout: main.requestTimeout,
      keepAliveTimeout: main.keepAliveTimeout,
      connectionsCheckingInterval: Math.min(1000, main.headersTimeout / 2),
    },
    (req, res) => app.routing(req, res),
  );
  server.on('connection', (socket: Socket) => ingestConnections.add(socket));
  server.on('clientError', (error, socket: Socket) => answerClientError.call(app, error, socket));
  ingestServers.set(app, server);
  app.addHook('preClose', async () => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), CLOSE_WAIT_MS);
    await closed;
    clearTimeout(force);
  });
}

/** Opens the ingest-only listener on `host:port` once the app is ready, and returns the bound port. */
export async function listenIngestOnly(app: FastifyInstance, host: string, port: number): Promise<number> {
  const server = ingestServers.get(app);
  if (server === undefined) throw new Error('the app was built without an ingest port (HOOKRELAY_INGEST_PORT)');
  await app.ready();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return typeof address === 'object' && address !== null ? address.port : port;
}
