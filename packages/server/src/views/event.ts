import type { EventCreateOut, EventMessageOut, EventOut, EventSummaryOut } from '@hookrelay/shared';
import type { EventMessageRow, EventRow } from '../db/events.js';
import type { RenderedPayload } from './message.js';

/** The answer of POST /v1/events: the event stored, or the one an idempotency key's repeat names, and its messages. */
export function toEventCreateOut(
  event: Pick<EventRow, 'id' | 'event_type' | 'owner_id' | 'channels' | 'created_at'>,
  messages: readonly { id: string; endpoint_id: string }[],
): EventCreateOut {
  return {
    event_id: event.id,
    event_type: event.event_type,
    owner_id: event.owner_id,
    channels: event.channels,
    messages: messages.map((m) => ({ message_id: m.id, endpoint_id: m.endpoint_id })),
    created_at: event.created_at.toISOString(),
  };
}

/** An event as a row of GET /v1/events. */
export function toEventSummaryOut(row: EventRow): EventSummaryOut {
  return {
    event_id: row.id,
    event_type: row.event_type,
    owner_id: row.owner_id,
    channels: row.channels,
    content_type: row.content_type,
    size_bytes: row.size_bytes,
    payload_sha256: row.payload_sha256,
    idempotency_key: row.idempotency_key,
    message_count: row.message_count,
    created_at: row.created_at.toISOString(),
  };
}

/** A message of an event as GET /v1/events/{id} lists it. */
export function toEventMessageOut(row: EventMessageRow): EventMessageOut {
  return {
    message_id: row.id,
    endpoint_id: row.endpoint_id,
    status: row.status,
    attempt_count: row.attempt_count,
    response_status: row.response_status,
    last_error: row.last_error,
    ...(row.delivered_at ? { delivered_at: row.delivered_at.toISOString() } : {}),
    ...(row.deleted_at ? { deleted_at: row.deleted_at.toISOString() } : {}),
  };
}

/** GET /v1/events/{id}: the event, its payload as submitted and its messages. */
export function toEventOut(row: EventRow, payload: RenderedPayload, messages: readonly EventMessageRow[]): EventOut {
  return { ...toEventSummaryOut(row), ...(payload as object), messages: messages.map(toEventMessageOut) };
}
