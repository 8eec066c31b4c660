import {
  ENDPOINT_PAUSED_EVENT,
  isReservedEventTypeName,
  MESSAGE_FAILED_EVENT,
  type EndpointPausedPayload,
  type MessageFailedPayload,
} from '@hookrelay/shared';
import type { AppliedOutcome } from '../db/deliveries.js';
import type { FailingEndpointPause } from '../db/endpoints.js';
import { sha256Hex } from '../security/crypto.js';
import { eventRequestSha256, type EventSubmission } from './event-fanout.js';

/**
 * hookrelay's own events about delivery (docs/api.md, Built-in event types), made by the statement
 * that records the results they tell of. Each is an event of the operator's (`owner_id` null), so
 * the fan-out takes it only to the project's own endpoints whose `event_types` name it; it names no
 * channel. Their payloads are the shared types of `@hookrelay/shared`, every field present.
 */

function operationalEvent(projectId: string, eventType: string, payload: EndpointPausedPayload | MessageFailedPayload): EventSubmission {
  const bytes = Buffer.from(JSON.stringify(payload), 'utf8');
  const event = { eventType, ownerId: null, channels: [], contentType: 'application/json', payloadFormat: 'json' as const, payloadSha256: sha256Hex(bytes) };
  return { projectId, ...event, idempotencyKey: null, requestSha256: eventRequestSha256(event), payload: bytes };
}

/** `hookrelay.endpoint.paused` for an endpoint that hookrelay paused for failing. */
export function endpointPausedEvent(endpoint: FailingEndpointPause): EventSubmission {
  return operationalEvent(endpoint.project_id, ENDPOINT_PAUSED_EVENT, {
    endpoint_id: endpoint.id,
    owner_id: endpoint.owner_id,
    reason: 'failing',
    last_error: endpoint.last_error,
    failing_since: endpoint.failing_since.toISOString(),
  });
}

/**
 * A message whose recorded attempt ended it failed_permanent is announced when its retry schedule ran
 * out: not when its deletion (or its endpoint's) ended it, and never a message of one of
 * hookrelay's own types, so that an endpoint failing to take these announcements is not told of
 * it again, and again.
 */
export function announcesFailure(message: AppliedOutcome): boolean {
  return message.status === 'failed_permanent' && !message.ended_by_delete && !(message.event_type !== null && isReservedEventTypeName(message.event_type));
}

/** `hookrelay.message.failed` for an outbound message that failed for good. */
export function messageFailedEvent(message: AppliedOutcome): EventSubmission {
  return operationalEvent(message.project_id, MESSAGE_FAILED_EVENT, {
    message_id: message.id,
    event_id: message.event_id,
    endpoint_id: message.endpoint_id,
    owner_id: message.owner_id,
    event_type: message.event_type,
    attempts: message.attempt_count,
    last_error: message.last_error,
  });
}
