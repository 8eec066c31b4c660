import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingHookHandler, RouteHandlerMethod } from 'fastify';
import { InboundIngestOut, INGEST_DUPLICATE_HEADER, SECRET_TOKEN_PATTERN, successEnvelope } from '@hookrelay/shared';
import { AppError } from '../errors.js';
import { sha256Hex } from '../security/crypto.js';
import type { IngestBatcher, IngestItem, IngestOutcome } from './batcher.js';
import { isIngestBody, takeBody, type IngestBody, type IntakePlan } from './body-intake.js';
import { STREAMED_BODY_MIN_BYTES } from '../storage/blob-store.js';
import { macInputs } from './mac-inputs.js';
import type { IngestTarget } from './endpoint-cache.js';
import { inboundEventType, streamedEventType } from './event-type.js';
import { bodyTooLargeRefusal, isBodyTooLarge, METHOD_NOT_ALLOWED_METHODS, methodNotAllowed, methodRefusal, pausedRefusal, refusalOf, type RefusalBase } from './refusals.js';
import type { RejectionRecorder } from './rejections.js';
import { traceIngestRequests } from '../tracing/ingest-spans.js';
import { contentTypes } from './content-type.js';
import { declaredLength, effectiveBodyLimit, guardIngestBody, type IngestGuards } from './body-limit.js';

/** Writes an answer as JSON with no schema pass (see the ingest route). */
const plainJson = () => (data: unknown) => JSON.stringify(data);

const EMPTY = Buffer.alloc(0);
const EMPTY_BODY: IngestBody = { kind: 'inline', bytes: EMPTY };
const RECORDED_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'GET'] as const;
const PAUSED_RETRY_AFTER_SECONDS = 60;

/** `/in/{token}/sub/path?query` → the sub-path (`/` when bare) and the raw query text. */
export function splitIngestUrl(rawUrl: string): { token: string; path: string; query: string } {
  const queryAt = rawUrl.indexOf('?');
  const pathname = queryAt === -1 ? rawUrl : rawUrl.slice(0, queryAt);
  const query = queryAt === -1 ? '' : rawUrl.slice(queryAt + 1);
  const rest = pathname.slice('/in/'.length);
  const slash = rest.indexOf('/');
  const token = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 || slash === rest.length - 1 ? '/' : rest.slice(slash);
  return { token, path, query };
}

function rawHeaderPairs(raw: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
}

function idempotencyKeyOf(request: FastifyRequest, headerNames: readonly string[]): string | null {
  for (const name of headerNames) {
    const value = request.headers[name];
    const text = Array.isArray(value) ? value[0] : value;
    if (text !== undefined && text !== '') return text.slice(0, 512);
  }
  return null;
}

/**
 * Ingestion at `/in/{secret_token}[/sub/path][?query]` (docs/api.md, Ingestion): any content type, the
 * exact bytes, verification before anything is stored, idempotency, and an answer only after the
 * commit that holds the message. Delivery happens elsewhere and is never waited for.
 */
export async function ingestRoutes(app: FastifyInstance, { batcher, rejections, guards }: { batcher: IngestBatcher; rejections: RejectionRecorder; guards: IngestGuards }): Promise<void> {
  const { services } = app;
  services.metrics.registerIngestHooks(app, 'inbound');
  const spanOf = traceIngestRequests(app, services.tracing, 'inbound');

  // Every content type arrives as raw bytes: what is stored is exactly what was sent. A body larger
  // than STREAMED_BODY_MIN_BYTES streams to the blob store as it arrives (docs/architecture.md,
  // Storage); the endpoint, found before the body, says which HMACs and event type to compute on the way.
  app.removeAllContentTypeParsers();
  const blobs = services.payloadStore.blobs;
  const planFor = (request: FastifyRequest): IntakePlan | null => {
    const at = foundBefore.get(request);
    if (blobs === undefined || at === undefined) return null;
    const size = declaredLength(request);
    if (size !== null && size <= STREAMED_BODY_MIN_BYTES) return null;
    const { target, query } = at;
    return {
      blobs,
      streamAbove: STREAMED_BODY_MIN_BYTES,
      macInputs: target.verify ? macInputs(target.verify, { headers: request.headers, query: new URLSearchParams(query), remoteAddress: request.clientAddress, now: new Date() }) : [],
      eventType: streamedEventType(target.eventTypeRule, rawHeaderPairs(request.raw.rawHeaders)),
    };
  };
  app.addContentTypeParser('*', (request, payload, done) => {
    takeBody(payload, planFor(request)).then(
      (body) => done(null, body),
      (error: Error) => done(error),
    );
  });
  const bodyOf = (request: FastifyRequest): IngestBody => (isIngestBody(request.body) ? request.body : EMPTY_BODY);
  /** What a refusal keeps of a body: the bytes, or the start of a streamed one with the whole's size and hash. */
  const readOf = (body: IngestBody) => (body.kind === 'inline' ? { body: body.bytes } : { body: body.head, whole: { size: body.size, sha256: body.sha256 } });

  type Found = { target: IngestTarget; path: string; query: string };
  const found = (target: IngestTarget | null, path: string, query: string): Found => {
    if (!target) throw new AppError('NOT_FOUND', 'no inbound endpoint at this URL');
    if (target.gone) throw new AppError('GONE', 'this inbound endpoint has been deleted');
    return { target, path, query };
  };
  // Synchronous when the endpoint's settings are cached (all but the first webhook of a few
  // seconds): a webhook then reaches its statement without waiting on a promise.
  const lookup = (request: FastifyRequest): Found | Promise<Found> => {
    const { token, path, query } = splitIngestUrl(request.raw.url ?? request.url);
    if (!SECRET_TOKEN_PATTERN.test(token)) throw new AppError('NOT_FOUND', 'no inbound endpoint at this URL');
    const tokenHash = sha256Hex(token);
    const cached = services.ingestCache.peek(tokenHash);
    return cached === undefined ? services.ingestCache.get(tokenHash).then((target) => found(target, path, query)) : found(cached, path, query);
  };

  /** What every refusal at a live endpoint keeps of its request (docs/api.md, Refused requests). */
  const refusalBase = (request: FastifyRequest, { target, path, query }: Found, receivedAt: Date): RefusalBase => ({
    endpointKind: 'inbound',
    endpointId: target.id,
    projectId: target.projectId,
    receivedAt,
    method: request.method,
    path,
    query,
    rawHeaders: request.raw.rawHeaders,
    sourceAddress: request.clientAddress,
    secretHeader: target.staticTokenHeader,
    secretQueryParam: target.staticTokenQueryParam,
  });
  const paused = (request: FastifyRequest, at: Found, receivedAt: Date, body: IngestBody): AppError => {
    rejections.refuse(refusalOf(refusalBase(request, at, receivedAt), pausedRefusal(PAUSED_RETRY_AFTER_SECONDS), readOf(body)));
    return new AppError('ENDPOINT_PAUSED', 'this inbound endpoint is paused; retry later', { retryAfterSeconds: PAUSED_RETRY_AFTER_SECONDS });
  };

  // The endpoint is found before its body is read, so that its own limit refuses a body too large
  // without reading it; the handler takes it from here.
  const types = contentTypes();
  const foundBefore = new WeakMap<FastifyRequest, Found>();
  const limitBody: preParsingHookHandler = (request, reply, payload, done) => {
    types.keep(request);
    const admit = (f: Found): void => {
      foundBefore.set(request, f);
      let limited;
      try {
        limited = guardIngestBody(request, reply, payload, effectiveBodyLimit(services.config, f.target.maxBodyBytes), guards);
      } catch (error) {
        done(error as Error);
        return;
      }
      done(null, limited);
    };
    let looked: Found | Promise<Found>;
    try {
      looked = lookup(request);
    } catch (error) {
      done(error as Error);
      return;
    }
    if (looked instanceof Promise) looked.then(admit, (error: Error) => done(error));
    else admit(looked);
  };

  const record: RouteHandlerMethod = async (request: FastifyRequest, reply: FastifyReply) => {
    const receivedAt = new Date();
    const looked = foundBefore.get(request) ?? lookup(request);
    const at = looked instanceof Promise ? await looked : looked;
    const { target, path, query } = at;
    const span = spanOf(request);
    span?.setAttribute('hookrelay.inbound_endpoint.id', target.id);
    const body = bodyOf(request);
    const rawHeaders = rawHeaderPairs(request.raw.rawHeaders);
    let item: IngestItem;
    try {
      if (target.paused) throw paused(request, at, receivedAt, body);
      if (target.verify) {
        const result = target.verify({
          rawBody: body.kind === 'inline' ? body.bytes : EMPTY,
          ...(body.kind === 'stored' ? { macOf: body.macOf } : {}),
          headers: request.headers,
          query: new URLSearchParams(query),
          remoteAddress: request.clientAddress,
          now: receivedAt,
        });
        if (!result.ok) {
          services.metrics.countVerificationFailure(result.check);
          const recorded = rejections.refuse(refusalOf(refusalBase(request, at, receivedAt), { reason: result.code, detail: result.detail, status: 401, verification: true }, readOf(body)));
          // Logged as far as recorded: a flood of bad signatures is counted, not written out line by line.
          if (recorded) request.log.info({ inbound_endpoint_id: target.id, check: result.check, reason: result.reason }, 'inbound verification failed');
          throw new AppError('UNAUTHORIZED', 'unauthorized');
        }
      }
      item = {
        endpointId: target.id,
        endpointMode: target.mode,
        projectId: target.projectId,
        method: request.method,
        path,
        query,
        contentType: types.of(request),
        rawHeaders,
        body: body.kind === 'inline' ? body.bytes : EMPTY,
        streamed: body.kind === 'stored' ? { key: body.upload.key, size: body.size, abort: () => body.upload.abort() } : null,
        sha256: body.kind === 'inline' ? sha256Hex(body.bytes) : body.sha256,
        idempotencyKey: idempotencyKeyOf(request, target.idempotencyHeaderNames),
        receivedAt,
        eventType: body.kind === 'inline' ? inboundEventType(target.eventTypeRule, body.bytes, rawHeaders) : body.eventType,
        verified: target.verified,
        signing: target.signing,
        traceContext: span?.traceparent ?? null,
      };
    } catch (error) {
      // Refused before the commit: no message will hold a streamed body.
      if (body.kind === 'stored') void body.upload.abort();
      throw error;
    }
    // From here the batcher owns a streamed body: a commit that fails may still have stored it,
    // so what no message holds is left to the sweeper of abandoned uploads.
    const outcome: IngestOutcome = await batcher.submit(item);
    if (outcome.kind === 'stored' || outcome.kind === 'duplicate') span?.setAttribute('hookrelay.message.id', outcome.messageId);
    switch (outcome.kind) {
      case 'gone':
        services.ingestCache.invalidate(target.id);
        throw new AppError('GONE', 'this inbound endpoint has been deleted');
      case 'paused':
        services.ingestCache.invalidate(target.id);
        throw paused(request, at, receivedAt, body);
      case 'duplicate':
        reply.header(INGEST_DUPLICATE_HEADER, 'true');
        break;
      case 'stored':
        break;
    }
    reply.status(target.ingestResponseCode);
    if (target.ingestResponseCode === 204 || target.ingestResponseCode === 205) return reply.send();
    return reply.send({ data: { message_id: outcome.messageId }, meta: { request_id: request.id } });
  };

  const answerProbe: RouteHandlerMethod = async (request, reply) => {
    await lookup(request);
    return reply.status(200).send();
  };

  // Methods the router knows but ingestion takes none of: refused 405 at a live endpoint, and kept.
  const refuseMethod: RouteHandlerMethod = async (request, reply) => {
    const receivedAt = new Date();
    const at = await lookup(request);
    const body = bodyOf(request);
    if (body.kind === 'stored') void body.upload.abort();
    rejections.refuse(refusalOf(refusalBase(request, at, receivedAt), methodRefusal(request.method), readOf(body)));
    reply.header('allow', [...RECORDED_METHODS, 'HEAD', 'OPTIONS'].join(', '));
    throw methodNotAllowed(request.method);
  };

  // A body over the limit is refused by Fastify before the handler: kept from the error path, when
  // the URL names a live endpoint.
  app.addHook('onError', async (request, _reply, error) => {
    if (!isBodyTooLarge(error)) return;
    const receivedAt = new Date();
    let at: Found;
    try {
      const looked = foundBefore.get(request) ?? lookup(request);
      at = looked instanceof Promise ? await looked : looked;
    } catch {
      return;
    }
    const limit = effectiveBodyLimit(services.config, at.target.maxBodyBytes);
    const tooLarge = bodyTooLargeRefusal(request, limit);
    rejections.refuse(refusalOf(refusalBase(request, at, receivedAt), tooLarge, tooLarge));
  });

  for (const url of ['/in/:token', '/in/:token/*']) {
    app.route({
      method: [...RECORDED_METHODS],
      url,
      exposeHeadRoute: false,
      bodyLimit: services.config.maxIngestBodyBytes,
      preParsing: limitBody,
      // Any 2xx: the status is the endpoint's ingest_response_code.
      schema: { response: { '2xx': successEnvelope(InboundIngestOut) } },
      // The schema documents the answer (OpenAPI, the reply's type); the handler builds it from a
      // message id the commit returned, so a check of it on every webhook would cost the hot path
      // and catch nothing.
      serializerCompiler: plainJson,
      handler: record,
    });
    app.route({ method: ['HEAD', 'OPTIONS'], url, handler: answerProbe });
    app.route({ method: [...METHOD_NOT_ALLOWED_METHODS], url, handler: refuseMethod });
  }
}
