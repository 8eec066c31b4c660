import type { InboundAnswerOut, InboundLogRecordOut, InboundMessageOut } from '@hookrelay/shared';
import { detectProvider } from '@hookrelay/shared';
import type { InboundLogRow, InboundMessageRow } from '../db/inbound-messages.js';
import { joinHeaders, type RenderedBody } from '../lib/body.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An inbound message as GET /v1/inbound-messages/{id} and a result report's answer show it. */
export function toInboundMessageOut(row: InboundMessageRow, body: RenderedBody, answers: InboundAnswerOut[]): InboundMessageOut {
  return {
    id: row.id,
    message_id: row.id,
    project_id: row.project_id,
    inbound_endpoint_id: row.inbound_endpoint_id,
    status: row.status,
    attempt_count: row.attempt_count,
    replay_count: row.replay_count,
    content_type: row.content_type,
    size_bytes: row.size_bytes,
    payload_sha256: row.payload_sha256,
    method: row.method,
    path: row.path,
    query: row.query,
    idempotency_key: row.idempotency_key,
    event_type: row.event_type,
    provider: detectProvider(row.raw_headers),
    verified: row.verified,
    replay_of: row.replay_of,
    edited: row.replay_of !== null,
    signed: row.replay_signed,
    response_status: row.response_status,
    response_latency_ms: row.response_latency_ms,
    last_error: row.last_error,
    queue_wait_ms: row.queue_wait_ms,
    total_delivery_ms: row.total_delivery_ms,
    received_at: row.received_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    ...(row.delivered_at ? { delivered_at: row.delivered_at.toISOString() } : {}),
    ...(row.status === 'pending_retry' && row.next_attempt_at ? { next_attempt_at: row.next_attempt_at.toISOString() } : {}),
    failed_at: iso(row.failed_at),
    ...(row.deleted_at
      ? { deleted_at: row.deleted_at.toISOString(), deleted_by_api_key_id: row.deleted_by_api_key_id, deleted_by_user_id: row.deleted_by_user_id }
      : {}),
    headers: joinHeaders(row.raw_headers),
    raw_headers: row.raw_headers,
    ...body,
    answers,
  };
}

/** The log record of an inbound message, as GET /v1/inbound-logs lists it. */
export function toInboundLogRecordOut(row: InboundLogRow): InboundLogRecordOut {
  return {
    message_id: row.id,
    inbound_endpoint_id: row.inbound_endpoint_id,
    endpoint: row.endpoint_url,
    status: row.status,
    attempt_count: row.attempt_count,
    received_at: row.received_at.toISOString(),
    ...(row.delivered_at ? { delivered_at: row.delivered_at.toISOString() } : {}),
    response_status: row.response_status,
    response_latency_ms: row.response_latency_ms,
    last_error: row.last_error,
    total_delivery_ms: row.total_delivery_ms,
    ...(row.deleted_at ? { deleted_at: row.deleted_at.toISOString() } : {}),
  };
}
