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

/** The paths the ingest-only listener serves. */
const INGEST_ONLY_PATH = /^\/(?:in|pull)\/|^\/healthz(?:[?#]|$)/u;

/** How long the stop waits for requests in flight on the ingest-only listener before closing them. */
const CLOSE_WAIT_MS = 10_000;

/** The ingest-only listener of one app: made by buildApp, opened by `listen` (main.ts). */
export interface IngestOnlyListener {
  /** Opens it on `host:port` once the app is ready, and returns the bound port. */
  listen(host: string, port: number): Promise<number>;
}

/**
 * Registered by buildApp when the configuration has an ingest port, before any route: a request on
 * that listener to any other path never reaches a route or the inspector. The app's stop closes the
 * listener first (no new connection, then the requests in flight), before the main listener and the
 * engines, so an ingest in flight is stored and answered.
 */
export function registerIngestPortGuard(app: FastifyInstance): IngestOnlyListener {
  /** Connections accepted by this listener. */
  const ingestConnections = new WeakSet<Socket>();
  app.addHook('onRequest', (request, _reply, done) => {
    if (ingestConnections.has(request.raw.socket) && !INGEST_ONLY_PATH.test(request.url)) {
      done(new AppError('ROUTE_NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]} (this port serves only ingest URLs and /healthz)`));
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
  app.addHook('preClose', async () => {
    if (!server.listening) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), CLOSE_WAIT_MS);
    await closed;
    clearTimeout(force);
  });
  return {
    async listen(host, port) {
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
    },
  };
}

/** Opens the app's ingest-only listener on `host:port`, and returns the bound port. */
export async function listenIngestOnly(app: FastifyInstance, host: string, port: number): Promise<number> {
  if (app.ingestListener === null) throw new Error('the app was built without an ingest port (HOOKRELAY_INGEST_PORT)');
  return app.ingestListener.listen(host, port);
}
