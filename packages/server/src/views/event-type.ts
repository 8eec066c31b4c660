import type { EventTypeOut } from '@hookrelay/shared';
import type { EventTypeRow } from '../db/event-types.js';

/** A project's event type as every event-types route answers it. */
export function toEventTypeOut(row: EventTypeRow): EventTypeOut {
  return {
    name: row.name,
    description: row.description,
    schema: row.payload_schema,
    example: row.example,
    archived: row.archived,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
