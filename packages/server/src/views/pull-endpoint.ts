import type { PullEndpointOut } from '@hookrelay/shared';
import type { PullEndpointRow, PullEventCounts } from '../db/pull-endpoints.js';

/** `{receive_base}/pull/{id}`: the URL without the secret token (docs/api.md, Addresses). */
function pullIngestUrl(receiveBase: string, id: string): string {
  return `${receiveBase}/pull/${id}`;
}

/** A pull endpoint as its reads, lists and writes show it; GET of one adds its event counts. */
export function toPullEndpointOut(row: PullEndpointRow, receiveBase: string, counts?: PullEventCounts): PullEndpointOut {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    retention_days: row.retention_days,
    event_type_source: row.event_type_source,
    event_type_path: row.event_type_path,
    max_body_bytes: row.max_body_bytes,
    ingest_url: pullIngestUrl(receiveBase, row.id),
    // A deleted endpoint is never read back (404), so whatever is shown is active.
    active: true,
    paused: row.paused,
    ephemeral: row.ephemeral,
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
    rejections_dropped_count: row.rejections_dropped_count,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    ...(counts ? { event_counts: counts } : {}),
  };
}
