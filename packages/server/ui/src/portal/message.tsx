import { useState } from 'preact/hooks';
import type { AttemptOut, MessageOut, MessageRetryOut } from '@hookrelay/shared';
import { api } from '../api.js';
import { ErrorBox, JsonTree, Time } from '../components.js';
import { formatBytes } from '../format.js';
import { useLoad } from '../load.js';
import { AttemptsTable } from '../views/attempts.js';
import { usePortalFrames } from './live.js';

/** One message: what was sent, and each attempt with the receiver's status, latency and body, live. */
export function PortalMessage({ messageId, readOnly }: { messageId: string; readOnly: boolean }) {
  const message = useLoad(() => api<MessageOut>('GET', `/v1/messages/${encodeURIComponent(messageId)}`).then((r) => r.data), [messageId]);
  const attempts = useLoad(() => api<AttemptOut[]>('GET', `/v1/messages/${encodeURIComponent(messageId)}/attempts`).then((r) => r.data), [messageId]);
  const [error, setError] = useState<unknown>(undefined);
  const [retried, setRetried] = useState<MessageRetryOut | null>(null);
  const reload = () => {
    message.reload();
    attempts.reload();
  };
  usePortalFrames((frames) => {
    if (frames.some((f) => (f.type === 'message' && f.message.message_id === messageId) || (f.type === 'attempt' && f.attempt.message_id === messageId))) reload();
  }, reload);
  const retry = async () => {
    setError(undefined);
    try {
      setRetried((await api<MessageRetryOut>('POST', `/v1/messages/${messageId}/retry`)).data);
      reload();
    } catch (caught) {
      setError(caught);
    }
  };
  const m = message.value;
  return (
    <section aria-labelledby="message-title">
      <p class="crumbs">
        <a href="#/">Endpoints</a> / {m ? <a href={`#/endpoints/${encodeURIComponent(m.endpoint_id)}`}>{m.endpoint}</a> : '…'} / message
      </p>
      <h1 id="message-title">{m?.event_type ? `${m.event_type} · ${m.status}` : `Message ${messageId}`}</h1>
      <ErrorBox error={message.error} />
      {m ? (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="portal-message-status">{m.status}</dd>
            <dt>Event type</dt>
            <dd>{m.event_type ?? '—'}</dd>
            <dt>Size</dt>
            <dd>{formatBytes(m.size_bytes)}</dd>
            <dt>Created</dt>
            <dd>
              <Time iso={m.created_at} />
            </dd>
          </dl>
          {readOnly ? null : (
            <div class="row">
              <button type="button" onClick={retry}>
                Retry
              </button>
              {retried ? <span role="status">Queued again ({retried.status})</span> : null}
            </div>
          )}
          <ErrorBox error={error} />
          <h2>Payload</h2>
          {m.payload !== undefined ? <div class="body json"><JsonTree value={m.payload} /></div> : <pre class="body">{m.body ?? '(no payload)'}</pre>}
        </>
      ) : null}
      <h2>Attempts</h2>
      {m ? <AttemptsTable attempts={attempts} testid="portal-attempts" /> : null}
    </section>
  );
}
