import type { InboundAnswerSummaryOut, InboundEndpointMessageOut } from '@hookrelay/shared';
import { detectProvider } from '@hookrelay/shared';
import type { EndpointMessageRow } from '../db/inbound-messages.js';

/**
 * A message as an endpoint's message list shows it, and as a watch socket announces it: without its
 * header lines, but with the provider they name.
 */
export function toInboundEndpointMessageOut(row: EndpointMessageRow, answers: InboundAnswerSummaryOut[]): InboundEndpointMessageOut {
  return {
    id: row.id,
    message_id: row.id,
    inbound_endpoint_id: row.inbound_endpoint_id,
    status: row.status,
    method: row.method,
    path: row.path,
    query: row.query,
    content_type: row.content_type,
    size_bytes: row.size_bytes,
    payload_sha256: row.payload_sha256,
    event_type: row.event_type,
    provider: detectProvider(row.raw_headers),
    verified: row.verified,
    replay_count: row.replay_count,
    replay_of: row.replay_of,
    edited: row.replay_of !== null,
    received_at: row.received_at.toISOString(),
    response_status: row.response_status,
    response_latency_ms: row.response_latency_ms,
    answers,
  };
}
