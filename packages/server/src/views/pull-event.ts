import type { PullEventDetailOut, PullEventOut } from '@hookrelay/shared';
import type { PullEventDetailRow, PullEventRow } from '../db/pull-events.js';
import { joinHeaders, type RenderedBody } from '../lib/body.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const msBetween = (from: Date | null, to: Date | null) => (from && to ? Math.max(0, to.getTime() - from.getTime()) : null);

/** A pull event as the events list shows it, with the times between its steps. */
export function toPullEventOut(row: PullEventRow): PullEventOut {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    status: row.status,
    event_type: row.event_type,
    content_type: row.content_type,
    size_bytes: row.size_bytes,
    payload_sha256: row.payload_sha256,
    received_at: row.received_at.toISOString(),
    fetched_at: iso(row.fetched_at),
    delivered_at: iso(row.delivered_at),
    ingest_processing_ms: row.ingest_processing_ms,
    time_to_first_fetch_ms: msBetween(row.received_at, row.fetched_at),
    fetch_to_ack_ms: msBetween(row.fetched_at, row.delivered_at),
    total_time_ms: msBetween(row.received_at, row.delivered_at),
  };
}

/** One pull event with its request and body, as GET …/events/{event_id} shows it. */
export function toPullEventDetailOut(row: PullEventDetailRow, body: RenderedBody): PullEventDetailOut {
  return {
    ...toPullEventOut(row),
    method: row.method,
    query: row.query,
    headers: joinHeaders(row.raw_headers),
    raw_headers: row.raw_headers,
    // renderBody's values come from JSON.parse or are base64 text: JSON values either way.
    ...(body as Pick<PullEventDetailOut, 'body' | 'body_encoding' | 'body_error'>),
    ...(row.deleted_at
      ? { deleted_at: row.deleted_at.toISOString(), deleted_by_api_key_id: row.deleted_by_api_key_id, deleted_by_user_id: row.deleted_by_user_id }
      : {}),
  };
}
