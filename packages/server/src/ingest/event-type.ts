import type { EventTypeSource } from '@hookrelay/shared';
import { JsonPathScanner, type ScannedValue } from './json-scan.js';

/** Longest event type stored: the list's `event_type` filter takes at most this many characters. */
export const MAX_EVENT_TYPE_LENGTH = 255;

function usable(value: string): string | null {
  return value.length > 0 && value.length <= MAX_EVENT_TYPE_LENGTH ? value : null;
}

/** `a.b.c` into a parsed JSON document; a numeric segment also indexes into an array (`items.0.type`). */
function walk(document: unknown, path: string): unknown {
  let current = document;
  for (const segment of path.split('.')) {
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (typeof current === 'object' && current !== null && Object.hasOwn(current, segment)) {
      current = (current as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

/**
 * The event type of a webhook (docs/api.md, Ingestion), or null when extraction is not
 * configured or fails: a body that is not JSON, a missing field, a value that is an object, array
 * or null, an empty value or one longer than 255 characters. It never throws, so a webhook is
 * never refused for its event type.
 *
 * - `body`: the body is parsed as JSON whatever its Content-Type (a UTF-8 BOM is skipped); strings
 *   are stored as they are, numbers and booleans as their JSON text.
 * - `header`: the first header line of that name (case-insensitive), as sent.
 */
export function extractEventType(
  source: EventTypeSource | null,
  path: string | null,
  body: Buffer,
  rawHeaders: readonly [string, string][],
): string | null {
  if (source === null || path === null) return null;
  try {
    if (source === 'header') {
      const value = headerValue(rawHeaders, path.toLowerCase());
      return value === undefined ? null : usable(value);
    }
    if (body.length === 0) return null;
    const value = walk(parseJson(body), path);
    if (typeof value === 'string') return usable(value);
    if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') return usable(String(value));
    return null;
  } catch {
    return null;
  }
}

/** The body as JSON whatever its Content-Type, a UTF-8 BOM skipped; throws when it is not JSON. */
function parseJson(body: Buffer): unknown {
  const text = body.toString('utf8');
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
}

/** The first header line of `name` (lowercase), as sent. */
function headerValue(rawHeaders: readonly [string, string][], name: string): string | undefined {
  for (const [n, v] of rawHeaders) if (n.length === name.length && n.toLowerCase() === name) return v;
  return undefined;
}

const stringField = (document: unknown, key: string): string | null => {
  if (typeof document !== 'object' || document === null || Array.isArray(document) || !Object.hasOwn(document, key)) return null;
  const value = (document as Record<string, unknown>)[key];
  return typeof value === 'string' ? usable(value) : null;
};

/** Whether the first byte that is not whitespace (after a BOM) opens a JSON object: no parse otherwise. */
function looksLikeJsonObject(body: Buffer): boolean {
  let i = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x0a || body[i] === 0x0d || body[i] === 0x09)) i++;
  return body[i] === 0x7b;
}

const SLACK_BODY_TYPES: ReadonlySet<string> = new Set(['event_callback', 'url_verification']);

/**
 * The event type where well-known providers put it, for an inbound endpoint without a rule of its
 * own: `X-GitHub-Event` (GitHub), `X-Shopify-Topic` (Shopify); for Slack (`X-Slack-Signature`, or
 * a body `type` of `event_callback` / `url_verification`) the body's `event.type`, else its
 * `type`; otherwise the body's top-level `type` when it is a string (Stripe, Standard Webhooks).
 * Null for a body that is not a JSON object, or without such a field. Never throws.
 */
export function detectEventType(body: Buffer, rawHeaders: readonly [string, string][]): string | null {
  const github = headerValue(rawHeaders, 'x-github-event');
  if (github !== undefined) return usable(github);
  const shopify = headerValue(rawHeaders, 'x-shopify-topic');
  if (shopify !== undefined) return usable(shopify);
  if (!looksLikeJsonObject(body)) return null;
  let document: unknown;
  try {
    document = parseJson(body);
  } catch {
    return null;
  }
  const type = stringField(document, 'type');
  const slack = headerValue(rawHeaders, 'x-slack-signature') !== undefined || (type !== null && SLACK_BODY_TYPES.has(type));
  if (slack) return stringField((document as Record<string, unknown>).event, 'type') ?? type;
  return type;
}

/** An inbound endpoint's event type rule: its own extraction, or provider detection when it has none. */
export interface EventTypeRule {
  source: EventTypeSource | null;
  path: string | null;
}

/** The event type of an inbound webhook under `rule` (see `extractEventType`, `detectEventType`). */
export function inboundEventType(rule: EventTypeRule, body: Buffer, rawHeaders: readonly [string, string][]): string | null {
  return rule.source !== null && rule.path !== null ? extractEventType(rule.source, rule.path, body, rawHeaders) : detectEventType(body, rawHeaders);
}

/**
 * The event type of a body that streams by in pieces (one too large to hold whole), under the same
 * rules as `inboundEventType`, read by a JsonPathScanner as the bytes arrive: `write` each piece,
 * then `end`. A rule that reads a header, or a provider told by its headers, reads no byte.
 */
export function streamedEventType(rule: EventTypeRule, rawHeaders: readonly [string, string][]): { write(chunk: Uint8Array): void; end(): string | null } {
  const fixed = (value: string | null) => ({ write() {}, end: () => value });
  if (rule.source !== null && rule.path !== null) {
    if (rule.source === 'header') return fixed(extractEventType(rule.source, rule.path, Buffer.alloc(0), rawHeaders));
    const scanner = new JsonPathScanner([rule.path.split('.')]);
    return {
      write: (chunk) => scanner.write(chunk),
      end: () => scalarText(scanner.end().get(0)),
    };
  }
  const github = headerValue(rawHeaders, 'x-github-event');
  if (github !== undefined) return fixed(usable(github));
  const shopify = headerValue(rawHeaders, 'x-shopify-topic');
  if (shopify !== undefined) return fixed(usable(shopify));
  const scanner = new JsonPathScanner([['type'], ['event', 'type']]);
  const slackHeader = headerValue(rawHeaders, 'x-slack-signature') !== undefined;
  return {
    write: (chunk) => scanner.write(chunk),
    end: () => {
      const found = scanner.end();
      if (scanner.topLevelObject !== true) return null;
      const string = (v: ScannedValue | undefined) => (v?.kind === 'string' ? usable(v.value) : null);
      const type = string(found.get(0));
      const slack = slackHeader || (type !== null && SLACK_BODY_TYPES.has(type));
      return slack ? (string(found.get(1)) ?? type) : type;
    },
  };
}

/** A scanned value as `extractEventType` stores it: strings as they are, numbers and booleans as their JSON text. */
function scalarText(value: ScannedValue | undefined): string | null {
  if (value === undefined || value.kind === 'other') return null;
  if (value.kind === 'string') return usable(value.value);
  const parsed: unknown = JSON.parse(value.text);
  return (typeof parsed === 'number' && Number.isFinite(parsed)) || typeof parsed === 'boolean' ? usable(String(parsed)) : null;
}
