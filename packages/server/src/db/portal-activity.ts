import type { Sql } from './database.js';
import { COLUMNS, type AttemptRow, type OutboundMessageWithUrl } from './messages.js';

/**
 * The newest `perEndpoint` messages of each endpoint of `endpointIds` (what a portal's live socket
 * follows), deleted ones included as the lists show them: one index range of (endpoint_id, id DESC)
 * per endpoint, however many messages the endpoints hold.
 */
export async function listNewestMessagesOfEndpoints(sql: Sql, projectId: string, endpointIds: readonly string[], perEndpoint: number): Promise<OutboundMessageWithUrl[]> {
  if (endpointIds.length === 0) return [];
  return sql<OutboundMessageWithUrl>`
    SELECT newest.* FROM unnest(${[...endpointIds]}::text[]) AS ids (id)
    CROSS JOIN LATERAL (
      SELECT ${COLUMNS(sql)}, e.url AS endpoint_url
      FROM outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
      WHERE m.endpoint_id = ids.id AND m.project_id = ${projectId}::uuid
      ORDER BY m.id DESC LIMIT ${perEndpoint}
    ) AS newest`;
}

/** The attempts of each message after the number given beside it, in their order (those a portal's socket has not announced yet). */
export async function listAttemptsAfter(sql: Sql, after: readonly { messageId: string; attemptNumber: number }[]): Promise<AttemptRow[]> {
  if (after.length === 0) return [];
  return sql<AttemptRow>`
    SELECT a.id, a.message_id, a.attempt_number, a.started_at, a.response_status, a.latency_ms, a.error, a.response_body, a.resigned
    FROM unnest(${after.map((a) => a.messageId)}::uuid[], ${after.map((a) => a.attemptNumber)}::int[]) AS v (message_id, attempt_number)
    JOIN delivery_attempts a ON a.message_id = v.message_id AND a.attempt_number > v.attempt_number
    ORDER BY a.message_id, a.attempt_number, a.started_at, a.id`;
}
