import type { FailureReport } from '../errors.js';
import type { Style } from './style.js';
import { terminalSafe } from './text.js';

/** `CODE: message (request id …)`, the offending fields, then a hint: what stderr shows on failure. */
export function formatFailure(report: FailureReport, style: Style): string {
  // The message, its details and the code itself may be a server's words.
  report = terminalSafe(report);
  const requestId = report.requestId !== null ? style.dim(` (request id ${report.requestId})`) : '';
  const lines = [`${style.red.bold(report.code)}: ${report.message}${requestId}`];
  // Servers usually fold the details into the message already; list only what it leaves out.
  for (const detail of report.details ?? []) {
    if (!report.message.includes(detail.message)) lines.push(`  ${detail.path}: ${detail.message}`);
  }
  if (report.hint !== undefined) lines.push(`${style.yellow('hint:')} ${report.hint}`);
  return lines.join('\n');
}
