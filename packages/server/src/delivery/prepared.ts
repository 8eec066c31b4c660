import type { Sql } from '../db/database.js';
import type { DeliveryKind, DeliveryStatus, InboundDeliveryContext, OutboundDeliveryContext } from '../db/deliveries.js';
import type { EnqueueLease } from '../db/messages.js';
import { openPayload, PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';
import { isOutbound, type BlobPayload, type ClaimedDelivery, type Payload } from './claim.js';
import type { HandedOverDelivery } from './local-worker.js';
import { buildForwardRequest, buildOutboundRequest } from './request.js';
import type { SecretCache } from './secret-cache.js';
import type { OutgoingRequest, StreamedBody } from './sender.js';
import { lateSignature, outgoingSignature, resignedHeaderNames, senderSigningOf } from '../ingest/resign.js';

/** One delivery, claimed or handed over, ready to send once its rate-limit slot comes. */
export interface Prepared {
  kind: DeliveryKind;
  messageId: string;
  leaseId: string;
  previousStatus: DeliveryStatus;
  attemptNumber: number;
  attemptInDelivery: number;
  /** Local time (Date.now()) before which it must not be sent: its rate-limit slot; 0 = at once. */
  notBefore: number;
  /** The message's stored `traceparent` (inbound messages; null for outbound ones). */
  traceContext: string | null;
  /**
   * The payload's size, counted against the byte budget until the delivery ends. A streamed body
   * holds only a few pieces in memory, but counts its size all the same: what the budget bounds
   * for it is the bytes being read from the store and sent at once, which all share the store's
   * throughput. Counted by its buffer, as many large bodies as the concurrency allows would stream
   * at once, each too slowly to end within the request timeout, and be cut and sent again.
   */
  bytes: number;
  /** The blob a streamed body is read from at each attempt; null when the payload is held. */
  blobKey: string | null;
  /** The attempt's request, built when it is sent, so that a signature carries that time. */
  build(timestamp: number): OutgoingRequest | Promise<OutgoingRequest>;
}

/**
 * What building requests needs: the signing secrets (the senders' too, opened alike), the store a
 * streamed body is read from, and how late a forward-mode message may go before it is re-signed.
 */
export interface RequestContext {
  secrets: SecretCache;
  payloadStore: PayloadStore;
  sql: Sql;
  resignAfterSeconds: number;
}

/** The Standard Webhooks headers that an endpoint's own signing puts in place of the sender's. */
const OWN_SIGNATURE_HEADERS: ReadonlySet<string> = new Set(['webhook-id', 'webhook-timestamp', 'webhook-signature']);

/** A delivery of a committed claim. */
export function preparedFromClaim(ctx: RequestContext, leaseId: string, { context: c, job, payload, notBefore }: ClaimedDelivery): Prepared {
  const attemptNumber = c.attempt_count + 1;
  const held = Buffer.isBuffer(payload);
  return {
    kind: job.kind,
    messageId: c.id,
    leaseId,
    previousStatus: c.status,
    attemptNumber,
    attemptInDelivery: Math.max(1, attemptNumber - job.attempt_base),
    notBefore,
    traceContext: isOutbound(c) ? null : c.trace_context,
    bytes: held ? payload.length : payload.size,
    blobKey: held ? null : payload.key,
    // Outbound payloads are always read whole (claim.ts, fetchPayloads): API bodies are at most 1 MiB.
    build: isOutbound(c) ? outboundRequest(ctx, outboundDeliveryOf(c, payload as Buffer)) : forwardRequest(ctx, c, payload),
  };
}

/** A message the enqueue leased to this worker: its first attempt, at once. */
export function preparedFromHandoff(ctx: RequestContext, lease: EnqueueLease, d: HandedOverDelivery): Prepared {
  return {
    kind: 'outbound',
    messageId: d.messageId,
    leaseId: lease.leaseId,
    previousStatus: 'queued',
    attemptNumber: 1,
    attemptInDelivery: 1,
    notBefore: 0,
    traceContext: null,
    bytes: d.body.length,
    blobKey: null,
    build: outboundRequest(ctx, d),
  };
}

/** A claimed outbound message in the shape the enqueue hands over, so that one builder makes both requests. */
function outboundDeliveryOf(c: OutboundDeliveryContext, body: Buffer): HandedOverDelivery {
  return { messageId: c.id, url: c.url, headers: c.headers, contentType: c.content_type, eventType: c.event_type, secrets: c.secrets, body };
}

/** The one builder of an outbound attempt's request, for a claimed job and a message handed over by the enqueue alike. */
function outboundRequest(ctx: RequestContext, delivery: HandedOverDelivery): Prepared['build'] {
  return (timestamp) =>
    buildOutboundRequest({
      messageId: delivery.messageId,
      url: delivery.url,
      contentType: delivery.contentType,
      eventType: delivery.eventType,
      customHeaders: delivery.headers,
      secrets: delivery.secrets.map((s) => ctx.secrets.open(s)),
      body: delivery.body,
      timestamp,
    });
}

/**
 * A forward-mode inbound attempt's request: re-signed with the sender's secret when the attempt
 * leaves late after the sender's signed timestamp (ingest/resign.ts), unless the endpoint's own
 * signature replaces the headers that would be re-signed.
 */
function forwardRequest(ctx: RequestContext, c: InboundDeliveryContext, payload: Payload): Prepared['build'] {
  const body = Buffer.isBuffer(payload) ? payload : streamedBody(ctx, payload);
  const signing = senderSigningOf(c, c.hmac_secret_encrypted === null ? null : ctx.secrets.open(c.hmac_secret_encrypted));
  return async (timestamp) => {
    const nowMs = timestamp * 1000;
    let late = lateSignature(signing, c, nowMs, ctx.resignAfterSeconds);
    if (late?.plan !== undefined && c.signing_enabled && resignedHeaderNames(late.plan).every((name) => OWN_SIGNATURE_HEADERS.has(name))) late = null;
    const signature = await outgoingSignature(late, c, Buffer.isBuffer(body) ? body : () => body.open(), nowMs);
    const request = await buildForwardRequest({
      messageId: c.id,
      url: c.url,
      method: c.method,
      path: c.path,
      query: c.query,
      rawHeaders: signature.rawHeaders,
      secrets: c.signing_enabled ? c.secrets.map((s) => ctx.secrets.open(s)) : null,
      body,
      timestamp,
    });
    return signature.resigned ? { ...request, resigned: true } : request;
  };
}

/**
 * A blob's bytes, from a fresh read of the store for every pass (the signature's, the request's):
 * BLOB_CHUNK_BYTES at a time, and checked against the size its message has.
 */
function streamedBody({ payloadStore, sql }: RequestContext, { key, size }: BlobPayload): StreamedBody {
  return {
    size,
    async *open() {
      const stream = await openPayload(payloadStore, sql, key, size);
      if (stream === undefined) throw new PayloadUnavailableError(`payload ${key} is not stored`);
      yield* stream as AsyncIterable<Buffer>;
    },
  };
}
