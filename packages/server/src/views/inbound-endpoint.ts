import type { InboundEndpointOut, InboundEndpointSummaryOut } from '@hookrelay/shared';
import type { InboundEndpointActivity, InboundEndpointDetailRow, InboundEndpointSummaryRow } from '../db/inbound-endpoints.js';

/** `{receive_base}/in/{secret_token}`: the URL senders post to (docs/api.md, Addresses). */
export function inboundIngestUrl(receiveBase: string, secretToken: string): string {
  return `${receiveBase}/in/${secretToken}`;
}

/**
 * A cli endpoint may keep a URL for a later switch to forward, but shows none (docs/api.md, Inbound
 * endpoints).
 */
export function shownInboundUrl(row: Pick<InboundEndpointSummaryRow, 'mode' | 'url'>): string {
  return row.mode === 'cli' ? '' : row.url;
}

/**
 * An inbound endpoint as GET /v1/inbound-endpoints/{id} shows it; `ingestUrl` holds its decrypted
 * secret token (`inboundIngestUrl`).
 */
export function toInboundEndpointOut(row: InboundEndpointDetailRow, ingestUrl: string, activity: InboundEndpointActivity): InboundEndpointOut {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    url: shownInboundUrl(row),
    mode: row.mode,
    // Deleted and expired endpoints are never read back, so whatever is shown is active.
    active: true,
    paused: row.paused,
    verify_static_token: row.verify_static_token,
    static_token_header_name: row.static_token_header_name,
    static_token_query_param: row.static_token_query_param,
    verify_hmac: row.verify_hmac,
    hmac_scheme: row.hmac_scheme,
    hmac_header_name: row.hmac_header_name,
    timestamp_header_name: row.timestamp_header_name,
    timestamp_tolerance_seconds: row.timestamp_tolerance_seconds,
    verify_ip_allowlist: row.verify_ip_allowlist,
    allowed_cidrs: row.allowed_cidrs,
    ingest_response_code: row.ingest_response_code,
    max_body_bytes: row.max_body_bytes,
    retention_days: row.retention_days,
    idempotency_header_names: row.idempotency_header_names,
    signing_enabled: row.signing_enabled,
    signing_key_id: row.signing_key_id,
    key_hint: row.key_hint,
    resign_late: row.resign_late,
    ingest_url: ingestUrl,
    ephemeral: row.ephemeral,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
    rejected_count: row.rejected_count,
    rejections_dropped_count: row.rejections_dropped_count,
    ...(row.mode === 'cli' ? { latest_message_id: row.last_message_id } : {}),
    event_type_source: row.event_type_source,
    event_type_path: row.event_type_path,
    connected_listeners: activity.connected_listeners,
    messages_24h: activity.messages_24h,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** An inbound endpoint as a row of GET /v1/inbound-endpoints (no ingest URL: it holds the secret token). */
export function toInboundEndpointSummaryOut(row: InboundEndpointSummaryRow, activity: InboundEndpointActivity): InboundEndpointSummaryOut {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    url: shownInboundUrl(row),
    mode: row.mode,
    active: true,
    paused: row.paused,
    ephemeral: row.ephemeral,
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
    connected_listeners: activity.connected_listeners,
    messages_24h: activity.messages_24h,
    created_at: row.created_at.toISOString(),
  };
}
