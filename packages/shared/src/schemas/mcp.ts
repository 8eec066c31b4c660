import { z } from 'zod';
import { MESSAGE_SEARCH } from '../constants.js';
import { Cursor, intRange, JsonValue, TimestampIn, Uuid } from './common.js';
import { EventCreateIn } from './events.js';
import { AnswerClass } from './inbound.js';
import { checkPayloadOrBody } from './messages.js';
import { InboundReplayIn } from './replay.js';
import { InboundSampleIn } from './samples.js';

/**
 * The inputs of the tools `hookrelay mcp` offers a coding agent (docs/cli.md, mcp). Each is an
 * object schema; the MCP server lists it as the tool's JSON Schema and parses every call with it,
 * so the descriptions below are what an agent reads about each field.
 */

/** The bounds of a body (and of an answer's body) that a tool returns. */
export const MCP_BODY = {
  /** Bytes of a body returned when the call names no bound. */
  defaultMaxBytes: 16 * 1024,
  /** The largest bound a call may ask for. */
  maxBytes: 256 * 1024,
} as const;

/** The longest a wait_for_message call may wait. */
export const MCP_WAIT_MAX_SECONDS = 300;

const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/iu;

const limit = (defaultValue: number) => intRange(1, 200).optional().describe(`Rows to return, 1-200 (default ${defaultValue}).`);
const cursor = Cursor.optional().describe('next_cursor of the previous call, for the page after it.');
const endpointId = Uuid.describe('Id of the inbound endpoint (a UUID, from list_endpoints).');
const messageId = Uuid.describe('Id of the inbound message (a UUID, from list_messages or wait_for_message).');

/** A time as an RFC 3339 timestamp or a duration ago (`10m`, `2h`, `1d`). */
const sinceTime = z
  .union([TimestampIn, z.string().regex(DURATION)], { message: 'must be an RFC 3339 date-time or a duration such as 10m, 2h or 1d' })
  .describe('Only what was received at or after this time: an RFC 3339 date-time, or a duration ago such as 10m, 2h or 1d.');

export const McpListEndpointsIn = z.strictObject({
  kind: z
    .enum(['inbound', 'outbound'], { message: 'must be inbound or outbound' })
    .optional()
    .describe('inbound (default): endpoints that receive webhooks from providers; outbound: the URLs hookrelay delivers your events to.'),
  limit: limit(50),
  cursor,
});
export type McpListEndpointsIn = z.infer<typeof McpListEndpointsIn>;

export const McpListMessagesIn = z.strictObject({
  endpoint_id: endpointId,
  event: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional().describe('Only messages whose event type matches this glob (push, invoice.*).'),
  text: z
    .string()
    .min(1, 'must not be empty')
    .max(MESSAGE_SEARCH.maxTextChars, `must be at most ${MESSAGE_SEARCH.maxTextChars} characters`)
    .optional()
    .describe(
      `Only messages whose body or a header value holds this text (case-sensitive); searched within the last 24 hours unless since says otherwise, at most ${MESSAGE_SEARCH.maxWindowMs / 86_400_000} days back.`,
    ),
  since: sinceTime.optional(),
  answer: AnswerClass.optional().describe("Only messages whose app's latest answer is of this class (none: no answer yet)."),
  limit: limit(20),
  cursor,
});
export type McpListMessagesIn = z.infer<typeof McpListMessagesIn>;

const maxBodyBytes = intRange(0, MCP_BODY.maxBytes)
  .optional()
  .describe(`Bytes of the body (and of each answer's body) to return, 0-${MCP_BODY.maxBytes} (default ${MCP_BODY.defaultMaxBytes}); a longer one is cut there and marked truncated.`);
const bodyAs = z
  .enum(['auto', 'text', 'base64'], { message: 'must be auto, text or base64' })
  .optional()
  .describe('auto (default): the body as text when it is UTF-8, else base64; text: as text, invalid bytes replaced; base64: the exact bytes.');

export const McpGetMessageIn = z.strictObject({ message_id: messageId, max_body_bytes: maxBodyBytes, body_as: bodyAs });
export type McpGetMessageIn = z.infer<typeof McpGetMessageIn>;

export const McpListRejectionsIn = z.strictObject({ endpoint_id: endpointId, since: sinceTime.optional(), limit: limit(20), cursor });
export type McpListRejectionsIn = z.infer<typeof McpListRejectionsIn>;

/** The edits of POST /v1/inbound-messages/{id}/replay, and the message they copy. */
export const McpReplayMessageIn = InboundReplayIn.safeExtend({
  message_id: messageId,
  body: InboundReplayIn.shape.body.describe('A new body, whole, as text (not with set).'),
  set: InboundReplayIn.shape.set.describe('Edits of the JSON body, in order: [{ "path": "data.object.amount", "value": 5000 }] (array items by index; not with body).'),
  headers: InboundReplayIn.shape.headers.describe('Header edits: { "Name": "new value" } sets one, { "Name": null } removes it.'),
  resign: InboundReplayIn.shape.resign.describe("Have the server sign the edited copy with the endpoint's stored secret; without it the copy goes without the original's signature headers."),
});
export type McpReplayMessageIn = z.infer<typeof McpReplayMessageIn>;

/** POST /v1/inbound-endpoints/{id}/samples, at an endpoint, or at the running `hookrelay dev`'s. */
export const McpTriggerIn = InboundSampleIn.safeExtend({
  endpoint_id: Uuid.optional().describe("Id of the inbound endpoint; left out while hookrelay dev runs: dev's endpoint of the provider."),
  provider: InboundSampleIn.shape.provider.describe('The sender whose sample event is sent.'),
  event: InboundSampleIn.shape.event.describe('The event, such as push (github) or payment_intent.succeeded (stripe).'),
  set: InboundSampleIn.shape.set.describe('Edits of the sample body before it is signed: [{ "path": "data.object.amount", "value": 5000 }].'),
});
export type McpTriggerIn = z.infer<typeof McpTriggerIn>;

export const McpWaitForMessageIn = z.strictObject({
  endpoint_id: endpointId,
  event: z.string().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional().describe('Only a message whose event type matches this glob (push, invoice.*).'),
  path: z.string().min(1, 'must not be empty').max(1000, 'must be at most 1000 characters').optional().describe('Only a message whose sub-path after the ingest URL matches this glob (/github*).'),
  timeout_seconds: intRange(1, MCP_WAIT_MAX_SECONDS).optional().describe(`How long to wait, 1-${MCP_WAIT_MAX_SECONDS} seconds (default 30).`),
  max_body_bytes: maxBodyBytes,
  body_as: bodyAs,
});
export type McpWaitForMessageIn = z.infer<typeof McpWaitForMessageIn>;

/**
 * POST /v1/events, its fields and checks. The payload is checked as the API checks it, behind an
 * input of any value: that check is no JSON Schema, and the tool's listing shows the input's.
 */
export const McpSendEventIn = z
  .strictObject({
    ...EventCreateIn.shape,
    event_type: EventCreateIn.shape.event_type.describe('The event type, such as invoice.paid.'),
    payload: z.unknown().pipe(JsonValue).optional().describe('The event as a JSON value (or body, as text).'),
  })
  .superRefine(checkPayloadOrBody);
export type McpSendEventIn = z.infer<typeof McpSendEventIn>;

export const McpEndpointIn = z.strictObject({ endpoint_id: endpointId });
export type McpEndpointIn = z.infer<typeof McpEndpointIn>;
