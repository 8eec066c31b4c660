import type { AttemptOut } from '@hookrelay/shared';
import type { Loaded } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';
import { ResignedBadge, Time } from '../components.js';
import { formatMs, indentJson, statusClass } from '../format.js';

const ATTEMPT_COLUMNS: readonly Column<AttemptOut>[] = [
  { head: '#', class: 'num', cell: (a) => a.attempt_number },
  { head: 'Started', class: 'nowrap', cell: (a) => <Time iso={a.started_at} /> },
  {
    head: 'Status',
    class: 'nowrap',
    cell: (a) => (
      <>
        <span class={`badge ${statusClass(a.response_status)}`}>{a.response_status ?? 'none'}</span>{' '}
        <ResignedBadge when={a.resigned} />
      </>
    ),
  },
  { head: 'Latency', class: 'num', cell: (a) => formatMs(a.latency_ms) },
  { head: 'Error', class: 'error-text', cell: (a) => a.error ?? '' },
];

/** Attempts that sent a request record the first bytes of its answer (as text); a CLI's report of its app's answer keeps it with the answer instead. */
const ATTEMPT_COLUMNS_WITH_BODY: readonly Column<AttemptOut>[] = [
  ...ATTEMPT_COLUMNS,
  {
    head: 'Response body',
    cell: (a) =>
      a.response_body === undefined ? '' : a.response_body === '' ? <span class="muted">empty</span> : <pre class="inline-body">{indentJson(a.response_body) ?? a.response_body}</pre>,
  },
];

/**
 * Delivery attempts (or CLI reports), oldest first, with each answer's status, latency and, when
 * any attempt has one, body.
 */
export function AttemptsTable({ attempts, testid }: { attempts: Loaded<AttemptOut[]>; testid: string }) {
  const withBody = attempts.value?.some((a) => a.response_body !== undefined) ?? false;
  return (
    <ResourceTable
      list={{ rows: attempts.value, error: attempts.error, loading: attempts.loading }}
      label="Attempts"
      testid={testid}
      columns={withBody ? ATTEMPT_COLUMNS_WITH_BODY : ATTEMPT_COLUMNS}
      rowKey={(a) => a.id}
      empty="No attempt yet."
    />
  );
}
