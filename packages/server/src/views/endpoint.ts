import type { EndpointOut, EndpointSummaryOut } from '@hookrelay/shared';
import type { EndpointRow } from '../db/endpoints.js';

/** Who the endpoint belongs to and what it receives, as every full answer shows it. */
export function subscriptionOf(row: EndpointRow): Pick<EndpointOut, 'owner_id' | 'event_types' | 'channels'> {
  return { owner_id: row.owner_id, event_types: row.event_types, channels: row.channels };
}

/** An outbound endpoint as GET and PATCH answer it. */
export function toEndpointOut(row: EndpointRow): EndpointOut {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    rate_limit_rps: row.rate_limit_rps,
    burst: row.burst,
    headers: row.headers,
    paused: row.paused,
    paused_reason: row.paused_reason,
    paused_at: row.paused_at ? row.paused_at.toISOString() : null,
    ephemeral: row.ephemeral,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
    ...subscriptionOf(row),
    retention_days: row.retention_days,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** An outbound endpoint as a row of GET /v1/endpoints. */
export function toEndpointSummaryOut(row: EndpointRow): EndpointSummaryOut {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    paused: row.paused,
    ephemeral: row.ephemeral,
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
    created_at: row.created_at.toISOString(),
  };
}
