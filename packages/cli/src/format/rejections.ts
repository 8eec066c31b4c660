import type { RejectionOut } from '@hookrelay/shared';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, truncate } from './text.js';

const REQUEST_COLUMN_MAX = 40;
const DETAIL_COLUMN_MAX = 90;

const request = (r: RejectionOut): string => truncate(`${r.method} ${r.path}${r.query === '' ? '' : `?${r.query}`}`, REQUEST_COLUMN_MAX);

/** Refused requests as a table, newest first as the API lists them. */
export function formatRejectionTable(rows: readonly RejectionOut[], style: Style): string {
  rows = terminalSafe(rows);
  return formatTable<RejectionOut>(
    [
      { header: 'RECEIVED', value: (r) => r.received_at },
      { header: 'ID', value: (r) => r.id },
      { header: 'STATUS', value: (r) => String(r.status), color: (text, _r, s) => s.red(text) },
      { header: 'REASON', value: (r) => r.reason },
      { header: 'REQUEST', value: request },
      { header: 'FROM', value: (r) => r.source_address },
      { header: 'DETAIL', value: (r) => truncate(r.detail, DETAIL_COLUMN_MAX) },
    ],
    rows,
    style,
  );
}

/** One refused request as one line, for `--follow`. */
export function formatRejectionRow(row: RejectionOut, style: Style): string {
  row = terminalSafe(row);
  return [style.dim(row.received_at), style.red(String(row.status)), row.reason, request(row), style.dim(row.detail)].join('  ');
}
