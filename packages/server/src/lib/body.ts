import type { PayloadStore } from '../storage/payload-store.js';
import { PayloadUnavailableError } from '../storage/payload-store.js';
import type { Sql } from '../db/database.js';

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

export type RenderedBody =
  | { body: unknown; body_encoding?: 'base64' }
  | { body_error: 'payload_unavailable' }
  | Record<string, never>;

/**
 * A payload as the API shows it (interface "Inbound message as returned by the CLI listen
 * operation"): JSON payloads embedded as values, everything else (or everything, when asked) base64.
 */
export function renderBody(bytes: Buffer, contentType: string, forceBase64: boolean): RenderedBody {
  if (!forceBase64 && JSON_CONTENT_TYPE.test(contentType) && bytes.length > 0) {
    try {
      return { body: JSON.parse(bytes.toString('utf8')) };
    } catch {
      // Declared JSON but is not: the bytes still travel, as base64.
    }
  }
  return { body: bytes.toString('base64'), body_encoding: 'base64' };
}

/**
 * Loads and renders a payload: no key (gone on purpose) → no body; a store failure →
 * `body_error: payload_unavailable` (decisions.md §4).
 */
export async function loadBody(
  store: PayloadStore,
  sql: Sql,
  payloadKey: string | null,
  contentType: string,
  forceBase64: boolean,
): Promise<RenderedBody> {
  if (payloadKey === null) return {};
  try {
    const bytes = await store.get(sql, payloadKey);
    return bytes === undefined ? {} : renderBody(bytes, contentType, forceBase64);
  } catch (error) {
    if (error instanceof PayloadUnavailableError) return { body_error: 'payload_unavailable' };
    throw error;
  }
}

/** Header lines joined per name (repeats with ", " as HTTP allows), names lowercased. */
export function joinHeaders(rawHeaders: readonly [string, string][]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of rawHeaders) {
    const key = name.toLowerCase();
    headers[key] = headers[key] === undefined ? value : `${headers[key]}, ${value}`;
  }
  return headers;
}
