import type { EventTypeOut, JsonSchemaObject } from './event-catalogue.js';

/**
 * hookrelay's own event types (docs/api.md, Built-in event types): what it sends about the delivery
 * itself. Every project's catalogue lists them without storing them, and their names are reserved.
 * The sender builds these payloads and the catalogue and docs show these schemas: one definition.
 */

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

export const ENDPOINT_PAUSED_EVENT = 'hookrelay.endpoint.paused';
export const MESSAGE_FAILED_EVENT = 'hookrelay.message.failed';

/** `hookrelay.endpoint.paused`: hookrelay stopped delivering to an endpoint. */
export type EndpointPausedPayload = {
  endpoint_id: string;
  owner_id: string | null;
  /** The endpoint's `paused_reason`: `failing`. */
  reason: string;
  last_error: string | null;
  failing_since: string | null;
};

/** `hookrelay.message.failed`: a message will not be attempted again (`failed_permanent`). */
export type MessageFailedPayload = {
  message_id: string;
  event_id: string | null;
  endpoint_id: string;
  owner_id: string | null;
  event_type: string | null;
  attempts: number;
  last_error: string | null;
};

const nullableText = (description: string) => ({ type: ['string', 'null'], description });

const ENDPOINT_PAUSED_SCHEMA = {
  $schema: DRAFT_2020_12,
  title: ENDPOINT_PAUSED_EVENT,
  type: 'object',
  properties: {
    endpoint_id: { type: 'string', minLength: 1, description: 'the endpoint that was paused' },
    owner_id: nullableText('who the endpoint belongs to, as it was created with; null when it names nobody'),
    reason: { type: 'string', minLength: 1, description: "why it was paused, as the endpoint's paused_reason says: failing (every delivery failed for the configured time)" },
    last_error: nullableText('the error of the last failed delivery; null when none failed'),
    failing_since: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'when its deliveries began failing with no success since; null when they were not failing',
    },
  },
  required: ['endpoint_id', 'owner_id', 'reason', 'last_error', 'failing_since'],
  additionalProperties: false,
} satisfies JsonSchemaObject;

const MESSAGE_FAILED_SCHEMA = {
  $schema: DRAFT_2020_12,
  title: MESSAGE_FAILED_EVENT,
  type: 'object',
  properties: {
    message_id: { type: 'string', format: 'uuid', description: 'the message that failed' },
    event_id: { type: ['string', 'null'], format: 'uuid', description: 'the event it was sent for; null for a message submitted on its own' },
    endpoint_id: { type: 'string', minLength: 1, description: 'the endpoint it was sent to' },
    owner_id: nullableText('who that endpoint belongs to; null when it names nobody'),
    event_type: nullableText("the message's event type; null when it has none"),
    attempts: { type: 'integer', minimum: 1, description: 'how many attempts were made' },
    last_error: nullableText("the last attempt's error (or its HTTP status); null when none was recorded"),
  },
  required: ['message_id', 'event_id', 'endpoint_id', 'owner_id', 'event_type', 'attempts', 'last_error'],
  additionalProperties: false,
} satisfies JsonSchemaObject;

const ENDPOINT_PAUSED_EXAMPLE: EndpointPausedPayload = {
  endpoint_id: 'ep_5c0e6f3d2b1a49e8a7f6c5d4b3a29180',
  owner_id: 'customer_1842',
  reason: 'failing',
  last_error: 'HTTP 503',
  failing_since: '2026-12-01T08:15:00.000Z',
};

const MESSAGE_FAILED_EXAMPLE: MessageFailedPayload = {
  message_id: '0193d6a4-6f1e-7c2a-9b3d-4e5f60718293',
  event_id: '0193d6a4-6e90-7a11-8c2d-3e4f50617283',
  endpoint_id: 'ep_5c0e6f3d2b1a49e8a7f6c5d4b3a29180',
  owner_id: 'customer_1842',
  event_type: 'invoice.paid',
  attempts: 8,
  last_error: 'connect ECONNREFUSED 203.0.113.7:443',
};

/** When the built-in types took their present form: their `created_at` and `updated_at`. */
const DEFINED_AT = '2026-12-03T00:00:00.000Z';

/** The built-in event types as the catalogue shows them, by name. */
export const OPERATIONAL_EVENT_TYPES: readonly EventTypeOut[] = [
  {
    name: ENDPOINT_PAUSED_EVENT,
    description: 'hookrelay paused an endpoint: nothing is delivered to it until it is resumed.',
    schema: ENDPOINT_PAUSED_SCHEMA,
    example: ENDPOINT_PAUSED_EXAMPLE,
    archived: false,
    created_at: DEFINED_AT,
    updated_at: DEFINED_AT,
  },
  {
    name: MESSAGE_FAILED_EVENT,
    description: 'A message failed for good: no attempt will follow (status failed_permanent).',
    schema: MESSAGE_FAILED_SCHEMA,
    example: MESSAGE_FAILED_EXAMPLE,
    archived: false,
    created_at: DEFINED_AT,
    updated_at: DEFINED_AT,
  },
];

/** The built-in event type of that name, or undefined. */
export function operationalEventType(name: string): EventTypeOut | undefined {
  return OPERATIONAL_EVENT_TYPES.find((type) => type.name === name);
}
