import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingHookHandler, RouteHandlerMethod } from 'fastify';
import { newUuidv7, PullIngestOut, SECRET_TOKEN_PATTERN, successEnvelope, UUID_PATTERN, uuidv7Time } from '@hookrelay/shared';
import { findPullIngestEndpoint, type PullIngestEndpointRow } from '../db/pull-endpoints.js';
import { AppError } from '../errors.js';
import { constantTimeEqual, sha256Hex } from '../security/crypto.js';
import { extractEventType } from './event-type.js';
import type { PullIngestBatcher } from './pull-batcher.js';
import { bodyTooLargeRefusal, isBodyTooLarge, METHOD_NOT_ALLOWED_METHODS, methodNotAllowed, methodRefusal, pausedRefusal, refusalOf, type RefusalBase } from './refusals.js';
import type { RejectionRecorder } from './rejections.js';
import { traceIngestRequests } from '../tracing/ingest-spans.js';
import { contentTypes } from './content-type.js';
import { effectiveBodyLimit, guardIngestBody, type IngestGuards } from './body-limit.js';

/** Methods whose requests are stored as events; HEAD and OPTIONS are answered without storing. */
const RECORDED_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'] as const;
const PAUSED_RETRY_AFTER_SECONDS = 60;

const noEndpoint = () => new AppError('NOT_FOUND', 'no pull endpoint at this URL');
/** The same for every id, so that it tells nothing of whether the endpoint exists. */
const tokenMissing = () =>
  new AppError('NOT_FOUND', "this URL needs the pull endpoint's secret token after it: send webhooks to the full_ingest_url of the endpoint's create answer ({ingest_url}/{secret_token}); nothing was stored");
const gone = () => new AppError('GONE', 'this pull endpoint has been deleted');
const paused = () =>
  new AppError('ENDPOINT_PAUSED', 'this pull endpoint is paused; retry later', { retryAfterSeconds: PAUSED_RETRY_AFTER_SECONDS });

function rawHeaderPairs(raw: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
}

function rawQuery(url: string): string {
  const at = url.indexOf('?');
  return at === -1 ? '' : url.slice(at + 1);
}

/**
 * Ingestion at `{receive_base}/pull/{endpoint_id}/{secret_token}` (docs/api.md, Pull ingestion): the exact
 * bytes of any content type, the header lines, the event type when configured, and an answer only
 * after the commit that holds the event. An unknown endpoint and a wrong token are the same 404;
 * the endpoint's state (410 deleted, 503 paused) is told only to a caller holding the token.
 */
export async function pullIngestRoutes(app: FastifyInstance, { batcher, rejections, guards }: { batcher: PullIngestBatcher; rejections: RejectionRecorder; guards: IngestGuards }): Promise<void> {
  const { services } = app;
  services.metrics.registerIngestHooks(app, 'pull');
  const spanOf = traceIngestRequests(app, services.tracing, 'pull');

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  const lookup = async (request: FastifyRequest): Promise<PullIngestEndpointRow> => {
    const { id, token } = request.params as { id: string; token: string };
    if (!UUID_PATTERN.test(id) || !SECRET_TOKEN_PATTERN.test(token)) throw noEndpoint();
    const endpoint = await findPullIngestEndpoint(services.db.sql, id);
    // Only the hash is stored, so a leaked database reveals no token; compared in constant time.
    if (!endpoint || !constantTimeEqual(sha256Hex(token), endpoint.secret_token_hash)) throw noEndpoint();
    if (endpoint.gone) throw gone();
    return endpoint;
  };

  /** What every refusal at a live endpoint keeps of its request; the URL's token is never kept. */
  const refusalBase = (request: FastifyRequest, endpoint: PullIngestEndpointRow, receivedAt: Date): RefusalBase => ({
    endpointKind: 'pull',
    endpointId: endpoint.id,
    projectId: endpoint.project_id,
    receivedAt,
    method: request.method,
    path: '/',
    query: rawQuery(request.raw.url ?? request.url),
    rawHeaders: request.raw.rawHeaders,
    sourceAddress: request.clientAddress,
  });
  const refusePaused = (request: FastifyRequest, endpoint: PullIngestEndpointRow, receivedAt: Date, body: Buffer): AppError => {
    rejections.refuse(refusalOf(refusalBase(request, endpoint, receivedAt), pausedRefusal(PAUSED_RETRY_AFTER_SECONDS), { body }));
    return paused();
  };

  // The endpoint is found before its body is read, so that its own limit refuses a body too large
  // without reading it; the handler takes it from here.
  const types = contentTypes();
  const foundBefore = new WeakMap<FastifyRequest, PullIngestEndpointRow>();
  const limitBody: preParsingHookHandler = async (request, reply, payload) => {
    types.keep(request);
    const endpoint = await lookup(request);
    foundBefore.set(request, endpoint);
    return guardIngestBody(request, reply, payload, effectiveBodyLimit(services.config, endpoint.max_body_bytes), guards);
  };

  const record: RouteHandlerMethod = async (request: FastifyRequest, reply: FastifyReply) => {
    const started = performance.now();
    // The event's id carries its received_at millisecond (migrations/004_pull.sql).
    const eventId = newUuidv7();
    const receivedAt = new Date(uuidv7Time(eventId));
    const endpoint = foundBefore.get(request) ?? (await lookup(request));
    const span = spanOf(request);
    span?.setAttribute('hookrelay.pull_endpoint.id', endpoint.id);
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    if (endpoint.paused) throw refusePaused(request, endpoint, receivedAt, body);
    const rawHeaders = rawHeaderPairs(request.raw.rawHeaders);
    const eventType = extractEventType(endpoint.event_type_source, endpoint.event_type_path, body, rawHeaders);
    const payloadSha256 = sha256Hex(body);
    const outcome = await batcher.submit({
      event: {
        id: eventId,
        projectId: endpoint.project_id,
        endpointId: endpoint.id,
        eventType,
        method: request.method,
        query: rawQuery(request.raw.url ?? request.url),
        contentType: types.of(request),
        sizeBytes: body.length,
        payloadSha256,
        rawHeaders,
        // Validation, authentication, extraction and hashing: everything before the database write.
        ingestProcessingMs: Math.max(0, Math.round(performance.now() - started)),
        receivedAt,
      },
      body,
      traceContext: span?.traceparent ?? null,
    });
    span?.setAttribute('hookrelay.pull_event.id', outcome.kind === 'stored' ? outcome.eventId : undefined);
    if (outcome.kind === 'gone') throw gone();
    if (outcome.kind === 'paused') throw refusePaused(request, endpoint, receivedAt, body);
    return reply.status(200).send({ data: { event_id: outcome.eventId }, meta: { request_id: request.id } });
  };

  const answerProbe: RouteHandlerMethod = async (request, reply) => {
    await lookup(request);
    return reply.status(200).send();
  };

  const refuseMethod: RouteHandlerMethod = async (request, reply) => {
    const receivedAt = new Date();
    const endpoint = await lookup(request);
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    rejections.refuse(refusalOf(refusalBase(request, endpoint, receivedAt), methodRefusal(request.method), { body }));
    reply.header('allow', [...RECORDED_METHODS, 'HEAD', 'OPTIONS'].join(', '));
    throw methodNotAllowed(request.method);
  };

  // A body over the limit is refused by Fastify before the handler: kept from the error path.
  app.addHook('onError', async (request, _reply, error) => {
    if (!isBodyTooLarge(error)) return;
    const receivedAt = new Date();
    let endpoint: PullIngestEndpointRow;
    try {
      endpoint = foundBefore.get(request) ?? (await lookup(request));
    } catch {
      return;
    }
    const limit = effectiveBodyLimit(services.config, endpoint.max_body_bytes);
    const tooLarge = bodyTooLargeRefusal(request, limit);
    rejections.refuse(refusalOf(refusalBase(request, endpoint, receivedAt), tooLarge, tooLarge));
  });

  app.route({
    method: [...RECORDED_METHODS],
    url: '/pull/:id/:token',
    exposeHeadRoute: false,
    bodyLimit: services.config.maxIngestBodyBytes,
    preParsing: limitBody,
    schema: { response: { 200: successEnvelope(PullIngestOut) } },
    handler: record,
  });
  app.route({ method: ['HEAD', 'OPTIONS'], url: '/pull/:id/:token', handler: answerProbe });
  app.route({ method: [...METHOD_NOT_ALLOWED_METHODS], url: '/pull/:id/:token', handler: refuseMethod });
  // The record's ingest_url stops before the token: a sender given it is told what is missing,
  // before its body is read.
  const refuseTokenless = async () => {
    throw tokenMissing();
  };
  app.route({
    method: [...RECORDED_METHODS, 'HEAD', 'OPTIONS', ...METHOD_NOT_ALLOWED_METHODS],
    url: '/pull/:id',
    exposeHeadRoute: false,
    onRequest: refuseTokenless,
    handler: refuseTokenless,
  });
}
