import type {
  EndpointSummaryOut,
  InboundAnswerOut,
  InboundEndpointMessageOut,
  InboundEndpointSummaryOut,
  InboundMessageOut,
  RejectionOut,
} from '@hookrelay/shared';
import { describeFailure, failureToJson, type FailureJson } from '../errors.js';

/**
 * What the MCP tools answer: compact records that keep the ids a next call takes (a message's
 * `id`, its endpoint's `endpoint_id`, `next_cursor`) and leave out what an agent rarely needs, and
 * bodies as text when they are text, cut at a bound.
 */

export type BodyAs = 'auto' | 'text' | 'base64';

/** A body as a tool returns it: text or base64 of its first `maxBytes` bytes, and whether it was cut. */
export interface ToolBody {
  body: string;
  body_encoding: 'text' | 'base64';
  body_truncated: boolean;
}

/**
 * `bytes` cut at `maxBytes`, as text or base64. `auto` gives text when the bytes read as UTF-8 (a
 * character cut in two at the bound does not count against it: it is left out), else base64;
 * `text` always gives text, with U+FFFD for bytes that are not UTF-8.
 */
export function toolBody(bytes: Uint8Array, maxBytes: number, as: BodyAs): ToolBody {
  const cut = bytes.length > maxBytes ? bytes.subarray(0, maxBytes) : bytes;
  const truncated = cut.length < bytes.length;
  if (as !== 'base64') {
    try {
      // With `stream`, an incomplete sequence at the end is held back instead of refused.
      const text = new TextDecoder('utf-8', { fatal: as === 'auto', ignoreBOM: true }).decode(cut, { stream: truncated });
      return { body: text, body_encoding: 'text', body_truncated: truncated };
    } catch {
      // Not UTF-8: the exact bytes below.
    }
  }
  return { body: Buffer.from(cut).toString('base64'), body_encoding: 'base64', body_truncated: truncated };
}

/** Where a message's body is not given: deleted, unreadable in storage, or above what was fetched. */
export type BodyOmitted = 'deleted' | 'payload_unavailable' | 'too_large';

/** A record's body (`body_encoding: 'base64'` asked for) as the tool gives it, or why there is none. */
export function messageBody(message: Pick<InboundMessageOut, 'body' | 'body_encoding' | 'body_error' | 'deleted_at'>, maxBytes: number, as: BodyAs): ToolBody | { body: null; body_omitted: BodyOmitted } {
  if (message.body_error !== undefined) return { body: null, body_omitted: 'payload_unavailable' };
  if (message.body !== undefined) {
    const bytes =
      typeof message.body === 'string' && message.body_encoding === 'base64'
        ? Buffer.from(message.body, 'base64')
        : Buffer.from(typeof message.body === 'string' ? message.body : JSON.stringify(message.body), 'utf8');
    return toolBody(bytes, maxBytes, as);
  }
  return { body: null, body_omitted: message.deleted_at === undefined ? 'too_large' : 'deleted' };
}

function answer(row: InboundAnswerOut, maxBytes: number, as: BodyAs) {
  const body = row.response_body === null ? null : toolBody(Buffer.from(row.response_body, 'base64'), maxBytes, as);
  return {
    listener: row.listener,
    status: row.status,
    latency_ms: row.latency_ms,
    error: row.error,
    resigned: row.resigned,
    answered_at: row.answered_at,
    response_headers: row.response_headers,
    response_body: body?.body ?? null,
    ...(body === null ? {} : { response_body_encoding: body.body_encoding }),
    // Cut by the listener when it reported, or here.
    response_body_truncated: row.response_body_truncated || body?.body_truncated === true,
  };
}

/** get_message and wait_for_message: the message, its request as received, and the app's answers. */
export function messageRecord(message: InboundMessageOut, maxBytes: number, as: BodyAs) {
  return {
    id: message.id,
    endpoint_id: message.inbound_endpoint_id,
    status: message.status,
    event_type: message.event_type,
    provider: message.provider,
    verified: message.verified,
    method: message.method,
    path: message.path,
    query: message.query,
    received_at: message.received_at,
    replay_of: message.replay_of,
    edited: message.edited,
    signed: message.signed,
    replay_count: message.replay_count,
    content_type: message.content_type,
    size_bytes: message.size_bytes,
    headers: message.raw_headers,
    ...messageBody(message, maxBytes, as),
    answers: message.answers.map((row) => answer(row, maxBytes, as)),
  };
}

/** A row of list_messages. */
export function messageRow(row: InboundEndpointMessageOut) {
  return {
    id: row.id,
    event_type: row.event_type,
    provider: row.provider,
    method: row.method,
    path: row.path,
    status: row.status,
    received_at: row.received_at,
    size_bytes: row.size_bytes,
    response_status: row.response_status,
    replay_of: row.replay_of,
    edited: row.edited,
  };
}

export function inboundEndpointRow(row: InboundEndpointSummaryOut) {
  return {
    id: row.id,
    name: row.name,
    mode: row.mode,
    paused: row.paused,
    connected_listeners: row.connected_listeners,
    messages_24h: row.messages_24h,
    created_at: row.created_at,
  };
}

export function outboundEndpointRow(row: EndpointSummaryOut) {
  return { id: row.id, url: row.url, description: row.description, paused: row.paused, created_at: row.created_at };
}

export function rejectionRow(row: RejectionOut) {
  return {
    id: row.id,
    received_at: row.received_at,
    reason: row.reason,
    detail: row.detail,
    status: row.status,
    method: row.method,
    path: row.path,
    source_address: row.source_address,
    size_bytes: row.size_bytes,
  };
}

/** A tool's answer: one text block of compact JSON (and an error flag for a failure). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  isError?: boolean;
}

export function toolSuccess(value: unknown): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }] };
}

/**
 * A failure as the CLI's `--json` reports it: the API's code, message, status and request id
 * (NOT_FOUND, INVALID_REQUEST with its details, …), or the CLI's own code (WAIT_TIMEOUT,
 * NETWORK_ERROR, INVALID_ARGUMENTS).
 */
export function toolFailure(error: unknown): ToolResult {
  const json: FailureJson = failureToJson(describeFailure(error));
  return { content: [{ type: 'text', text: JSON.stringify(json) }], isError: true };
}
