import { useState } from 'preact/hooks';
import type { AttemptOut, EndpointSummaryOut, LogRecordOut, MessageOut, MessageRetryOut } from '@hookrelay/shared';
import { api, page } from '../api.js';
import { AttemptsTable, ErrorBox, KeyTable, ListState, Pager, useLoad } from '../components.js';
import { formatBytes, formatMs, formatTime, statusClass } from '../format.js';

export function OutboundEndpoints() {
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const list = useLoad(() => page<EndpointSummaryOut>('/v1/endpoints', { cursor, limit: 50 }), [cursor]);
  return (
    <section aria-labelledby="outbound-title">
      <h1 id="outbound-title">Outbound endpoints</h1>
      <ListState list={list} empty="No outbound endpoint yet." />
      {list.value && list.value.data.length > 0 ? (
        <KeyTable
          label="Outbound endpoints"
          testid="outbound-endpoints"
          head={
            <tr>
              <th scope="col">URL</th>
              <th scope="col">Description</th>
              <th scope="col">State</th>
              <th scope="col">Created</th>
            </tr>
          }
        >
          {list.value.data.map((endpoint) => (
            <tr key={endpoint.id}>
              <td>
                <a href={`#/outbound/${endpoint.id}`}>{endpoint.url}</a>
              </td>
              <td>{endpoint.description}</td>
              <td>
                {endpoint.paused ? <span class="badge warn">paused</span> : <span class="badge ok">active</span>}
                {endpoint.ephemeral ? <span class="badge"> ephemeral until {formatTime(endpoint.expires_at)}</span> : null}
              </td>
              <td class="nowrap">{formatTime(endpoint.created_at)}</td>
            </tr>
          ))}
        </KeyTable>
      ) : null}
      <Pager hasPrevious={cursor !== undefined} next={list.value?.nextCursor ?? null} onFirst={() => setCursor(undefined)} onNext={setCursor} />
    </section>
  );
}

export function OutboundMessages({ endpointId }: { endpointId: string }) {
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [status, setStatus] = useState('');
  const list = useLoad(() => page<LogRecordOut>('/v1/logs', { endpoint_id: endpointId, status, cursor, limit: 50 }), [endpointId, status, cursor]);
  return (
    <section aria-labelledby="outbound-messages-title">
      <p class="crumbs">
        <a href="#/outbound">Outbound endpoints</a> / {endpointId}
      </p>
      <h1 id="outbound-messages-title">Messages</h1>
      <div class="row filters">
        <label>
          Status{' '}
          <select value={status} onChange={(e) => (setCursor(undefined), setStatus(e.currentTarget.value))}>
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
      <ListState list={list} empty="No message." />
      {list.value && list.value.data.length > 0 ? (
        <KeyTable
          label="Outbound messages, newest first"
          testid="outbound-messages"
          head={
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last answer</th>
              <th scope="col">Last error</th>
            </tr>
          }
        >
          {list.value.data.map((message) => (
            <tr key={message.message_id}>
              <td class="nowrap">
                <a href={`#/outbound-messages/${message.message_id}`}>{formatTime(message.created_at)}</a>
              </td>
              <td>{message.status}</td>
              <td class="num">{message.attempt_count}</td>
              <td>
                <span class={`badge ${statusClass(message.response_status)}`}>{message.response_status ?? '—'}</span> {formatMs(message.response_latency_ms)}
              </td>
              <td class="error-text">{message.last_error ?? ''}</td>
            </tr>
          ))}
        </KeyTable>
      ) : null}
      <Pager hasPrevious={cursor !== undefined} next={list.value?.nextCursor ?? null} onFirst={() => setCursor(undefined)} onNext={setCursor} />
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
            <dd>{formatTime(m.created_at)}</dd>
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
      <ErrorBox error={attempts.error} />
      {attempts.value ? <AttemptsTable attempts={attempts.value} testid="attempts" /> : null}
    </section>
  );
}
