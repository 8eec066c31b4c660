import type { AttemptOut } from '@hookrelay/shared';
import type { Loaded } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';
import { formatMs, formatTime, statusClass } from '../format.js';

const ATTEMPT_COLUMNS: readonly Column<AttemptOut>[] = [
  { head: '#', class: 'num', cell: (a) => a.attempt_number },
  { head: 'Started', class: 'nowrap', cell: (a) => formatTime(a.started_at) },
  { head: 'Status', cell: (a) => <span class={`badge ${statusClass(a.response_status)}`}>{a.response_status ?? 'none'}</span> },
  { head: 'Latency', class: 'num', cell: (a) => formatMs(a.latency_ms) },
  { head: 'Error', class: 'error-text', cell: (a) => a.error ?? '' },
  { head: 'Response body', cell: (a) => <pre class="inline-body">{a.response_body ?? ''}</pre> },
];

/** Delivery attempts (or CLI reports), oldest first, with each answer's status, latency and body. */
export function AttemptsTable({ attempts, testid }: { attempts: Loaded<AttemptOut[]>; testid: string }) {
  return (
    <ResourceTable
      list={{ rows: attempts.value, error: attempts.error, loading: attempts.loading }}
      label="Attempts"
      testid={testid}
      columns={ATTEMPT_COLUMNS}
      rowKey={(a) => a.id}
      empty="No attempt yet."
    />
  );
}
