import { DEFAULT_LISTENER, type InboundResultIn } from '@hookrelay/shared';
import type { InboundResultReport } from '../db/inbound-results.js';

/** Which message a report is for, under which project and endpoint, and the reporter's id of it. */
export interface ReportedFor {
  projectId: string;
  endpointId: string;
  messageId: string;
  resultId: string | null;
}

/**
 * A CLI's result report (a stream's `result` frame or POST /v1/inbound-messages/{id}/result) as the
 * result batcher records it. An old CLI's report is the `default` listener's answer without content.
 */
export function resultReport(reportedFor: ReportedFor, report: InboundResultIn): InboundResultReport {
  return {
    ...reportedFor,
    result: { status: report.status, latencyMs: report.latency_ms, error: report.error },
    answer: {
      listener: report.listener ?? DEFAULT_LISTENER,
      responseHeaders: report.response_headers ?? [],
      responseBodyBase64: report.response_body ?? null,
      responseBodyTruncated: report.response_body_truncated ?? false,
    },
    resigned: report.resigned ?? false,
  };
}
