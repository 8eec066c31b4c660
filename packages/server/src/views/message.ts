import type { LogRecordOut, MessageCreateOut, MessageOut } from '@hookrelay/shared';
import type { DeliveryStatus } from '../db/deliveries.js';
import type { OutboundMessageWithUrl } from '../db/messages.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The log record of an outbound message, as GET /v1/logs lists it (docs/api.md, Logs and deletes). */
export function toLogRecordOut(row: OutboundMessageWithUrl): LogRecordOut {
  return {
    message_id: row.id,
    endpoint: row.endpoint_url,
    status: row.status,
    attempt_count: row.attempt_count,
    created_at: row.created_at.toISOString(),
    ...(row.delivered_at ? { delivered_at: row.delivered_at.toISOString() } : {}),
    first_attempt_at: iso(row.first_attempt_at),
    ...(row.status === 'pending_retry' && row.next_attempt_at ? { next_attempt_at: row.next_attempt_at.toISOString() } : {}),
    response_status: row.response_status,
    response_latency_ms: row.response_latency_ms,
    processing_ms: row.processing_ms,
    total_delivery_ms: row.total_delivery_ms,
    queue_wait_ms: row.queue_wait_ms,
    last_error: row.last_error,
    ...(row.deleted_at ? { deleted_at: row.deleted_at.toISOString() } : {}),
  };
}

/** A message's stored payload in the shape it was submitted in; nothing once deleted. */
export type RenderedPayload = { payload: unknown } | { body: string } | { body_error: 'payload_unavailable' } | Record<string, never>;

/** An outbound message as GET /v1/messages/{id} shows it: its log record, its settings and its payload. */
export function toMessageOut(row: OutboundMessageWithUrl, payload: RenderedPayload): MessageOut {
  return {
    ...toLogRecordOut(row),
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    idempotency_key: row.idempotency_key,
    content_type: row.content_type,
    size_bytes: row.size_bytes,
    payload_sha256: row.payload_sha256,
    updated_at: row.updated_at.toISOString(),
    failed_at: iso(row.failed_at),
    ...(row.deleted_at ? { deleted_by_api_key_id: row.deleted_by_api_key_id, deleted_by_user_id: row.deleted_by_user_id } : {}),
    ...(payload as object),
  };
}

/** The answer of POST /v1/messages: the message stored, or the one an idempotency key's repeat names. */
export function toMessageCreateOut(message: { id: string; status: DeliveryStatus; created_at: Date }): MessageCreateOut {
  return { message_id: message.id, status: message.status, created_at: message.created_at.toISOString() };
}
