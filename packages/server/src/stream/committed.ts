import type { IngestItem } from '../ingest/batcher.js';
import type { CommittedInboundMessage } from './cli-message.js';

/**
 * A message this process's ingestion is committing, as its streams send it (`frame`: rendered
 * while the commit was in flight).
 */
export function committedRow(id: string, item: IngestItem, frame?: string): CommittedInboundMessage {
  return {
    id,
    method: item.method,
    path: item.path,
    query: item.query,
    content_type: item.contentType,
    size_bytes: item.streamed?.size ?? item.body.length,
    payload_sha256: item.sha256,
    raw_headers: item.rawHeaders,
    received_at: item.receivedAt,
    event_type: item.eventType,
    trace_context: item.traceContext,
    verified: [...item.verified],
    replay_of: item.copyOf?.messageId ?? null,
    replay_signed: item.copyOf?.signed ?? null,
    payload: item.body,
    signing: item.signing ?? null,
    frame,
  };
}
