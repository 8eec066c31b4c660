import { newUuidv7 as newAttemptId } from '@hookrelay/shared';
import type { Sql } from './database.js';
import { isUniqueViolation } from './errors.js';
import { INBOUND_MESSAGE_COLUMNS, type InboundMessageRow } from './inbound-messages.js';

/** The local app's answers that listeners report (docs/api.md, Inbound endpoints): one function per operation, `sql` first. */

export interface InboundResult {
  status: number | null;
  latencyMs: number;
  error: string | null;
}

/** What the app sent back, as one CLI listener captured it. */
export interface InboundAnswer {
  listener: string;
  responseHeaders: [string, string][];
  /** base64, as reported; null when no body was captured. */
  responseBodyBase64: string | null;
  responseBodyTruncated: boolean;
}

/** One CLI report: the message it is for, and the project and endpoint it must belong to. */
export interface InboundResultReport {
  projectId: string;
  endpointId: string;
  messageId: string;
  /** The reporter's id of the report (null: none sent): a report recorded under it before is not recorded again. */
  resultId: string | null;
  result: InboundResult;
  answer: InboundAnswer;
  /** The listener forwarded the message re-signed by the server: its attempt and answer say so (default false). */
  resigned?: boolean;
}

/** What one report did: the message as it now stands; `duplicate` when the report's id was recorded before and nothing changed. */
export interface RecordedInboundResult {
  row: InboundMessageRow;
  duplicate: boolean;
}

/** The listeners whose answers a message keeps: a new listener beyond them drops the least recent one's. */
export const MAX_ANSWERS_PER_MESSAGE = 20;

/**
 * CLI reports of the local app's answers (docs/api.md, Inbound endpoints), many in one statement
 * and one commit: each matched message takes one attempt row, and the report's outcome (2xx
 * succeeded, anything else failed_permanent); the report's listener's answer replaces its previous
 * one, and the message keeps the answers of its `MAX_ANSWERS_PER_MESSAGE` most recently answering
 * listeners. The answer is aligned with `reports`: the message as the report left it, or undefined
 * when the message is not found, deleted, or not of that project and endpoint.
 *
 * A report whose `resultId` the message already has an attempt of is a copy sent again (its
 * acknowledgement was lost): it changes nothing and answers the message as it stands, `duplicate`.
 * Two copies recorded at the same moment by two statements both pass that check; the unique index
 * on (message, result id) refuses the second at its attempt row, and the statement runs again,
 * now seeing the first.
 *
 * Message ids must be distinct (one UPDATE changes a row once: two reports of one message go in
 * two calls, in report order). The rows are locked in id order first, so that batches of several
 * processes over the same messages cannot deadlock.
 */
export async function recordInboundResults(sql: Sql, reports: readonly InboundResultReport[]): Promise<(RecordedInboundResult | undefined)[]> {
  if (reports.length === 0) return [];
  if (new Set(reports.map((r) => r.messageId)).size !== reports.length) throw new Error('recordInboundResults: one report per message id');
  for (let attempt = 1; ; attempt++) {
    try {
      return await recordResultsOnce(sql, reports);
    } catch (error) {
      // Each run sees the copies committed before it: a few runs at most, even under a storm of resends.
      if (attempt >= 5 || !isUniqueViolation(error, 'delivery_attempts_result')) throw error;
    }
  }
}

async function recordResultsOnce(sql: Sql, reports: readonly InboundResultReport[]): Promise<(RecordedInboundResult | undefined)[]> {
  const errors = reports.map(({ result }) =>
    result.status !== null && result.status >= 200 && result.status < 300 ? null : (result.error ?? (result.status === null ? 'no response' : `HTTP ${result.status}`)),
  );
  const answers = reports.map(({ answer }, i) => ({
    batch_index: i,
    listener: answer.listener,
    headers: answer.responseHeaders,
    body: answer.responseBodyBase64,
    truncated: answer.responseBodyTruncated,
  }));
  const rows = await sql<InboundMessageRow & { batch_index: number; duplicate: boolean }>`
    WITH reports AS (
      SELECT * FROM unnest(
        ${reports.map((_, i) => i)}::int[], ${reports.map((r) => r.messageId)}::uuid[], ${reports.map((r) => r.projectId)}::uuid[],
        ${reports.map((r) => r.endpointId)}::uuid[], ${reports.map((r) => r.result.status)}::int[], ${reports.map((r) => r.result.latencyMs)}::int[],
        ${errors}::text[], ${reports.map(() => newAttemptId())}::uuid[], ${reports.map((r) => r.resultId)}::uuid[],
        ${reports.map((r) => (r.resigned === true ? 1 : 0))}::int[]
      ) AS u(batch_index, message_id, project_id, endpoint_id, response_status, latency_ms, error, attempt_id, result_id, resigned_flag)
    ), seen AS (
      -- Each report probes the (message, result id) index: a LATERAL with LIMIT is never turned into a
      -- hash join over the whole attempts table, which the planner picks for a table it has no
      -- statistics of (PGlite runs no autovacuum).
      SELECT u.batch_index, u.message_id, u.project_id, u.endpoint_id FROM reports u
      CROSS JOIN LATERAL (
        SELECT 1 FROM delivery_attempts d
        WHERE d.message_id = u.message_id AND d.result_id = u.result_id AND d.result_id IS NOT NULL LIMIT 1
      ) recorded
      WHERE u.result_id IS NOT NULL
    ), input AS (
      -- postgres.js types an array of booleans as one boolean parameter: the flags travel as 0 and 1.
      SELECT u.*, coalesce(u.response_status BETWEEN 200 AND 299, false) AS succeeded, u.resigned_flag = 1 AS resigned FROM reports u
      WHERE NOT EXISTS (SELECT 1 FROM seen s WHERE s.batch_index = u.batch_index)
    ), answer_input AS (
      SELECT * FROM jsonb_to_recordset(${answers as unknown as object}::jsonb)
        AS a(batch_index integer, listener text, headers jsonb, body text, truncated boolean)
    ), target AS (
      -- One primary-key probe per report, in id order (the lock order); a join would scan the
      -- messages table whenever the planner takes it for small.
      SELECT t.id FROM (SELECT message_id, project_id, endpoint_id FROM input ORDER BY message_id) i
      CROSS JOIN LATERAL (
        SELECT m.id FROM inbound_messages m
        WHERE m.id = i.message_id AND m.project_id = i.project_id AND m.inbound_endpoint_id = i.endpoint_id AND m.deleted_at IS NULL
        FOR UPDATE OF m
      ) t
    ), reported AS (
      UPDATE inbound_messages m SET
        status = CASE WHEN i.succeeded THEN 'succeeded' ELSE 'failed_permanent' END,
        attempt_count = m.attempt_count + 1,
        response_status = i.response_status,
        response_latency_ms = i.latency_ms,
        last_error = i.error,
        first_attempt_at = coalesce(m.first_attempt_at, now() - make_interval(secs => i.latency_ms / 1000.0)),
        queue_wait_ms = coalesce(m.queue_wait_ms,
          greatest(0, (extract(epoch FROM (now() - make_interval(secs => i.latency_ms / 1000.0) - m.received_at)) * 1000)::int)),
        delivered_at = CASE WHEN i.succeeded THEN coalesce(m.delivered_at, now()) ELSE m.delivered_at END,
        total_delivery_ms = CASE WHEN i.succeeded
          THEN coalesce(m.total_delivery_ms, greatest(0, (extract(epoch FROM (now() - m.received_at)) * 1000)::int))
          ELSE m.total_delivery_ms END,
        failed_at = CASE WHEN i.succeeded THEN NULL ELSE now() END,
        next_attempt_at = NULL,
        updated_at = now()
      FROM input i JOIN target t ON t.id = i.message_id
      WHERE m.id = i.message_id AND m.deleted_at IS NULL
      RETURNING i.batch_index, ${INBOUND_MESSAGE_COLUMNS(sql)}
    ), attempt AS (
      INSERT INTO delivery_attempts (id, message_id, attempt_number, started_at, response_status, latency_ms, error, result_id, resigned)
      SELECT i.attempt_id, r.id, r.attempt_count, now() - make_interval(secs => r.response_latency_ms / 1000.0),
             r.response_status, r.response_latency_ms, r.last_error, i.result_id, i.resigned
      FROM reported r JOIN input i ON i.batch_index = r.batch_index
    ), answer_rows AS (
      SELECT r.id AS message_id, a.listener, r.response_status, r.response_latency_ms, r.last_error, a.headers, a.body, a.truncated, i.resigned
      FROM reported r JOIN answer_input a ON a.batch_index = r.batch_index JOIN input i ON i.batch_index = r.batch_index
    ), answered AS (
      INSERT INTO inbound_message_answers AS a (message_id, listener, status, latency_ms, error, response_headers, response_body,
        response_body_truncated, resigned, first_answered_at, answered_at)
      SELECT n.message_id, n.listener, n.response_status, n.response_latency_ms, n.last_error, n.headers,
             CASE WHEN n.body IS NULL THEN NULL ELSE decode(n.body, 'base64') END, n.truncated, n.resigned, now(), now()
      FROM answer_rows n
      ON CONFLICT (message_id, listener) DO UPDATE SET
        status = excluded.status, latency_ms = excluded.latency_ms, error = excluded.error,
        response_headers = excluded.response_headers, response_body = excluded.response_body,
        response_body_truncated = excluded.response_body_truncated, resigned = excluded.resigned, answered_at = excluded.answered_at
    ), pruned AS (
      -- The statement's own insert is not visible here: the rank is among the other listeners.
      DELETE FROM inbound_message_answers a USING (
        SELECT o.message_id, o.listener, row_number() OVER (PARTITION BY o.message_id ORDER BY o.answered_at DESC, o.listener) AS rank
        FROM inbound_message_answers o JOIN answer_rows n ON n.message_id = o.message_id AND o.listener <> n.listener
      ) old
      WHERE a.message_id = old.message_id AND a.listener = old.listener AND old.rank >= ${MAX_ANSWERS_PER_MESSAGE}
    )
    SELECT *, false AS duplicate FROM reported
    UNION ALL
    SELECT s.batch_index, ${INBOUND_MESSAGE_COLUMNS(sql)}, true AS duplicate FROM seen s JOIN inbound_messages m ON m.id = s.message_id
    WHERE m.project_id = s.project_id AND m.inbound_endpoint_id = s.endpoint_id AND m.deleted_at IS NULL`;
  const byIndex: (RecordedInboundResult | undefined)[] = new Array(reports.length).fill(undefined);
  for (const { batch_index, duplicate, ...row } of rows) byIndex[batch_index] = { row, duplicate };
  return byIndex;
}
