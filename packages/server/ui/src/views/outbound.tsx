import { useState } from 'preact/hooks';
import type { AttemptOut, EndpointSummaryOut, LogRecordOut, MessageOut, MessageRetryOut } from '@hookrelay/shared';
import { api } from '../api.js';
import { ErrorBox, Time } from '../components.js';
import { formatBytes, formatMs, statusClass } from '../format.js';
import { useLoad, usePagedList } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';
import { AttemptsTable } from './attempts.js';

const ENDPOINT_COLUMNS: readonly Column<EndpointSummaryOut>[] = [
  { head: 'URL', cell: (endpoint) => <a href={`#/outbound/${endpoint.id}`}>{endpoint.url}</a> },
  { head: 'Description', cell: (endpoint) => endpoint.description },
  {
    head: 'State',
    cell: (endpoint) => (
      <>
        {endpoint.paused ? <span class="badge warn">paused</span> : <span class="badge ok">active</span>}
        {endpoint.ephemeral ? <span class="badge"> ephemeral until <Time iso={endpoint.expires_at} /></span> : null}
      </>
    ),
  },
  { head: 'Created', class: 'nowrap', cell: (endpoint) => <Time iso={endpoint.created_at} /> },
];

export function OutboundEndpoints() {
  const list = usePagedList<EndpointSummaryOut>('/v1/endpoints');
  return (
    <section aria-labelledby="outbound-title">
      <h1 id="outbound-title">Outbound endpoints</h1>
      <ResourceTable list={list} label="Outbound endpoints" testid="outbound-endpoints" columns={ENDPOINT_COLUMNS} rowKey={(e) => e.id} empty="No outbound endpoint yet." />
    </section>
  );
}

const MESSAGE_COLUMNS: readonly Column<LogRecordOut>[] = [
  { head: 'Created', class: 'nowrap', cell: (message) => <a href={`#/outbound-messages/${message.message_id}`}><Time iso={message.created_at} /></a> },
  { head: 'Status', cell: (message) => message.status },
  { head: 'Attempts', class: 'num', cell: (message) => message.attempt_count },
  {
    head: 'Last answer',
    cell: (message) => (
      <>
        <span class={`badge ${statusClass(message.response_status)}`}>{message.response_status ?? '—'}</span> {formatMs(message.response_latency_ms)}
      </>
    ),
  },
  { head: 'Last error', class: 'error-text', cell: (message) => message.last_error ?? '' },
];

export function OutboundMessages({ endpointId }: { endpointId: string }) {
  const [status, setStatus] = useState('');
  const list = usePagedList<LogRecordOut>('/v1/logs', { endpoint_id: endpointId, status });
  return (
    <section aria-labelledby="outbound-messages-title">
      <p class="crumbs">
        <a href="#/outbound">Outbound endpoints</a> / {endpointId}
      </p>
      <h1 id="outbound-messages-title">Messages</h1>
      <div class="row filters">
        <label>
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">any</option>
            {['queued', 'delivering', 'succeeded', 'pending_retry', 'failed_permanent'].map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ResourceTable list={list} label="Outbound messages, newest first" testid="outbound-messages" columns={MESSAGE_COLUMNS} rowKey={(m) => m.message_id} empty="No message." />
    </section>
  );
}

export function OutboundMessage({ messageId }: { messageId: string }) {
  const message = useLoad(() => api<MessageOut>('GET', `/v1/messages/${messageId}`).then((r) => r.data), [messageId]);
  const attempts = useLoad(() => api<AttemptOut[]>('GET', `/v1/messages/${messageId}/attempts`).then((r) => r.data), [messageId]);
  const [error, setError] = useState<unknown>(undefined);
  const [resent, setResent] = useState<MessageRetryOut | null>(null);
  const resend = async () => {
    setError(undefined);
    try {
      setResent((await api<MessageRetryOut>('POST', `/v1/messages/${messageId}/retry`)).data);
      message.reload();
      attempts.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  const m = message.value;
  return (
    <section aria-labelledby="outbound-message-title">
      <p class="crumbs">
        <a href="#/outbound">Outbound endpoints</a> / {m ? <a href={`#/outbound/${m.endpoint_id}`}>{m.endpoint}</a> : '…'} / message
      </p>
      <h1 id="outbound-message-title">Message {messageId}</h1>
      <ErrorBox error={message.error} />
      {m ? (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="outbound-status">{m.status}</dd>
            <dt>Event type</dt>
            <dd>{m.event_type ?? '—'}</dd>
            <dt>Size</dt>
            <dd>
              {formatBytes(m.size_bytes)} · SHA-256 <code>{m.payload_sha256}</code>
            </dd>
            <dt>Created</dt>
            <dd><Time iso={m.created_at} /></dd>
          </dl>
          <div class="row">
            <button type="button" onClick={resend}>
              Resend
            </button>
            {resent ? <span role="status">Queued again ({resent.status})</span> : null}
          </div>
          <ErrorBox error={error} />
          <h2>Payload</h2>
          <pre class="body">{m.payload !== undefined ? JSON.stringify(m.payload, null, 2) : (m.body ?? '(no payload)')}</pre>
        </>
      ) : null}
      <h2>Attempts</h2>
      <AttemptsTable attempts={attempts} testid="attempts" />
    </section>
  );
}
