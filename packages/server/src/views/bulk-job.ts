import type { BulkJobOut, MessageStatus } from '@hookrelay/shared';
import type { BulkJobRow } from '../db/bulk-jobs.js';

/** A bulk job as the API shows it, its filter as it was given (`null` where it was not). */
export function toBulkJobOut(row: BulkJobRow): BulkJobOut {
  const fields = {
    id: row.id,
    status: row.status,
    matched: row.matched,
    done: row.done,
    skipped: row.skipped,
    failed: row.failed,
    last_error: row.last_error,
    created_at: row.created_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
  };
  const statuses = row.statuses as MessageStatus[] | null;
  if (row.kind === 'outbound') {
    return {
      ...fields,
      kind: 'outbound',
      filter: {
        endpoint_id: row.endpoint_id,
        owner_id: row.owner_id,
        event_type: row.event_type,
        status: statuses ?? [],
        created_after: row.time_from.toISOString(),
        created_before: row.time_to?.toISOString() ?? null,
      },
    };
  }
  return {
    ...fields,
    kind: 'inbound',
    filter: {
      inbound_endpoint_id: row.inbound_endpoint_id!,
      event_type: row.event_type,
      status: statuses,
      received_after: row.time_from.toISOString(),
      received_before: row.time_to?.toISOString() ?? null,
    },
  };
}
