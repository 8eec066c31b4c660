import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import websocket from '@fastify/websocket';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { newUuidv7 } from '@hookrelay/shared';
import type { Config } from './config.js';
import type { AppDeps, AppServices } from './services.js';
import { openPayloadStore } from './storage/payload-store.js';
import { IngestEndpointCache } from './ingest/endpoint-cache.js';
import { Metrics } from './metrics/index.js';
import { metricsRoutes } from './metrics/routes.js';
import { registerErrorHandling } from './plugins/error-handler.js';
import { answerFrameworkError } from './plugins/framework-errors.js';
import { registerApiKeyAuth } from './plugins/auth.js';
import { registerOpenApi } from './plugins/openapi.js';
import { registerApiRateLimit } from './plugins/rate-limit.js';
import { SERVER_VERSION } from './version.js';
import { AppError } from './errors.js';
import { healthRoutes } from './routes/health.js';
import { whoamiRoutes } from './routes/whoami.js';
import { endpointRoutes } from './routes/endpoints.js';
import { inboundEndpointRoutes } from './routes/inbound-endpoints.js';
import { InboundCommitBus } from './ingest/inbound-commits.js';
import { ingestRoutes } from './ingest/routes.js';
import { inboundSampleRoutes } from './routes/inbound-samples.js';
import { inboundMessageRoutes } from './routes/inbound-messages.js';
import { listenRoutes } from './routes/listen.js';
import { messageRoutes } from './routes/messages.js';
import { logRoutes } from './routes/logs.js';
import { pullIngestRoutes } from './ingest/pull-routes.js';
import { pullEndpointRoutes } from './routes/pull-endpoints.js';
import { pullEventRoutes } from './routes/pull-events.js';
import { watchRoutes } from './routes/watch.js';
import { inspectorRoutes } from './plugins/inspector.js';
import { StreamTickets } from './stream/tickets.js';
import { SocketRegistry } from './stream/sockets.js';
import { INBOUND_ENDPOINT_CHANGED_CHANNEL } from './db/channels.js';
import { loggerOptions } from './logging.js';

export type { Config } from './config.js';
export { parseConfig, receiveBase } from './config.js';
export type { AppDeps, AppServices } from './services.js';
export { redactUrl } from './logging.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: AppServices;
  }
}

/** fastify-type-provider-zod's compilers, in the shape Fastify's schema controller builds them. */
const ZOD_COMPILERS = {
  buildValidator: () => validatorCompiler,
  buildSerializer: () => serializerCompiler,
} as unknown as NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

export interface BuildAppOptions {
  /** Logger settings; tests pass `false`. Defaults to JSON logs at the configured level. */
  logger?: FastifyServerOptions['logger'];
}

/**
 * Builds the Fastify app: infrastructure (errors, JSON parsing, request ids), then the app's
 * services, then routes. The caller opens and migrates the database and closes it after `app.close()`.
 */
export async function buildApp(config: Config, deps: AppDeps, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? loggerOptions(config),
    bodyLimit: config.maxBodyBytes,
    genReqId: () => newUuidv7(),
    requestIdHeader: false,
    trustProxy: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    frameworkErrors: answerFrameworkError,
    // Every schema is zod: Fastify's own compilers (Ajv, fast-json-stringify) would only be loaded,
    // at a cost to the start, never used.
    schemaController: { compilersFactory: ZOD_COMPILERS },
  });

  const ingestCache = new IngestEndpointCache(deps.db.sql, deps.secretBox);
  const payloadStore = deps.payloadStore ?? (await openPayloadStore(config.payloadStore));
  const metrics = new Metrics(deps.db.sql, app.log);
  const sockets = new SocketRegistry(deps.db, config.maxSockets, app.log, (limit) => metrics.countSocketRefusal(limit));
  metrics.trackOpenSockets(() => sockets.openCount);
  const services: AppServices = {
    ...deps,
    config,
    payloadStore,
    ingestCache,
    metrics,
    inboundCommits: new InboundCommitBus(),
    streamTickets: new StreamTickets(deps.secretBox),
    sockets,
    receiveBase() {
      if (config.publicUrl) return config.publicUrl;
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      return `http://localhost:${port}`;
    },
    async inboundEndpointChanged(id) {
      ingestCache.invalidate(id);
      await deps.db.notify(INBOUND_ENDPOINT_CHANGED_CHANNEL, id);
    },
  };
  app.decorate('services', services);
  const unlistenEndpointChanges = await deps.db.listen(INBOUND_ENDPOINT_CHANGED_CHANNEL, (id) => ingestCache.invalidate(id));
  app.addHook('onClose', async () => {
    await unlistenEndpointChanges().catch(() => {});
  });
  // After the routes' own onClose hooks (ingest waits for its last batch); a store the caller
  // handed in stays open for the caller.
  if (payloadStore !== deps.payloadStore) app.addHook('onClose', async () => payloadStore.close?.());
  registerErrorHandling(app);

  // A callback: an async hook would cost every request a promise and a turn of the microtask queue.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  // An empty JSON body (POST /pause with a Content-Type) means "no body", not a parse error.
  const defaultJsonParser = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    defaultJsonParser(request, body as string, (error, value) => {
      if (error) return done(new AppError('INVALID_REQUEST', 'request body is not valid JSON'), undefined);
      done(null, value);
    });
  });

  // At the root, before any auth hook: its onRequest hook marks upgrade requests first, so that an
  // upgrade refused with an HTTP error (bad key, unknown endpoint) still has its socket closed.
  // A result frame carries up to 64 KiB of the app's body (base64) and 16 KiB of its headers.
  await app.register(websocket, { options: { maxPayload: 256 * 1024 } });
  if (config.roles.has('api')) await registerOpenApi(app, SERVER_VERSION);
  await app.register(healthRoutes);
  // Every role: each process reports its own counters; outside /v1 and its API keys, as Prometheus expects.
  await app.register(metricsRoutes);
  if (config.roles.has('ingest')) await app.register(ingestRoutes);
  if (config.roles.has('ingest')) await app.register(pullIngestRoutes);
  if (config.roles.has('api')) {
    await sockets.start();
    app.addHook('onClose', async () => sockets.stop());
  }
  if (config.roles.has('api')) await app.register(async (v1) => {
    registerApiKeyAuth(v1);
    await registerApiRateLimit(v1, { perSecond: config.apiRateLimit, burst: config.apiRateBurst });
    await v1.register(whoamiRoutes);
    await v1.register(endpointRoutes);
    await v1.register(inboundEndpointRoutes);
    await v1.register(inboundSampleRoutes);
    await v1.register(inboundMessageRoutes);
    await v1.register(listenRoutes);
    await v1.register(messageRoutes);
    await v1.register(logRoutes);
    await v1.register(pullEndpointRoutes);
    await v1.register(pullEventRoutes);
    await v1.register(watchRoutes);
  }, { prefix: '/v1' });
  // The inspector page talks to the /v1 API of the same origin.
  if (config.roles.has('api')) await app.register(inspectorRoutes, {});

  return app;
}
