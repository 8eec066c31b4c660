import type { Span, Tracing } from '../tracing/tracing.js';
import type { Prepared } from './prepared.js';
import type { OutgoingRequest, SendResult } from './sender.js';

/**
 * The span of one attempt (`hookrelay.delivery.attempt`, a child of the message's stored context):
 * the target's host and port, never its path, query, headers or body (they may hold secrets).
 */
export function startAttemptSpan(tracing: Tracing | undefined, p: Prepared, request: OutgoingRequest): Span | undefined {
  if (tracing === undefined || !tracing.enabled) return undefined;
  let host: string | undefined;
  let port: number | undefined;
  try {
    const url = new URL(request.url);
    host = url.hostname;
    port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  } catch {
    // An unparsable URL fails the send; the span says so without the URL.
  }
  return tracing.startSpan('hookrelay.delivery.attempt', {
    kind: 'client',
    parent: p.traceContext,
    attributes: {
      'http.request.method': request.method,
      'server.address': host,
      'server.port': port,
      'hookrelay.message.id': p.messageId,
      'hookrelay.message.kind': p.kind,
      'hookrelay.delivery.attempt_number': p.attemptNumber,
    },
  });
}

/** Ends an attempt's span with what came back: the status, or the kind of failure (never its detail). */
export function endAttemptSpan(span: Span | undefined, result: SendResult): void {
  if (span === undefined) return;
  if (result.status !== null) {
    span.setAttribute('http.response.status_code', result.status);
    if (result.status >= 400) span.fail(`HTTP ${result.status}`);
  } else {
    const kind = result.aborted ? 'aborted' : (result.error ?? 'no response').split(/[:(]/)[0]!.trim().slice(0, 64);
    span.setAttribute('error.type', kind);
    span.fail(kind);
  }
  span.end();
}
