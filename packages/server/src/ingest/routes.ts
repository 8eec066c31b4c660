import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingHookHandler, RouteHandlerMethod } from 'fastify';
import { SECRET_TOKEN_PATTERN } from '@hookrelay/shared';
import { AppError } from '../errors.js';
import { sha256Hex } from '../security/crypto.js';
import type { IngestBatcher, IngestOutcome } from './batcher.js';
import type { IngestTarget } from './endpoint-cache.js';
import { inboundEventType } from './event-type.js';
import { bodyTooLargeRefusal, isBodyTooLarge, METHOD_NOT_ALLOWED_METHODS, methodNotAllowed, methodRefusal, pausedRefusal, refusalOf, type RefusalBase } from './refusals.js';
import type { RejectionRecorder } from './rejections.js';
import { traceIngestRequests } from '../tracing/ingest-spans.js';
import { effectiveBodyLimit, guardIngestBody, type IngestGuards } from './body-limit.js';

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

  // Every content type arrives as raw bytes: what is stored is exactly what was sent.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

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
  const paused = (request: FastifyRequest, at: Found, receivedAt: Date, body: Buffer): AppError => {
    rejections.refuse(refusalOf(refusalBase(request, at, receivedAt), pausedRefusal(PAUSED_RETRY_AFTER_SECONDS), { body }));
    return new AppError('ENDPOINT_PAUSED', 'this inbound endpoint is paused; retry later', { retryAfterSeconds: PAUSED_RETRY_AFTER_SECONDS });
  };

  // The endpoint is found before its body is read, so that its own limit refuses a body too large
  // without reading it; the handler takes it from here.
  const foundBefore = new WeakMap<FastifyRequest, Found>();
  const limitBody: preParsingHookHandler = (request, reply, payload, done) => {
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
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    if (target.paused) throw paused(request, at, receivedAt, body);
    if (target.verify) {
      const result = target.verify({
        rawBody: body,
        headers: request.headers,
        query: new URLSearchParams(query),
        remoteAddress: request.clientAddress,
        now: receivedAt,
      });
      if (!result.ok) {
        services.metrics.countVerificationFailure(result.check);
        const recorded = rejections.refuse(refusalOf(refusalBase(request, at, receivedAt), { reason: result.code, detail: result.detail, status: 401, verification: true }, { body }));
        // Logged as far as recorded: a flood of bad signatures is counted, not written out line by line.
        if (recorded) request.log.info({ inbound_endpoint_id: target.id, check: result.check, reason: result.reason }, 'inbound verification failed');
        throw new AppError('UNAUTHORIZED', 'unauthorized');
      }
    }
    const rawHeaders = rawHeaderPairs(request.raw.rawHeaders);
    const outcome: IngestOutcome = await batcher.submit({
      endpointId: target.id,
      endpointMode: target.mode,
      projectId: target.projectId,
      method: request.method,
      path,
      query,
      contentType: request.headers['content-type'] ?? '',
      rawHeaders,
      body,
      sha256: sha256Hex(body),
      idempotencyKey: idempotencyKeyOf(request, target.idempotencyHeaderNames),
      receivedAt,
      eventType: inboundEventType(target.eventTypeRule, body, rawHeaders),
      verified: target.verified,
      traceContext: span?.traceparent ?? null,
    });
    if (outcome.kind === 'stored' || outcome.kind === 'duplicate') span?.setAttribute('hookrelay.message.id', outcome.messageId);
    switch (outcome.kind) {
      case 'gone':
        services.ingestCache.invalidate(target.id);
        throw new AppError('GONE', 'this inbound endpoint has been deleted');
      case 'paused':
        services.ingestCache.invalidate(target.id);
        throw paused(request, at, receivedAt, body);
      case 'duplicate':
        reply.header('hookrelay-duplicate', 'true');
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
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    rejections.refuse(refusalOf(refusalBase(request, at, receivedAt), methodRefusal(request.method), { body }));
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
      handler: record,
    });
    app.route({ method: ['HEAD', 'OPTIONS'], url, handler: answerProbe });
    app.route({ method: [...METHOD_NOT_ALLOWED_METHODS], url, handler: refuseMethod });
  }
}
