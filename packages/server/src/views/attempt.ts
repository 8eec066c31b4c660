import type { AttemptOut } from '@hookrelay/shared';
import type { AttemptRow } from '../db/messages.js';

/** One delivery attempt (or cli-mode report) of an outbound or inbound message. */
export function toAttemptOut(row: AttemptRow): AttemptOut {
  return {
    id: row.id,
    message_id: row.message_id,
    attempt_number: row.attempt_number,
    started_at: row.started_at.toISOString(),
    response_status: row.response_status,
    latency_ms: row.latency_ms,
    error: row.error,
    ...(row.response_body !== null ? { response_body: row.response_body } : {}),
    ...(row.resigned ? { resigned: true as const } : {}),
  };
}
