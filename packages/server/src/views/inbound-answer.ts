import type { InboundAnswerOut, InboundAnswerSummaryOut } from '@hookrelay/shared';
import type { InboundAnswerContentRow, InboundAnswerRow } from '../db/inbound-messages.js';

/** A listener's answer to an inbound message, without what the app sent back (message lists). */
export function toInboundAnswerSummaryOut(row: InboundAnswerRow): InboundAnswerSummaryOut {
  return {
    listener: row.listener,
    status: row.status,
    latency_ms: row.latency_ms,
    error: row.error,
    response_body_truncated: row.response_body_truncated,
    resigned: row.resigned,
    answered_at: row.answered_at.toISOString(),
  };
}

/** A listener's answer with the headers and body the app sent back (one message's record). */
export function toInboundAnswerOut(row: InboundAnswerContentRow): InboundAnswerOut {
  return {
    ...toInboundAnswerSummaryOut(row),
    response_headers: row.response_headers,
    response_body: row.response_body === null ? null : Buffer.from(row.response_body).toString('base64'),
  };
}

/** The answer of a deleted message: like its payload, what the app sent back is unreachable at once. */
export function toDeletedInboundAnswerOut(row: InboundAnswerRow): InboundAnswerOut {
  return { ...toInboundAnswerSummaryOut(row), response_headers: [], response_body: null };
}
