import { z } from 'zod';
import { EndpointId, EndpointListQuery, HeaderMap, HttpsUrl, MessageRetentionDays, Timestamp, Ttl } from './common.js';
import { EventTypeName } from './event-catalogue.js';
import { ChannelNames, EventTypeGlobs, OwnerId } from './subscriptions.js';

/**
 * Who an endpoint belongs to and which events it receives (docs/api.md, Events and subscriptions);
 * `null` on create is the default, on PATCH it goes back to it.
 */
const subscriptionFields = {
  owner_id: OwnerId.nullable().optional(),
  event_types: EventTypeGlobs.nullable().optional(),
  channels: ChannelNames.nullable().optional(),
};

/** The same fields in an answer. */
const subscriptionOut = {
  owner_id: z.string().nullable(),
  event_types: z.array(z.string()).nullable(),
  channels: z.array(z.string()).nullable(),
};

/** POST /v1/endpoints */
export const EndpointCreateIn = z.strictObject({
  url: HttpsUrl,
  description: z.string().max(500, 'must be at most 500 characters').optional(),
  rate_limit_rps: z.number().int('must be an integer').min(0, 'must be between 0 and 1000').max(1000, 'must be between 0 and 1000').optional(),
  burst: z.number().int('must be an integer').min(0, 'must be between 0 and 10000').max(10000, 'must be between 0 and 10000').optional(),
  headers: HeaderMap.optional(),
  ephemeral: z.boolean().optional(),
  ttl_minutes: Ttl.optional(),
  ...subscriptionFields,
  retention_days: MessageRetentionDays.optional(),
});
export type EndpointCreateIn = z.infer<typeof EndpointCreateIn>;

/** PATCH /v1/endpoints/{id}: omitted fields keep their values. */
export const EndpointUpdateIn = z.strictObject({
  url: HttpsUrl.optional(),
  description: z.string().max(500, 'must be at most 500 characters').optional(),
  rate_limit_rps: z.number().int('must be an integer').min(0, 'must be between 0 and 1000').max(1000, 'must be between 0 and 1000').optional(),
  burst: z.number().int('must be an integer').min(0, 'must be between 0 and 10000').max(10000, 'must be between 0 and 10000').optional(),
  headers: HeaderMap.optional(),
  paused: z.boolean().optional(),
  ...subscriptionFields,
  retention_days: MessageRetentionDays.optional(),
});
export type EndpointUpdateIn = z.infer<typeof EndpointUpdateIn>;

/** Create response: signing secret shown once; no rate or header fields. */
export const EndpointCreateOut = z.object({
  id: EndpointId,
  url: z.string(),
  description: z.string(),
  signing_key_id: z.string(),
  signing_secret: z.string(),
  key_hint: z.string(),
  ephemeral: z.boolean(),
  expires_at: Timestamp.nullable(),
  ...subscriptionOut,
  created_at: Timestamp,
});
export type EndpointCreateOut = z.infer<typeof EndpointCreateOut>;

/**
 * Why an outbound endpoint is paused: `manual`, through the API (`POST .../pause`, PATCH
 * `paused: true`); `failing`, by hookrelay, for deliveries that kept failing (docs/api.md, Endpoints
 * that keep failing).
 */
export const ENDPOINT_PAUSED_REASONS = ['manual', 'failing'] as const;
export const EndpointPausedReason = z.enum(ENDPOINT_PAUSED_REASONS);
export type EndpointPausedReason = z.infer<typeof EndpointPausedReason>;

/**
 * Full record (single GET, PATCH): never the signing secret; `expires_at` only when ephemeral;
 * `paused_reason` and `paused_at` null when not paused.
 */
export const EndpointOut = z.object({
  id: EndpointId,
  url: z.string(),
  description: z.string(),
  rate_limit_rps: z.number().int(),
  burst: z.number().int(),
  headers: z.record(z.string(), z.string()),
  paused: z.boolean(),
  paused_reason: EndpointPausedReason.nullable(),
  paused_at: Timestamp.nullable(),
  ephemeral: z.boolean(),
  expires_at: Timestamp.optional(),
  ...subscriptionOut,
  /** Days its messages are kept; null: the server's default. */
  retention_days: z.number().int().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type EndpointOut = z.infer<typeof EndpointOut>;

/** List summary: no headers, no rate limits; `expires_at` null when not ephemeral. */
export const EndpointSummaryOut = z.object({
  id: EndpointId,
  url: z.string(),
  description: z.string(),
  paused: z.boolean(),
  ephemeral: z.boolean(),
  expires_at: Timestamp.nullable(),
  created_at: Timestamp,
});
export type EndpointSummaryOut = z.infer<typeof EndpointSummaryOut>;

/**
 * GET /v1/endpoints: `owner_id`, the endpoints of that owner; `event_type`, those whose `event_types`
 * match that type (the endpoints an event of that type and owner would go to, channels aside).
 */
export const OutboundEndpointListQuery = EndpointListQuery.extend({
  owner_id: OwnerId.optional(),
  event_type: EventTypeName.optional(),
});
export type OutboundEndpointListQuery = z.infer<typeof OutboundEndpointListQuery>;

/** POST /v1/endpoints/{id}/rotate-secret */
export const RotateSecretOut = z.object({
  signing_key_id: z.string(),
  signing_secret: z.string(),
  key_hint: z.string(),
  previous_key_expires_at: Timestamp,
});
export type RotateSecretOut = z.infer<typeof RotateSecretOut>;
