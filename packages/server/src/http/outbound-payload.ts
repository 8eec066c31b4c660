import { z } from 'zod';
import { IdempotencyKey, nestsDeeperThan, type JsonValue } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { invalidRequest } from '../errors.js';
import { MAX_EMBEDDED_JSON_DEPTH } from '../lib/body.js';
import { sha256Hex } from '../security/crypto.js';
import { NUL_MESSAGE, refuseNul } from '../security/text.js';
import { PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';
import type { RenderedPayload } from '../views/message.js';

/**
 * What POST /v1/messages and POST /v1/events share: the `Idempotency-Key` header beside the body's
 * key, the payload's checks and bytes, and the stored payload shown again as it was submitted.
 */

export const DEFAULT_JSON_CONTENT_TYPE = 'application/json';
export const DEFAULT_TEXT_CONTENT_TYPE = 'text/plain; charset=utf-8';

/** The `Idempotency-Key` header; other headers pass through untouched. */
export const IdempotencyKeyHeaders = z.looseObject({
  'idempotency-key': IdempotencyKey.refine((key) => !key.includes('\u0000'), NUL_MESSAGE).optional(),
});

/** The request's idempotency key: the header's or the body's, which must agree when both are sent. */
export function idempotencyKeyOf(headerKey: string | undefined, bodyKey: string | undefined): string | null {
  if (headerKey !== undefined && bodyKey !== undefined && headerKey !== bodyKey) {
    throw invalidRequest('header.idempotency-key: differs from body.idempotency_key (send one, or the same value in both)', [
      { path: 'header.idempotency-key', message: 'differs from body.idempotency_key' },
    ]);
  }
  return headerKey ?? bodyKey ?? null;
}

/** Deepest a JSON `payload` may nest; as deep as a JSON body may be to be embedded anywhere else. */
export const MAX_PAYLOAD_DEPTH = MAX_EMBEDDED_JSON_DEPTH;

/**
 * A request schema with a payload, as its route validates it. Payload and body are webhook bytes,
 * stored as bytea: a NUL in them travels (JSON escapes it as \u0000); the other fields are text
 * columns, which cannot hold one. A payload nested deeper than JSON.stringify survives would fail its
 * serialisation, and every later read, as a 500.
 */
export function withPayloadChecks<T extends z.ZodType<{ payload?: JsonValue | undefined }>>(schema: T): T {
  return refuseNul(schema, ['payload', 'body']).superRefine((value, ctx) => {
    if (value.payload !== undefined && nestsDeeperThan(value.payload, MAX_PAYLOAD_DEPTH)) {
      ctx.addIssue({ code: 'custom', path: ['payload'], message: `must not nest arrays and objects more than ${MAX_PAYLOAD_DEPTH} levels deep` });
    }
  }) as unknown as T;
}

/** A payload as it is stored and sent. */
export interface EncodedPayload {
  /** How it was submitted, and is shown again: `payload` (json) or `body` (text). */
  format: 'json' | 'text';
  bytes: Buffer;
  contentType: string;
  sha256: string;
}

/** The bytes of a submitted payload: `payload` as `JSON.stringify` of the value, `body` as its UTF-8. */
export function encodePayload(body: { payload?: JsonValue | undefined; body?: string | undefined; content_type?: string | undefined }): EncodedPayload {
  const format = body.payload !== undefined ? 'json' : 'text';
  const bytes = Buffer.from(format === 'json' ? JSON.stringify(body.payload) : body.body!, 'utf8');
  const contentType = body.content_type ?? (format === 'json' ? DEFAULT_JSON_CONTENT_TYPE : DEFAULT_TEXT_CONTENT_TYPE);
  return { format, bytes, contentType, sha256: sha256Hex(bytes) };
}

/** A media type whose body is JSON: `application/json`, or any `…/…+json` (RFC 6839), parameters aside, in any case. */
export function isJsonMediaType(contentType: string): boolean {
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || /^[^/]+\/[^/]+\+json$/.test(type);
}

/**
 * A `body` read as the JSON its content type says it is, bounded as a `payload` is: 400 naming
 * `field` when it is not JSON or nests deeper.
 */
export function parseJsonBody(text: string, field: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const message = 'is not valid JSON, which its content_type says it is';
    throw invalidRequest(`${field}: ${message}`, [{ path: field, message }]);
  }
  if (nestsDeeperThan(value, MAX_PAYLOAD_DEPTH)) {
    const message = `must not nest arrays and objects more than ${MAX_PAYLOAD_DEPTH} levels deep`;
    throw invalidRequest(`${field}: ${message}`, [{ path: field, message }]);
  }
  return value;
}

/** The payload's part of what the message enqueue or the event fan-out stores. */
export function payloadSubmission(payload: EncodedPayload): { payloadFormat: 'json' | 'text'; contentType: string; payload: Buffer; payloadSha256: string } {
  return { payloadFormat: payload.format, contentType: payload.contentType, payload: payload.bytes, payloadSha256: payload.sha256 };
}

/** Reads a stored payload back in the shape it was submitted in; `{}` when there is none (deleted, swept). */
export async function renderStoredPayload(store: PayloadStore, sql: Sql, key: string | null, format: 'json' | 'text'): Promise<RenderedPayload> {
  if (key === null) return {};
  let bytes: Buffer | undefined;
  try {
    bytes = await store.get(sql, key);
  } catch (error) {
    if (error instanceof PayloadUnavailableError) return { body_error: 'payload_unavailable' };
    throw error;
  }
  if (bytes === undefined) return {};
  if (format === 'json') return { payload: JSON.parse(bytes.toString('utf8')) as unknown };
  return { body: bytes.toString('utf8') };
}
