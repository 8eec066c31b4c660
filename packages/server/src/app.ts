import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import websocket from '@fastify/websocket';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { EVENT_TYPE_LIMITS, newUuidv7, SERVER_SHUTDOWN_CLOSE } from '@hookrelay/shared';
import type { Config } from './config.js';
import type { AppDeps, AppServices } from './services.js';
import { openPayloadStore } from './storage/open-payload-store.js';
import { withBlobStore } from './storage/payload-store.js';
import { openBlobStore } from './storage/open-blob-store.js';
import { IngestEndpointCache } from './ingest/endpoint-cache.js';
import { senderSigningCache } from './ingest/signing-cache.js';
import { Metrics } from './metrics/index.js';
import { metricsRoutes } from './metrics/routes.js';
import { registerErrorHandling } from './plugins/error-handler.js';
import { answerFrameworkError } from './plugins/framework-errors.js';
import { registerApiKeyAuth } from './plugins/auth.js';
import { registerPortalScope } from './plugins/portal-scope.js';
import { registerOpenApi } from './plugins/openapi.js';
import { registerApiRateLimit } from './plugins/rate-limit.js';
import { SERVER_VERSION } from './version.js';
import { AppError } from './errors.js';
import { healthRoutes } from './routes/health.js';
import { whoamiRoutes } from './routes/whoami.js';
import { endpointRoutes } from './routes/endpoints.js';
import { inboundEndpointRoutes } from './routes/inbound-endpoints/index.js';
import { ingestRoutes } from './ingest/routes.js';
import { inboundSampleRoutes } from './routes/inbound-samples.js';
import { inboundMessageRoutes } from './routes/inbound-messages.js';
import { listenRoutes } from './routes/listen.js';
import { messageRoutes } from './routes/messages.js';
import { eventRoutes } from './routes/events.js';
import { logRoutes } from './routes/logs.js';
import { pullIngestRoutes } from './ingest/pull-routes.js';
import { pullEndpointRoutes } from './routes/pull-endpoints.js';
import { pullEventRoutes } from './routes/pull-events.js';
import { watchRoutes } from './routes/watch.js';
import { rejectionRoutes } from './routes/rejections.js';
import { eventTypeRoutes } from './routes/event-types.js';
import { bulkRetryRoutes } from './routes/bulk-retries.js';
import { portalLinkRoutes } from './routes/portal-links.js';
import { portalTestEventRoutes } from './routes/portal-test-events.js';
import { portalWatchRoutes } from './routes/portal-watch.js';
import { EventSchemas } from './events/event-schemas.js';
import { inspectorRoutes } from './routes/inspector.js';
import { StreamTickets } from './stream/tickets.js';
import { Engines, type EngineOptions } from './engines.js';
import { INBOUND_ENDPOINT_CHANGED_CHANNEL } from './db/channels.js';
import { AccessLog, loggerOptions } from './logging.js';
import { TrustedProxies } from './security/client-address.js';
import { openTracing } from './tracing/tracing.js';
import { answerClientError } from './plugins/client-errors.js';
import { answerWebSocketError } from './plugins/websocket-errors.js';
import { registerIngestPortGuard, type IngestOnlyListener } from './plugins/ingest-port.js';
export { listenIngestOnly } from './plugins/ingest-port.js';

export type { Config } from './config.js';
export { parseConfig, receiveBase } from './config.js';
export type { AppDeps, AppServices } from './services.js';
export { redactUrl } from './logging.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The client's address: the peer's, or the one a trusted reverse proxy forwards for
     * (HOOKRELAY_TRUSTED_PROXIES). What IP allowlists, rate limits and logs see.
     */
    readonly clientAddress: string;
  }
  interface FastifyInstance {
    services: AppServices;
    /** The engines of the process's roles; `app.close()` stops them. */
    engines: Engines;
    /** The ingest-only listener (HOOKRELAY_INGEST_PORT), or null without one. */
    ingestListener: IngestOnlyListener | null;
  }
}

/** fastify-type-provider-zod's compilers, in the shape Fastify's schema controller builds them. */
const ZOD_COMPILERS = {
  buildValidator: () => validatorCompiler,
  buildSerializer: () => serializerCompiler,
} as unknown as NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/**
 * Why a JSON body was refused. Fastify's parser also refuses valid JSON with a `__proto__` key, or a
 * `constructor` key holding a `prototype` (either could reach an object's prototype), and says
 * only "invalid JSON": the body is read again here, on that path only, to say which.
 */
function jsonRefusal(body: string): string {
  let refused: string | undefined;
  try {
    // JSON.parse defines `__proto__` as an own key, which the reviver sees; nothing is merged.
    JSON.parse(body, (key: string, value: unknown) => {
      if (key === '__proto__') refused ??= 'a "__proto__" key';
      else if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) {
        refused ??= 'a "constructor" key holding a "prototype" key';
      }
      return value;
    });
  } catch {
    return 'request body is not valid JSON';
  }
  return refused === undefined ? 'request body is not valid JSON' : `request body has ${refused}, which is refused`;
}

export interface BuildAppOptions extends EngineOptions {
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
    logController: new AccessLog(),
    requestIdHeader: false,
    trustProxy: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    frameworkErrors: answerFrameworkError,
    // Errors of the HTTP parser and its timeouts, before any request exists (docs/operating.md "Timeouts").
    clientErrorHandler: answerClientError,
    requestTimeout: config.requestTimeoutSeconds * 1000,
    http: {
      headersTimeout: config.headersTimeoutSeconds * 1000,
      requestTimeout: config.requestTimeoutSeconds * 1000,
      // Node checks both timeouts on this interval (30 s by default, which would stretch them by as much).
      connectionsCheckingInterval: Math.min(1000, config.headersTimeoutSeconds * 500),
    },
    // An event type's name is the longest path parameter (`/v1/event-types/{name}`), decoded.
    routerOptions: { maxParamLength: EVENT_TYPE_LIMITS.nameChars },
    // Every schema is zod: Fastify's own compilers (Ajv, fast-json-stringify) would only be loaded,
    // at a cost to the start, never used.
    schemaController: { compilersFactory: ZOD_COMPILERS },
  });

  // First: a server configured for tracing without the OpenTelemetry packages stops here.
  const tracing = deps.tracing ?? (await openTracing(config.tracing, SERVER_VERSION, app.log));
  const ingestCache = new IngestEndpointCache(deps.db.sql, deps.secretBox);
  const senderSigning = senderSigningCache(deps.db.sql, deps.secretBox);
  const openedStore = deps.payloadStore ?? (await openPayloadStore(config.payloadStore));
  const payloadStore = openedStore.blobs ? openedStore : withBlobStore(openedStore, openBlobStore(deps.db, config, app.log, openedStore));
  const metrics = new Metrics(deps.db.sql, app.log);
  const engines = new Engines(
    { ...deps, config, payloadStore, ingestCache, senderSigning, metrics, tracing, log: app.log },
    {
      ...(options.worker === undefined ? {} : { worker: options.worker }),
      ...(options.bulkJobs === undefined ? {} : { bulkJobs: options.bulkJobs }),
      ...(options.rejections === undefined ? {} : { rejections: options.rejections }),
    },
  );
  const services: AppServices = {
    ...deps,
    config,
    payloadStore,
    ingestCache,
    senderSigning,
    metrics,
    tracing,
    streamTickets: new StreamTickets(deps.secretBox),
    eventSchemas: new EventSchemas(),
    sockets: engines.sockets,
    receiveBase() {
      if (config.publicUrl) return config.publicUrl;
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : config.port;
      return `http://localhost:${port}`;
    },
    async inboundEndpointChanged(id) {
      ingestCache.invalidate(id);
      senderSigning.delete(id);
      await deps.db.notify(INBOUND_ENDPOINT_CHANGED_CHANNEL, id);
    },
  };
  app.decorate('services', services);
  const proxies = new TrustedProxies(config.trustedProxies);
  app.decorateRequest('clientAddress', {
    getter(this: FastifyRequest) {
      return proxies.clientAddress(this.socket.remoteAddress ?? '', this.headers);
    },
  });
  app.decorate('engines', engines);
  // The one close hook: Fastify runs it after the HTTP server stopped taking requests and answered
  // those it had. A payload store the caller handed in stays open for the caller.
  app.addHook('onClose', async () => {
    await engines.close();
    if (openedStore !== deps.payloadStore) await openedStore.close?.();
    // Last: the spans of the stop itself (the final commits, deliveries and results) are exported too.
    if (tracing !== deps.tracing) await tracing.shutdown();
  });
  await engines.start();
  registerErrorHandling(app);
  app.decorate('ingestListener', config.ingestPort !== undefined ? registerIngestPortGuard(app) : null);

  // A callback: an async hook would cost every request a promise and a turn of the microtask queue.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    done();
  });

  // An empty JSON body (POST /pause with a Content-Type) means "no body", not a parse error.
  const defaultJsonParser = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    defaultJsonParser(request, body as string, (error, value) => {
      if (error) return done(new AppError('INVALID_REQUEST', jsonRefusal(body as string)), undefined);
      done(null, value);
    });
  });

  // At the root, before any auth hook: its onRequest hook marks upgrade requests first, so that an
  // upgrade refused with an HTTP error (bad key, unknown endpoint) still has its socket closed.
  // A result frame carries up to 64 KiB of the app's body (base64) and 16 KiB of its headers.
  // Before the plugin's own preClose, which closes every socket without a code (1005 at the peer).
  app.addHook('preClose', (done) => {
    for (const client of app.websocketServer?.clients ?? []) client.close(SERVER_SHUTDOWN_CLOSE.code, SERVER_SHUTDOWN_CLOSE.reason);
    done();
  });
  await app.register(websocket, { options: { maxPayload: 256 * 1024 }, errorHandler: answerWebSocketError });
  if (config.roles.has('api')) await registerOpenApi(app, SERVER_VERSION);
  await app.register(healthRoutes);
  // Every role: each process reports its own counters; outside /v1 and its API keys, as Prometheus expects.
  await app.register(metricsRoutes);
  const { api, ingest } = engines;
  if (ingest) await app.register(ingestRoutes, { batcher: ingest.inbound, rejections: ingest.rejections, guards: ingest.guards });
  if (ingest) await app.register(pullIngestRoutes, { batcher: ingest.pull, rejections: ingest.rejections, guards: ingest.guards });
  if (api) await app.register(async (v1) => {
    registerApiKeyAuth(v1);
    registerPortalScope(v1);
    await registerApiRateLimit(v1, { perSecond: config.apiRateLimit, burst: config.apiRateBurst });
    await v1.register(whoamiRoutes);
    await v1.register(endpointRoutes);
    await v1.register(inboundEndpointRoutes);
    await v1.register(inboundSampleRoutes);
    await v1.register(inboundMessageRoutes, { batcher: ingest?.inbound ?? null });
    await v1.register(listenRoutes, { streams: api.streams, results: api.results, connections: api.connections });
    await v1.register(messageRoutes, { batcher: api.messages });
    await v1.register(eventRoutes, { fanout: api.events });
    await v1.register(logRoutes);
    await v1.register(pullEndpointRoutes);
    await v1.register(pullEventRoutes);
    await v1.register(rejectionRoutes);
    await v1.register(eventTypeRoutes);
    await v1.register(bulkRetryRoutes);
    await v1.register(portalLinkRoutes);
    await v1.register(portalWatchRoutes);
    await v1.register(portalTestEventRoutes, { batcher: api.messages });
    await v1.register(watchRoutes, { watch: api.watch });
  }, { prefix: '/v1' });
  // The inspector page talks to the /v1 API of the same origin.
  if (config.roles.has('api')) await app.register(inspectorRoutes, { portalFrameAncestors: config.portalFrameAncestors });

  return app;
}
