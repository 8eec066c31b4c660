import { useState } from 'preact/hooks';
import type { AttemptOut, InboundAnswerOut, InboundEndpointOut, InboundMessageOut, InboundReplayOut } from '@hookrelay/shared';
import { api, bytes as fetchBytes } from '../api.js';
import { BodyView, CopyButton, ErrorBox, HeadersTable, Loading, ResignedBadge, Time } from '../components.js';
import { asText, base64ToBytes, curlCommand, formatBytes, formatMs, hexDump, indentJson, isSuccess, messageTitle, providerName, requestLine, statusClass } from '../format.js';
import { useLoad } from '../load.js';
import { AttemptsTable } from './attempts.js';
import { EditAndReplay } from './edit-replay.js';

/** Bodies up to this size are shown whole; a larger one shows its start and is offered as a download. */
const WHOLE_BODY_BYTES = 256 * 1024;
/** The start of a large body that is shown. */
const PREVIEW_BYTES = 64 * 1024;

/** Saves the whole body through the API (the key travels as a header, as on every call). */
function DownloadBody({ message }: { message: InboundMessageOut }) {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const download = async () => {
    setError(undefined);
    setBusy(true);
    try {
      const body = await fetchBytes(`/v1/inbound-messages/${message.id}/body`);
      const url = URL.createObjectURL(new Blob([body.bytes], { type: body.contentType || 'application/octet-stream' }));
      const link = document.createElement('a');
      link.href = url;
      link.download = `${message.id}.${/json/i.test(message.content_type) ? 'json' : /xml/i.test(message.content_type) ? 'xml' : /^text\/|x-www-form-urlencoded/i.test(message.content_type) ? 'txt' : 'bin'}`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" onClick={download} disabled={busy} data-testid="download-body">
        Download the body ({formatBytes(message.size_bytes)})
      </button>
      <ErrorBox error={error} />
    </>
  );
}

/** The start of a body too large to show whole: text, or a hex dump of binary bytes. */
function BodyPreview({ message }: { message: InboundMessageOut }) {
  const preview = useLoad(() => fetchBytes(`/v1/inbound-messages/${message.id}/body`, PREVIEW_BYTES), [message.id]);
  if (preview.error) return <ErrorBox error={preview.error} />;
  if (!preview.value) return <Loading when={true} />;
  const text = asText(preview.value.bytes);
  return (
    <section aria-label="Body" data-testid="body-preview">
      <p class="meta-line">
        The first <span data-testid="preview-size">{formatBytes(preview.value.bytes.length)}</span> of {formatBytes(preview.value.total)} · SHA-256{' '}
        <code>{message.payload_sha256}</code> (stored)
      </p>
      <pre class={text === null ? 'body hexdump' : 'body'}>{text ?? hexDump(preview.value.bytes)}</pre>
    </section>
  );
}

/**
 * What the app sent back: JSON laid out, text, or a hex dump. A 2xx answer's body is folded; any
 * other is shown open, as what to read first when the app refused a webhook.
 */
function AnswerBody({ answer }: { answer: InboundAnswerOut }) {
  if (!answer.response_body) return null;
  const bytes = base64ToBytes(answer.response_body);
  const text = asText(bytes);
  const json = text === null ? null : indentJson(text);
  const about = `${formatBytes(bytes.length)}${json !== null ? ', JSON' : text === null ? ', binary' : ''}${answer.response_body_truncated ? ', truncated' : ''}`;
  const body = (
    <pre class="body" data-testid="answer-body">
      {json ?? text ?? hexDump(bytes)}
    </pre>
  );
  if (isSuccess(answer.status)) {
    return (
      <details>
        <summary>Response body ({about})</summary>
        {body}
      </details>
    );
  }
  return (
    <>
      <p class="meta-line">Response body ({about})</p>
      {body}
    </>
  );
}

function Answers({ message }: { message: InboundMessageOut }) {
  const answers = message.answers;
  if (answers.length === 0) {
    if (message.response_status === null && message.last_error === null) return <p class="muted">No answer yet.</p>;
    return (
      <p>
        <span class={`badge ${statusClass(message.response_status)}`}>{message.response_status ?? 'no HTTP answer'}</span> {formatMs(message.response_latency_ms)}
        {message.last_error ? <span class="error"> {message.last_error}</span> : null}
      </p>
    );
  }
  return (
    <div data-testid="answers">
      {answers.map((answer) => (
        <article key={answer.listener} class="panel">
          <h3>
            Listener {answer.listener} · <span class={`badge ${statusClass(answer.status)}`}>{answer.status ?? 'no HTTP answer'}</span> · {formatMs(answer.latency_ms)}
            {answer.answered_at ? (
              <span class="muted">
                {' '}
                · <Time iso={answer.answered_at} />
              </span>
            ) : null}{' '}
            <ResignedBadge when={answer.resigned} />
          </h3>
          {answer.error ? <p class="error">{answer.error}</p> : null}
          {answer.response_headers.length > 0 ? (
            <details>
              <summary>Response headers ({answer.response_headers.length})</summary>
              <HeadersTable headers={answer.response_headers} label={`Response headers of listener ${answer.listener}`} testid="response-headers" />
            </details>
          ) : null}
          <AnswerBody answer={answer} />
        </article>
      ))}
    </div>
  );
}

/** Forward-mode deliveries and CLI reports, oldest first. */
function Attempts({ messageId, tick }: { messageId: string; tick: number }) {
  const attempts = useLoad(() => api<AttemptOut[]>('GET', `/v1/inbound-messages/${messageId}/attempts`).then((r) => r.data), [messageId, tick]);
  return <AttemptsTable attempts={attempts} testid="inbound-attempts" />;
}

function Curl({ message }: { message: InboundMessageOut }) {
  const [base, setBase] = useState('http://localhost:3000');
  const body = typeof message.body === 'string' && message.body_encoding === 'base64' ? base64ToBytes(message.body) : new Uint8Array();
  const url = `${base.replace(/\/+$/, '')}${message.path || '/'}${message.query ? `?${message.query}` : ''}`;
  const command = curlCommand(message.method, url, message.raw_headers, body);
  return (
    <details class="panel">
      <summary>Copy as curl</summary>
      <label>
        Local URL <input value={base} onInput={(e) => setBase(e.currentTarget.value)} />
      </label>{' '}
      <CopyButton label="Copy the curl command" text={() => command} />
      <pre class="body" data-testid="curl">
        {command}
      </pre>
    </details>
  );
}

export function InboundMessage({ messageId }: { messageId: string }) {
  const message = useLoad(
    () => api<InboundMessageOut>('GET', `/v1/inbound-messages/${messageId}?body_encoding=base64&body_max_bytes=${WHOLE_BODY_BYTES}`).then((r) => r.data),
    [messageId],
  );
  const endpointId = message.value?.inbound_endpoint_id;
  const endpoint = useLoad(
    () => (endpointId ? api<InboundEndpointOut>('GET', `/v1/inbound-endpoints/${endpointId}`).then((r) => r.data) : Promise.resolve(undefined)),
    [endpointId],
  );
  const [replayed, setReplayed] = useState<InboundReplayOut | null>(null);
  const [tick, setTick] = useState(0);
  const [error, setError] = useState<unknown>(undefined);
  const replay = async () => {
    setError(undefined);
    try {
      const { data } = await api<InboundReplayOut>('POST', `/v1/inbound-messages/${messageId}/replay`);
      setReplayed(data);
      setTimeout(() => (message.reload(), setTick((n) => n + 1)), 1500);
    } catch (caught) {
      setError(caught);
    }
  };
  const m = message.value;
  return (
    <section aria-labelledby="message-title">
      <p class="crumbs">
        <a href="#/">Inbound endpoints</a> / {endpointId ? <a href={`#/inbound/${endpointId}`}>{endpoint.value?.name ?? endpointId}</a> : '…'} / message
      </p>
      <h1 id="message-title">{m ? messageTitle(m) : 'Message'}</h1>
      <ErrorBox error={message.error} />
      <Loading when={message.loading && !m} />
      {m ? (
        <>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{m.id}</code>
            </dd>
            <dt>Request</dt>
            <dd>
              <code data-testid="request-line">{requestLine(m)}</code>
            </dd>
            <dt>Received</dt>
            <dd>
              <Time iso={m.received_at} />
            </dd>
            <dt>Provider</dt>
            <dd data-testid="provider">{providerName(m.provider) ?? '—'}</dd>
            <dt>Event type</dt>
            <dd data-testid="event-type">{m.event_type ?? '—'}</dd>
            <dt>Verified</dt>
            <dd>{m.verified.length === 0 ? 'no check configured' : m.verified.join(', ')}</dd>
            <dt>Status</dt>
            <dd>
              {m.status} · {m.attempt_count} attempt{m.attempt_count === 1 ? '' : 's'} · {m.replay_count} replay{m.replay_count === 1 ? '' : 's'}
            </dd>
            <dt>Content-Type</dt>
            <dd>{m.content_type || '—'}</dd>
            {m.replay_of !== null ? (
              <>
                <dt>Edited copy of</dt>
                <dd data-testid="copy-of">
                  <a href={`#/inbound-messages/${m.replay_of}`}>{m.replay_of}</a> · {m.signed ? 'signed by the server' : 'unsigned'}
                </dd>
              </>
            ) : null}
          </dl>
          <div class="row wrap">
            <button type="button" onClick={replay} disabled={m.deleted_at !== undefined}>
              Replay {endpoint.value?.mode === 'forward' ? 'to the forward URL' : 'to connected listeners'}
            </button>
            {endpoint.value ? <EditAndReplay key={m.id} message={m} endpoint={endpoint.value} /> : null}
            {replayed ? (
              <span role="status">
                Replayed: replay #{replayed.replay_count}, {replayed.status}
              </span>
            ) : null}
          </div>
          <ErrorBox error={error} />
          {/* Request and answer side by side where the screen is wide enough (styles.css, .exchange). */}
          <div class="exchange">
            <section aria-labelledby="request-title" data-testid="request-side">
              <h2 id="request-title">Request</h2>
              <h3>Headers</h3>
              <HeadersTable headers={m.raw_headers} label="Request headers as received" />
              <h3>Body</h3>
              {m.deleted_at ? (
                <p class="muted">
                  Deleted <Time iso={m.deleted_at} />: the body is gone.
                </p>
              ) : null}
              {m.body_error ? <p class="error">The payload could not be read from storage.</p> : null}
              {typeof m.body === 'string' && m.body_encoding === 'base64' ? <BodyView base64={m.body} contentType={m.content_type} storedSha256={m.payload_sha256} /> : null}
              {typeof m.body === 'string' ? <Curl message={m} /> : null}
              {!m.deleted_at && !m.body_error && m.body === undefined && m.size_bytes > WHOLE_BODY_BYTES ? <BodyPreview message={m} /> : null}
              {!m.deleted_at && !m.body_error && (m.body !== undefined || m.size_bytes > WHOLE_BODY_BYTES) ? <DownloadBody message={m} /> : null}
            </section>
            <section aria-labelledby="answer-title" data-testid="answer-side">
              <h2 id="answer-title">Answer{endpoint.value?.mode === 'forward' ? ' of the forward URL' : 's of the local app'}</h2>
              <Answers message={m} />
            </section>
          </div>
          <h2>Attempts</h2>
          <Attempts messageId={m.id} tick={tick} />
        </>
      ) : null}
    </section>
  );
}
