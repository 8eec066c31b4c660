import { z } from 'zod';
import { ENDPOINT_ID_PATTERN, UUID_PATTERN } from '../ids.js';

/** RFC 3339 date-time as the API writes it (`Date.prototype.toISOString`). */
export const Timestamp = z.iso.datetime({ offset: true });

const EARLIEST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LATEST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * RFC 3339 date-time accepted from callers (query strings and bodies); any offset PostgreSQL takes.
 * Some RFC 3339 values are not PostgreSQL timestamps and are refused here rather than failing in the
 * query as a 500: instants outside years 0001–9999 in UTC (year 0000 does not exist there, and a
 * value that goes through a JS Date is written back as `0000-…` or `+010000-…`), and offsets beyond
 * ±15:59.
 */
export const TimestampIn = z.iso
  // abort: a value that is not RFC 3339 at all gets that one message, not the range's too.
  .datetime({ offset: true, message: 'must be an RFC 3339 date-time', abort: true })
  .refine((value) => {
    const instant = Date.parse(value);
    return instant >= EARLIEST_INSTANT && instant <= LATEST_INSTANT;
  }, 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z')
  .refine((value) => !/[+-](?:1[6-9]|2\d):\d\d$/.test(value), 'must have a UTC offset between -15:59 and +15:59');

export const Uuid = z.string().regex(UUID_PATTERN, 'must be a UUID');
export const EndpointId = z.string().regex(ENDPOINT_ID_PATTERN, 'must be ep_ followed by 32 lowercase hex characters');

/** Opaque keyset cursor (base64url); callers must not parse it. */
export const Cursor = z.string().min(1).max(512);

/**
 * A page-size query parameter. Query strings arrive as text, so digits are coerced; anything else
 * (`abc`, `1.5`, `-1`) is rejected naming the field.
 */
export function limitParam(max: number, defaultValue: number) {
  return z.coerce
    .number({ message: 'must be an integer' })
    .int('must be an integer')
    .min(1, 'must be at least 1')
    .max(max, `must be at most ${max}`)
    .default(defaultValue);
}

/** Boolean query parameter written as `true`/`false`/`1`/`0`. */
export const BooleanParam = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1');

/** Destination URL of a delivery: https only, 12–2048 characters, parseable. */
export const HttpsUrl = z
  .string()
  .min(12, 'must be at least 12 characters')
  .max(2048, 'must be at most 2048 characters')
  .refine((value) => value.startsWith('https://'), 'must start with https://')
  .refine((value) => {
    try {
      const parsed = new URL(value);
      return parsed.protocol === 'https:' && parsed.hostname.length > 0;
    } catch {
      return false;
    }
  }, 'must be a valid https URL');

/** Custom header map: names and values are checked for forbidden names and CR/LF by the server. */
export const HeaderMap = z.record(z.string(), z.string());

export const Ttl = z.number().int('must be an integer').min(1, 'must be at least 1').max(1440, 'must be at most 1440');

/** `{ id, paused }`: answer of every pause/resume operation. */
export const PauseOut = z.object({ id: z.string(), paused: z.boolean() });
export type PauseOut = z.infer<typeof PauseOut>;

/** `{ id, deleted: true }`: answer of an endpoint delete. */
export const EndpointDeleteOut = z.object({ id: z.string(), deleted: z.literal(true) });
export type EndpointDeleteOut = z.infer<typeof EndpointDeleteOut>;

export const IdParams = z.object({ id: Uuid });
export const EndpointIdParams = z.object({ id: EndpointId });

/** A list's page request: `limit` 1–200 (default 50) and an opaque `cursor`. */
export const EndpointListQuery = z.strictObject({
  limit: limitParam(200, 50),
  cursor: Cursor.optional(),
});
export type EndpointListQuery = z.infer<typeof EndpointListQuery>;

/** An integer field of a request body, with messages that read after the field name. */
export function intRange(min: number, max: number) {
  return z
    .number({ message: 'must be an integer' })
    .int('must be an integer')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);
}

/**
 * How many days an outbound or inbound endpoint keeps its messages (docs/api.md, Message retention);
 * null: the server's default (`HOOKRELAY_MESSAGE_RETENTION_DAYS`).
 */
export const MessageRetentionDays = intRange(1, 3650).nullable();

/** A header name as HTTP defines it (RFC 9110 token), so it can be looked up in a request as given. */
export const HeaderName = z
  .string()
  .min(1, 'must not be empty')
  .max(256, 'must be at most 256 characters')
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name');

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * Any JSON value (payloads and bodies). Checked shallowly on purpose: the value comes from JSON.parse,
 * and a recursive walk of a deeply nested 1 MiB document would overflow the stack (a 500, not a 400).
 */
export const JsonValue = z.custom<JsonValue>(
  (value) =>
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value)) ||
    (typeof value === 'object' && value !== null),
  { message: 'must be a JSON value' },
);

/**
 * A comma-separated list of enum values (`?status=stored,fetched`). A repeated query parameter or a
 * JSON array is accepted too, since Fastify turns `?status=a&status=b` into an array. Blank items are
 * dropped, repeats kept once; an unknown item or an empty list is rejected on the field itself.
 */
export function commaListParam<const T extends readonly [string, ...string[]]>(values: T) {
  const allowed = new Set<string>(values);
  const message = `must be a comma-separated list of ${values.join(', ')}`;
  return z
    .union([z.string(), z.array(z.string())], { message })
    .transform((input, ctx): T[number][] => {
      const items = (Array.isArray(input) ? input : [input])
        .flatMap((part) => part.split(','))
        .map((item) => item.trim())
        .filter((item) => item.length > 0);
      if (items.length === 0 || items.some((item) => !allowed.has(item))) {
        ctx.issues.push({ code: 'custom', message, input });
        return z.NEVER;
      }
      return [...new Set(items)] as T[number][];
    });
}

/**
 * The id list of a batch operation: 1..max UUIDs. Repeats are kept once so that each id gets exactly
 * one outcome and the counts add up to the number of results.
 */
export function uuidBatch(max: number) {
  return z
    .array(Uuid, { message: 'must be an array of UUIDs' })
    .min(1, 'must contain at least 1 id')
    .max(max, `must contain at most ${max} ids`)
    .transform((ids) => [...new Set(ids)]);
}
