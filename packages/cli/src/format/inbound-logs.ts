import type { InboundLogRecordOut } from '@hookrelay/shared';
import { formatMessageStatus } from './inbound-messages.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, truncate } from './text.js';

const ERROR_COLUMN_MAX = 50;

function response(row: InboundLogRecordOut): string {
  return row.response_status === null ? '-' : String(row.response_status);
}

function latency(row: InboundLogRecordOut): string {
  return row.response_latency_ms === null ? '-' : `${row.response_latency_ms} ms`;
}

/** The log as a table, in the API's order (newest first); the endpoint column only when it varies. */
export function formatInboundLogTable(rows: readonly InboundLogRecordOut[], style: Style, options: { showEndpoint: boolean }): string {
  rows = terminalSafe(rows);
  return formatTable<InboundLogRecordOut>(
    [
      { header: 'RECEIVED', value: (r) => r.received_at },
      { header: 'MESSAGE', value: (r) => r.message_id },
      ...(options.showEndpoint ? [{ header: 'ENDPOINT', value: (r: InboundLogRecordOut) => r.inbound_endpoint_id }] : []),
      { header: 'STATUS', value: (r) => r.status, color: (text, _r, s) => formatMessageStatus(text, s) },
      { header: 'ATTEMPTS', value: (r) => String(r.attempt_count) },
      { header: 'RESPONSE', value: response },
      { header: 'LATENCY', value: latency },
      { header: 'ERROR', value: (r) => (r.deleted_at !== undefined ? '(deleted)' : truncate(r.last_error ?? '', ERROR_COLUMN_MAX)) },
    ],
    rows,
    style,
  );
}

/** One row as one line, for `--follow` (no header to align with). */
export function formatInboundLogLine(row: InboundLogRecordOut, style: Style): string {
  row = terminalSafe(row);
  const parts = [
    style.dim(row.received_at),
    row.message_id,
    formatMessageStatus(row.status, style),
    response(row),
    latency(row),
    style.dim(`endpoint ${row.inbound_endpoint_id}`),
  ];
  if (row.last_error !== null) parts.push(style.red(truncate(row.last_error, ERROR_COLUMN_MAX * 2)));
  if (row.deleted_at !== undefined) parts.push(style.dim('(deleted)'));
  return parts.join('  ');
}
