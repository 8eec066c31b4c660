import { emptyRecord } from '@hookrelay/shared';
import type { PayloadStore } from '../storage/payload-store.js';
import { PayloadUnavailableError } from '../storage/payload-store.js';
import type { Sql } from '../db/database.js';

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

export type RenderedBody =
  | { body: unknown; body_encoding?: 'base64' }
  | { body_error: 'payload_unavailable' }
  | Record<string, never>;

/**
 * A payload as the API shows it: JSON payloads embedded as values, everything else (or everything,
 * when asked) base64, so that no byte is lost to a text encoding.
 */
export function renderBody(bytes: Buffer, contentType: string, forceBase64: boolean): RenderedBody {
  if (!forceBase64 && JSON_CONTENT_TYPE.test(contentType) && bytes.length > 0) {
    const text = bytes.toString('utf8');
    // Too deep to embed: serialising the response would overflow the stack, and every read of the
    // message (and every listen page holding it) would fail. Such a body travels as base64.
    if (jsonNestingDepth(text) <= MAX_EMBEDDED_JSON_DEPTH) {
      try {
        return { body: JSON.parse(text) };
      } catch {
        // Declared JSON but is not: the bytes still travel, as base64.
      }
    }
  }
  return { body: bytes.toString('base64'), body_encoding: 'base64' };
}

/** Deepest nesting of JSON payloads embedded as values; far below what JSON.stringify survives. */
export const MAX_EMBEDDED_JSON_DEPTH = 512;

/** How deeply arrays and objects nest in JSON text (brackets inside strings do not count). */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return deepest;
}

/**
 * Loads and renders a payload: no key (gone on purpose) → no body; a store failure →
 * `body_error: payload_unavailable`, so a reader can tell an outage from a deleted payload.
 */
export async function loadBody(
  store: PayloadStore,
  sql: Sql,
  payloadKey: string | null,
  contentType: string,
  forceBase64: boolean,
  size?: number,
): Promise<RenderedBody> {
  if (payloadKey === null) return {};
  try {
    const bytes = await store.get(sql, payloadKey, size);
    return bytes === undefined ? {} : renderBody(bytes, contentType, forceBase64);
  } catch (error) {
    if (error instanceof PayloadUnavailableError) return { body_error: 'payload_unavailable' };
    throw error;
  }
}

/** Header lines joined per name (repeats with ", " as HTTP allows), names lowercased. */
export function joinHeaders(rawHeaders: readonly [string, string][]): Record<string, string> {
  // Names are the sender's: a null-prototype map keeps `__proto__` or `constructor` an ordinary header.
  const headers = emptyRecord<string>();
  for (const [name, value] of rawHeaders) {
    const key = name.toLowerCase();
    headers[key] = headers[key] === undefined ? value : `${headers[key]}, ${value}`;
  }
  return headers;
}
