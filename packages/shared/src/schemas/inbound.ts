import { isIP } from 'node:net';
import { z } from 'zod';
import { ANSWER_CLASSES, INBOUND_MODES, MESSAGE_SEARCH, SCHEMES_WITHOUT_PRESET_HEADER } from '../constants.js';
import {
  Cursor,
  HeaderName,
  HttpsUrl,
  intRange,
  JsonValue,
  limitParam,
  MessageRetentionDays,
  Timestamp,
  TimestampIn,
  Ttl,
  Uuid,
} from './common.js';
import { checkEventTypeCreate, checkEventTypeUpdate, EventTypeSource, eventTypeCreateShape, eventTypeUpdateShape } from './event-type.js';
import { batchDeleteResult, MessageDeleteBatchIn, MessageDeleteOut, MessageStatus } from './messages.js';
import { SampleProviderName } from './samples.js';
import { HmacScheme, VerificationSettings } from './verification.js';

// Defined without zod in constants.ts, for clients that only name them; exported here too, beside their schemas.
export { ANSWER_CLASSES, INBOUND_MODES, INLINE_BODY_MAX_BYTES, LISTEN_PAGE_MAX_BODY_BYTES, LISTEN_PAGE_SIZE, SCHEMES_WITHOUT_PRESET_HEADER } from '../constants.js';

export const InboundMode = z.enum(INBOUND_MODES, { message: 'must be forward or cli' });
export type InboundMode = z.infer<typeof InboundMode>;

/** `203.0.113.0/24`, `2001:db8::/32`, or a bare address (one host). */
function isCidr(value: string): boolean {
  const slash = value.indexOf('/');
  const address = slash === -1 ? value : value.slice(0, slash);
  const family = isIP(address);
  // isIP accepts IPv6 zone ids (`fe80::1%eth0`), which mean nothing for a sender's address.
  if (family === 0 || address.includes('%')) return false;
  if (slash === -1) return true;
  const prefix = value.slice(slash + 1);
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

const Cidr = z.string().refine(isCidr, 'must be a CIDR block such as 203.0.113.0/24');

const Name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const Description = z.string().max(500, 'must be at most 500 characters');
const QueryParamName = z
  .string()
  .min(1, 'must not be empty')
  .max(256, 'must be at most 256 characters')
  .regex(/^[A-Za-z0-9._~-]+$/, 'must be a query parameter name (letters, digits, . _ ~ -)');
/** A PATCH value where "" clears the setting. */
function clearable(schema: z.ZodString, what: string) {
  return z.union([z.literal(''), schema], { message: `must be ${what} or ""` }).optional();
}

/**
 * An endpoint's own limit on an ingested body, in bytes: it may lower the server's ingest limit
 * (`HOOKRELAY_MAX_INGEST_BODY_BYTES`), never raise it; the server refuses a value above its own.
 */
export const MaxBodyBytes = intRange(1, 2_147_483_647);

const Secret = z.string().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters');

/**
 * The settings shared by create and update. Secrets (`static_token`, `hmac_secret`) are write-only:
 * no response ever carries them.
 */
const settingsShape = {
  name: Name,
  description: Description.optional(),
  mode: InboundMode.optional(),
  url: HttpsUrl.optional(),
  verify_static_token: z.boolean({ message: 'must be true or false' }).optional(),
  static_token_header_name: HeaderName.optional(),
  static_token_query_param: QueryParamName.optional(),
  static_token: Secret.optional(),
  verify_hmac: z.boolean({ message: 'must be true or false' }).optional(),
  hmac_scheme: HmacScheme.optional(),
  hmac_header_name: HeaderName.optional(),
  hmac_secret: Secret.optional(),
  timestamp_header_name: HeaderName.optional(),
  timestamp_tolerance_seconds: intRange(1, 86400).optional(),
  verify_ip_allowlist: z.boolean({ message: 'must be true or false' }).optional(),
  allowed_cidrs: z.array(Cidr, { message: 'must be an array of CIDR blocks' }).max(100, 'must list at most 100 CIDR blocks').optional(),
  idempotency_header_names: z
    .array(HeaderName, { message: 'must be an array of header names' })
    .max(10, 'must list at most 10 header names')
    .optional(),
  ingest_response_code: intRange(200, 299).optional(),
  signing_enabled: z.boolean({ message: 'must be true or false' }).optional(),
  max_body_bytes: MaxBodyBytes.optional(),
  retention_days: MessageRetentionDays.optional(),
  /** Re-sign a delivery that leaves later than the server's threshold after its signed timestamp (default true). */
  resign_late: z.boolean({ message: 'must be true or false' }).optional(),
};

/**
 * POST /v1/inbound-endpoints. Defaults (applied by the server): `mode` forward when `url` is given,
 * else cli; `hmac_scheme` hex; `timestamp_tolerance_seconds` 300; `ingest_response_code` 200;
 * `ttl_minutes` 30. `event_type_source` and `event_type_path` (together or not at all) replace
 * provider detection of the event type with the endpoint's own rule. Every check that needs only the request is made here, so that a bad setup is
 * refused before anything is stored; a verification setting sent without its `verify_*` flag is
 * kept, so that the flag can be switched on later.
 */
export const InboundEndpointCreateIn = z
  .strictObject({
    ...settingsShape,
    ...eventTypeCreateShape,
    ephemeral: z.boolean({ message: 'must be true or false' }).optional(),
    ttl_minutes: Ttl.optional(),
  })
  .superRefine((value, ctx) => {
    checkEventTypeCreate(value, ctx);
    if (value.mode === 'forward' && value.url === undefined) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required when mode is forward' });
    }
    if (value.verify_static_token === true) {
      if (value.static_token === undefined) {
        ctx.addIssue({ code: 'custom', path: ['static_token'], message: 'is required when verify_static_token is true' });
      }
      if (value.static_token_header_name === undefined && value.static_token_query_param === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['static_token_header_name'],
          message: 'or static_token_query_param is required when verify_static_token is true',
        });
      }
    }
    if (value.verify_hmac === true) {
      if (value.hmac_secret === undefined) {
        ctx.addIssue({ code: 'custom', path: ['hmac_secret'], message: 'is required when verify_hmac is true' });
      }
      if (SCHEMES_WITHOUT_PRESET_HEADER.has(value.hmac_scheme ?? 'hex') && value.hmac_header_name === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['hmac_header_name'],
          message: 'is required when verify_hmac is true and hmac_scheme is hex or base64',
        });
      }
    }
    if (value.verify_ip_allowlist === true && (value.allowed_cidrs ?? []).length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['allowed_cidrs'],
        message: 'must list at least one CIDR block when verify_ip_allowlist is true',
      });
    }
  });
export type InboundEndpointCreateIn = z.infer<typeof InboundEndpointCreateIn>;

/**
 * PATCH /v1/inbound-endpoints/{id}: omitted fields keep their values. An empty string clears an
 * optional setting: `url` (a cli endpoint can thus give its stored URL up, e.g. to free it for another
 * endpoint under DUPLICATE_URL), `description`, the static-token header/query names,
 * `hmac_header_name` and `timestamp_header_name` (no timestamp check); `event_type_source: ""` clears
 * the event type rule (back to provider detection). Secrets cannot be cleared:
 * turn the `verify_*` flag off instead. Checks that depend on the stored endpoint (switching to
 * forward without any URL, turning a check on without its secret) are the server's.
 */
export const InboundEndpointUpdateIn = z
  .strictObject({
    name: Name.optional(),
    description: settingsShape.description,
    mode: settingsShape.mode,
    url: clearable(HttpsUrl, 'an https URL'),
    verify_static_token: settingsShape.verify_static_token,
    static_token_header_name: clearable(HeaderName, 'an HTTP header name'),
    static_token_query_param: clearable(QueryParamName, 'a query parameter name'),
    static_token: settingsShape.static_token,
    verify_hmac: settingsShape.verify_hmac,
    hmac_scheme: settingsShape.hmac_scheme,
    hmac_header_name: clearable(HeaderName, 'an HTTP header name'),
    hmac_secret: settingsShape.hmac_secret,
    timestamp_header_name: clearable(HeaderName, 'an HTTP header name'),
    timestamp_tolerance_seconds: settingsShape.timestamp_tolerance_seconds,
    verify_ip_allowlist: settingsShape.verify_ip_allowlist,
    allowed_cidrs: settingsShape.allowed_cidrs,
    idempotency_header_names: settingsShape.idempotency_header_names,
    ingest_response_code: settingsShape.ingest_response_code,
    signing_enabled: settingsShape.signing_enabled,
    max_body_bytes: MaxBodyBytes.nullable().optional(),
    retention_days: settingsShape.retention_days,
    resign_late: settingsShape.resign_late,
    ...eventTypeUpdateShape,
  })
  .superRefine((value, ctx) => {
    checkEventTypeUpdate(value, ctx);
    if (value.mode === 'forward' && value.url === '') {
      ctx.addIssue({ code: 'custom', path: ['url'], message: 'cannot be cleared when mode is forward' });
    }
  });
export type InboundEndpointUpdateIn = z.infer<typeof InboundEndpointUpdateIn>;

/**
 * Create response: `ingest_url`, `secret_token` and `signing_secret` are shown only here. The signing
 * fields are present only when signing is enabled; `url` is "" in cli mode; `expires_at` is null
 * unless ephemeral, as in the outbound create response.
 */
export const InboundEndpointCreateOut = z.object({
  id: Uuid,
  name: z.string(),
  url: z.string(),
  mode: InboundMode,
  ingest_url: z.string(),
  secret_token: z.string(),
  signing_key_id: z.string().optional(),
  signing_secret: z.string().optional(),
  key_hint: z.string().optional(),
  ephemeral: z.boolean(),
  expires_at: Timestamp.nullable(),
  created_at: Timestamp,
});
export type InboundEndpointCreateOut = z.infer<typeof InboundEndpointCreateOut>;

/**
 * What the endpoint list and record say about an endpoint's use: `connected_listeners`, the CLIs
 * connected to it (streams, across every server process); `messages_24h`, the messages received in
 * the last 24 hours (deleted ones included).
 */
const endpointActivityShape = {
  connected_listeners: z.number().int().nonnegative(),
  messages_24h: z.number().int().nonnegative(),
};

/**
 * GET /v1/inbound-endpoints/{id}: the endpoint's record with its non-secret verification settings
 * (docs/api.md, Inbound endpoints) (secrets are never returned). An unset optional setting is null;
 * `url` is "" in cli mode even when a URL is stored. `expires_at` only when ephemeral;
 * `latest_message_id` only in cli mode (null while the endpoint has no message).
 */
export const InboundEndpointOut = z.object({
  id: Uuid,
  name: z.string(),
  description: z.string(),
  url: z.string(),
  mode: InboundMode,
  active: z.boolean(),
  paused: z.boolean(),
  ...VerificationSettings.shape,
  ingest_response_code: z.number().int(),
  /** The endpoint's own body limit; null: the server's ingest limit. */
  max_body_bytes: z.number().int().nullable(),
  /** Days its messages are kept; null: the server's default. */
  retention_days: z.number().int().nullable(),
  idempotency_header_names: z.array(z.string()),
  signing_enabled: z.boolean(),
  signing_key_id: z.string().nullable(),
  key_hint: z.string().nullable(),
  /** Late deliveries go re-signed with the sender's secret (docs/api.md, Late deliveries re-signed). */
  resign_late: z.boolean(),
  ingest_url: z.string(),
  ephemeral: z.boolean(),
  expires_at: Timestamp.optional(),
  rejected_count: z.number().int().nonnegative(),
  /** Refused requests counted but not kept (over the per-endpoint rate of recording). */
  rejections_dropped_count: z.number().int().nonnegative(),
  latest_message_id: Uuid.nullable().optional(),
  /** The endpoint's event type rule; both null: provider detection. */
  event_type_source: EventTypeSource.nullable(),
  event_type_path: z.string().nullable(),
  ...endpointActivityShape,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type InboundEndpointOut = z.infer<typeof InboundEndpointOut>;

/**
 * GET /v1/inbound-endpoints row. No ingest URL: it embeds the secret token, so it is shown only by
 * the single GET. `expires_at` null unless ephemeral.
 */
export const InboundEndpointSummaryOut = z.object({
  id: Uuid,
  name: z.string(),
  description: z.string(),
  url: z.string(),
  mode: InboundMode,
  active: z.boolean(),
  paused: z.boolean(),
  ephemeral: z.boolean(),
  expires_at: Timestamp.nullable(),
  ...endpointActivityShape,
  created_at: Timestamp,
});
export type InboundEndpointSummaryOut = z.infer<typeof InboundEndpointSummaryOut>;

/** PATCH /v1/inbound-endpoints/{id} */
export const InboundEndpointUpdateOut = z.object({ id: Uuid, updated: z.literal(true) });
export type InboundEndpointUpdateOut = z.infer<typeof InboundEndpointUpdateOut>;

/** The same five statuses as outbound messages (docs/api.md, Statuses). */
export const InboundMessageStatus = MessageStatus;
export type InboundMessageStatus = MessageStatus;

/** The class of a message's latest answer, as the endpoint message list filters it. */
export const AnswerClass = z.enum(ANSWER_CLASSES, { message: `must be one of ${ANSWER_CLASSES.join(', ')}` });
export type AnswerClass = z.infer<typeof AnswerClass>;

/**
 * One listener's latest report of the local app's answer to a message (a later report of the same
 * listener replaces it). `status` null when no HTTP answer came (then `error` says why).
 */
export const InboundAnswerSummaryOut = z.object({
  listener: z.string(),
  status: z.number().int().nullable(),
  latency_ms: z.number().int().nonnegative(),
  error: z.string().nullable(),
  response_body_truncated: z.boolean(),
  /** The listener forwarded the message re-signed by the server (its report said so). */
  resigned: z.boolean(),
  answered_at: Timestamp,
});
export type InboundAnswerSummaryOut = z.infer<typeof InboundAnswerSummaryOut>;

/** An answer with what the app sent back: header lines in order, and the body as base64 (null when none was captured). */
export const InboundAnswerOut = InboundAnswerSummaryOut.extend({
  response_headers: z.array(z.tuple([z.string(), z.string()])),
  response_body: z.string().nullable(),
});
export type InboundAnswerOut = z.infer<typeof InboundAnswerOut>;

/**
 * The provider a message's header lines name (`detectProvider`: GitHub's `X-GitHub-Event`, Stripe's
 * `Stripe-Signature`, …), read from the headers as received; null when none does.
 */
export const MessageProvider = SampleProviderName.nullable();

/**
 * What a message says of being an edited copy (POST /v1/inbound-messages/{id}/replay with edits):
 * `replay_of`, the message it copies (null for a message that arrived); `edited`, whether it is one.
 */
const editedCopyShape = {
  replay_of: Uuid.nullable(),
  edited: z.boolean(),
};

/**
 * GET /v1/inbound-messages/{id}. As in the outbound log record, absent-until-it-happens times
 * (`delivered_at`, `next_attempt_at`) are omitted and results not known yet are null. The soft-delete
 * fields appear only on deleted rows; of the two principals one is null.
 */
export const InboundMessageOut = z.object({
  id: Uuid,
  /** The same as `id`, under the name the logs, listen and batch answers give it. */
  message_id: Uuid,
  project_id: z.string(),
  inbound_endpoint_id: Uuid,
  status: InboundMessageStatus,
  attempt_count: z.number().int().nonnegative(),
  replay_count: z.number().int().nonnegative(),
  content_type: z.string(),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  method: z.string(),
  path: z.string(),
  query: z.string(),
  idempotency_key: z.string().nullable(),
  event_type: z.string().nullable(),
  provider: MessageProvider,
  /** The verification checks that passed at ingest (`static_token`, `hmac`, `ip_allowlist`); [] when none is configured. */
  verified: z.array(z.string()),
  ...editedCopyShape,
  /** An edited copy: whether the server signed it (`resign`); null for every other message. */
  signed: z.boolean().nullable(),
  response_status: z.number().int().nullable(),
  response_latency_ms: z.number().int().nonnegative().nullable(),
  last_error: z.string().nullable(),
  queue_wait_ms: z.number().int().nonnegative().nullable(),
  total_delivery_ms: z.number().int().nonnegative().nullable(),
  received_at: Timestamp,
  updated_at: Timestamp,
  delivered_at: Timestamp.optional(),
  next_attempt_at: Timestamp.optional(),
  failed_at: Timestamp.nullable(),
  deleted_at: Timestamp.optional(),
  deleted_by_api_key_id: z.string().nullable().optional(),
  deleted_by_user_id: z.string().nullable().optional(),
  // The request as received, and its payload as in a CLI message (absent once deleted).
  headers: z.record(z.string(), z.string()),
  raw_headers: z.array(z.tuple([z.string(), z.string()])),
  body: z.unknown().optional(),
  body_encoding: z.literal('base64').optional(),
  body_error: z.literal('payload_unavailable').optional(),
  /** The CLI listeners' answers, oldest listener first. */
  answers: z.array(InboundAnswerOut),
});
export type InboundMessageOut = z.infer<typeof InboundMessageOut>;

/** One row of GET /v1/inbound-endpoints/{id}/messages: the message without its request, answers without their content. */
export const InboundEndpointMessageOut = z.object({
  id: Uuid,
  /** The same as `id`, under the name the logs, listen and batch answers give it. */
  message_id: Uuid,
  inbound_endpoint_id: Uuid,
  status: InboundMessageStatus,
  method: z.string(),
  path: z.string(),
  query: z.string(),
  content_type: z.string(),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  event_type: z.string().nullable(),
  provider: MessageProvider,
  verified: z.array(z.string()),
  replay_count: z.number().int().nonnegative(),
  ...editedCopyShape,
  received_at: Timestamp,
  response_status: z.number().int().nullable(),
  response_latency_ms: z.number().int().nonnegative().nullable(),
  answers: z.array(InboundAnswerSummaryOut),
});
export type InboundEndpointMessageOut = z.infer<typeof InboundEndpointMessageOut>;

/**
 * GET /v1/inbound-endpoints/{id}/messages: newest first. `event_type` exact or a glob (`*`);
 * `answer` the class of the message's latest answer (`none`: no HTTP answer yet);
 * `received_after` inclusive, `received_before` exclusive; `q` a text that a body or a header
 * value holds, searched within a bounded window (MESSAGE_SEARCH).
 */
export const InboundEndpointMessagesQuery = z.strictObject({
  q: z.string().min(1, 'must not be empty').max(MESSAGE_SEARCH.maxTextChars, `must be at most ${MESSAGE_SEARCH.maxTextChars} characters`).optional(),
  event_type: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
  answer: AnswerClass.optional(),
  received_after: TimestampIn.optional(),
  received_before: TimestampIn.optional(),
  limit: limitParam(200, 50),
  cursor: Cursor.optional(),
});
export type InboundEndpointMessagesQuery = z.infer<typeof InboundEndpointMessagesQuery>;

/**
 * Why a late message goes with the sender's signature: `no_secret`, the endpoint holds no secret
 * of the format it is signed in; `disabled`, the endpoint's `resign_late` is false; `unverified`, its
 * signature was not checked at ingest (the HMAC check was off then), so the server does not vouch
 * for it with a signature of its own.
 */
export const RESIGN_SKIPPED = ['no_secret', 'disabled', 'unverified'] as const;
export type ResignSkipped = (typeof RESIGN_SKIPPED)[number];

/** A header line as received: `[name, value]`, in order, repeats kept. */
export const RawHeader = z.tuple([z.string(), z.string()]);
export type RawHeader = z.infer<typeof RawHeader>;

/**
 * A message as the CLI gets it from listen and the stream (docs/api.md, Listen and stream). `body` is the
 * JSON value for a JSON payload, otherwise a base64 string with `body_encoding: 'base64'` (always so
 * in stream frames and with `?body_encoding=base64`). `body_error` replaces both when storage could
 * not be read; a payload gone on purpose simply has no `body`. A message above INLINE_BODY_MAX_BYTES
 * has none of the three but `body_url`, the path (under the API's base URL) of its body's download.
 */
export const CliMessageOut = z.object({
  message_id: Uuid,
  content_type: z.string(),
  headers: z.record(z.string(), z.string()),
  raw_headers: z.array(RawHeader),
  size_bytes: z.number().int().nonnegative(),
  payload_sha256: z.string(),
  received_at: Timestamp,
  method: z.string(),
  path: z.string(),
  query: z.string(),
  /** Detected at ingest (provider headers or body, or the endpoint's own rule); null when none. */
  event_type: z.string().nullable(),
  /**
   * The sender's signature covers a timestamp older than the server's re-signing threshold when the
   * message left (docs/api.md, Late deliveries re-signed): `signed_at` is that timestamp, and either
   * `resigned` (the timestamp and signature headers in `headers` and `raw_headers` are the server's,
   * made now with the endpoint's secret) or `resign_skipped` (why they are the sender's still).
   * Absent on a message that is not late.
   */
  signed_at: Timestamp.optional(),
  resigned: z.literal(true).optional(),
  resign_skipped: z.enum(RESIGN_SKIPPED).optional(),
  /**
   * An edited copy (POST /v1/inbound-messages/{id}/replay with edits): the message it copies, and
   * whether the server signed it (without, the original's signature headers were dropped). Absent
   * on every other message.
   */
  replay_of: Uuid.optional(),
  edited: z.literal(true).optional(),
  signed: z.boolean().optional(),
  body: JsonValue.optional(),
  body_encoding: z.literal('base64').optional(),
  body_error: z.literal('payload_unavailable').optional(),
  body_url: z.string().optional(),
});
export type CliMessageOut = z.infer<typeof CliMessageOut>;

/**
 * The filters of listen and the stream: `events`, comma-separated globs of event types (a message
 * without an event type never matches), and `path`, one glob of the message's sub-path (`*` matches
 * any run of characters, `/` included); both case-sensitive, both must match when both are given.
 */
const filterShape = {
  events: z
    .string({ message: 'must be a comma-separated list of event type globs' })
    .max(2000, 'must be at most 2000 characters')
    .refine((value) => value.split(',').some((glob) => glob.trim() !== ''), 'must name at least one event type glob')
    .optional(),
  path: z.string({ message: 'must be a path glob' }).min(1, 'must not be empty').max(2048, 'must be at most 2048 characters').optional(),
};

/** A listener's server-side filters (listen page and stream `events` / `path`), as the CLI sends them. */
export const ListenFilter = z.strictObject(filterShape);
export type ListenFilter = z.infer<typeof ListenFilter>;

/** GET /v1/inbound-endpoints/{id}/listen: at most LISTEN_PAGE_SIZE messages a page, oldest first. */
export const ListenQuery = z.strictObject({
  after: Uuid.optional(),
  body_encoding: z.enum(['base64'], { message: 'must be base64' }).optional(),
  ...filterShape,
});
export type ListenQuery = z.infer<typeof ListenQuery>;

/**
 * meta of a listen page: `next_cursor`, the last message of the page (null when it is empty);
 * `cursor`, the last message the page considered, sent or skipped by the filters (null when none):
 * the `after` of the next call; `has_more`, whether the page stopped at a limit (its count, its body
 * bytes or the filters' scan) rather than at the end.
 */
export const ListenMeta = z.object({
  request_id: z.string(),
  next_cursor: Uuid.nullable(),
  cursor: Uuid.nullable(),
  /** More messages may wait after `cursor`: ask again at once (absent from servers before it existed). */
  has_more: z.boolean().optional(),
});
export type ListenMeta = z.infer<typeof ListenMeta>;

/** GET /v1/inbound-endpoints/{id}/stream (WebSocket upgrade; the API key travels in a header). */
export const StreamQuery = z.strictObject({
  after: Uuid.optional(),
  ...filterShape,
});
export type StreamQuery = z.infer<typeof StreamQuery>;

/** The largest value of the database's `integer` columns (latencies are stored in them). */
const MAX_INT4 = 2_147_483_647;

/**
 * The local app's answer to one message: `status` null when no HTTP answer came (then `error` says
 * why). A long `error` is cut rather than refused, so that a report is never lost to its length, and
 * a NUL in it (PostgreSQL text cannot hold one) becomes U+FFFD. A latency must fit the integer
 * column (24 days): beyond it the report is refused here, not by the database as a 500.
 */
export const resultShape = {
  message_id: Uuid,
  status: z.number({ message: 'must be an integer or null' }).int('must be an integer').min(100, 'must be at least 100').max(599, 'must be at most 599').nullable(),
  latency_ms: z.number({ message: 'must be an integer' }).int('must be an integer').min(0, 'must be at least 0').max(MAX_INT4, `must be at most ${MAX_INT4}`),
  error: z
    .string({ message: 'must be a string or null' })
    .transform((value) => value.slice(0, 2000).replaceAll('\u0000', '\ufffd'))
    .nullable(),
};

/** Bounds of the app's answer in a result report. */
export const MAX_ANSWER_HEADERS = 100;
export const MAX_ANSWER_HEADER_BYTES = 16 * 1024;
export const MAX_ANSWER_BODY_BYTES = 64 * 1024;
/** The default `listener` of a report, and the name the CLI gives its first listener. */
export const DEFAULT_LISTENER = 'default';

/**
 * Text PostgreSQL can store as JSON: NUL and lone UTF-16 surrogates (which a JSON document can carry
 * as escapes but jsonb refuses) become U+FFFD, as NUL does in `error`.
 */
const storable = (value: string) => value.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/**
 * The optional part of a report that carries the app's answer (old CLIs send none of it):
 * `listener` names the CLI listener (one answer is kept per listener and message), the response's
 * header lines in order (at most 100, 16 KiB of names and values in all), the first bytes of its
 * body in base64 (at most 64 KiB decoded), and whether the app sent more than that.
 */
export const answerShape = {
  listener: z
    .string({ message: 'must be a string' })
    .min(1, 'must not be empty')
    .max(100, 'must be at most 100 characters')
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters')
    .transform(storable)
    .optional(),
  response_headers: z
    .array(z.tuple([z.string().transform(storable), z.string().transform(storable)]), { message: 'must be an array of [name, value] pairs' })
    .max(MAX_ANSWER_HEADERS, `must hold at most ${MAX_ANSWER_HEADERS} header lines`)
    .refine(
      (lines) => lines.reduce((n, [name, value]) => n + Buffer.byteLength(name) + Buffer.byteLength(value), 0) <= MAX_ANSWER_HEADER_BYTES,
      `must hold at most ${MAX_ANSWER_HEADER_BYTES} bytes of names and values`,
    )
    .optional(),
  response_body: z
    .string({ message: 'must be a base64 string' })
    .max(Math.ceil(MAX_ANSWER_BODY_BYTES / 3) * 4, `must be at most ${MAX_ANSWER_BODY_BYTES} bytes once decoded`)
    .regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, 'must be a base64 string')
    .refine((text) => (text.length / 4) * 3 - (text.match(/=*$/)?.[0].length ?? 0) <= MAX_ANSWER_BODY_BYTES, `must be at most ${MAX_ANSWER_BODY_BYTES} bytes once decoded`)
    .optional(),
  response_body_truncated: z.boolean({ message: 'must be true or false' }).optional(),
  /** The listener forwarded the message as the server re-signed it (`resigned` of the CLI message). */
  resigned: z.boolean({ message: 'must be true or false' }).optional(),
};

/**
 * The reporter's id of one report (one answer of the app to one delivery): a report sent again under
 * the same id, because its acknowledgement was lost, is recorded once. On POST it may come as the
 * `Idempotency-Key` header instead (which servers without result ids ignore).
 */
export const resultIdShape = { result_id: Uuid.optional() };

/**
 * POST /v1/inbound-messages/{id}/result: how a polling CLI reports the local app's answer (the
 * stream's `result` frame otherwise).
 */
export const InboundResultIn = z.strictObject({ ...resultShape, ...answerShape, ...resultIdShape });
export type InboundResultIn = z.infer<typeof InboundResultIn>;

/** The headers of POST /v1/inbound-messages/{id}/result: `Idempotency-Key`, the report's `result_id`. */
export const InboundResultHeaders = z.looseObject({
  'idempotency-key': Uuid.optional(),
});
export type InboundResultHeaders = z.infer<typeof InboundResultHeaders>;

/**
 * POST /v1/inbound-messages/{id}/replay: queued again, `replay_count` already incremented. An
 * edited replay answers its copy (201): `message_id` the new message, `replay_of` the one it
 * copies, `edited` and `signed`, which only such an answer has.
 */
export const InboundReplayOut = z.object({
  message_id: Uuid,
  replay_count: z.number().int().nonnegative(),
  status: InboundMessageStatus,
  replay_of: Uuid.optional(),
  edited: z.literal(true).optional(),
  signed: z.boolean().optional(),
});
export type InboundReplayOut = z.infer<typeof InboundReplayOut>;

/** One row of GET /v1/inbound-logs; `endpoint` is the forwarding URL ("" in cli mode). */
export const InboundLogRecordOut = z.object({
  message_id: Uuid,
  inbound_endpoint_id: Uuid,
  endpoint: z.string(),
  status: InboundMessageStatus,
  attempt_count: z.number().int().nonnegative(),
  received_at: Timestamp,
  delivered_at: Timestamp.optional(),
  response_status: z.number().int().nullable(),
  response_latency_ms: z.number().int().nonnegative().nullable(),
  last_error: z.string().nullable(),
  total_delivery_ms: z.number().int().nonnegative().nullable(),
  deleted_at: Timestamp.optional(),
});
export type InboundLogRecordOut = z.infer<typeof InboundLogRecordOut>;

/**
 * GET /v1/inbound-logs: `received_after` inclusive, `received_before` exclusive, so adjacent
 * windows never share a message.
 */
export const InboundLogsQuery = z.strictObject({
  status: InboundMessageStatus.optional(),
  inbound_endpoint_id: Uuid.optional(),
  received_after: TimestampIn.optional(),
  received_before: TimestampIn.optional(),
  limit: limitParam(500, 50),
  cursor: Cursor.optional(),
});
export type InboundLogsQuery = z.infer<typeof InboundLogsQuery>;

/** DELETE /v1/inbound-messages/{id}: the same answer as an outbound message delete. */
export const InboundMessageDeleteOut = MessageDeleteOut;
export type InboundMessageDeleteOut = MessageDeleteOut;

/** POST /v1/inbound-messages/delete-batch: `{ message_ids }`, at most 100. */
export const InboundMessageDeleteBatchIn = MessageDeleteBatchIn;
export type InboundMessageDeleteBatchIn = MessageDeleteBatchIn;

export const InboundMessageDeleteBatchOut = batchDeleteResult('message_id');
export type InboundMessageDeleteBatchOut = z.infer<typeof InboundMessageDeleteBatchOut>;
