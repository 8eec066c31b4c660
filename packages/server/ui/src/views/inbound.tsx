import { Component } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { InboundAnswerSummaryOut, InboundEndpointCreateOut, InboundEndpointOut, InboundEndpointSummaryOut, RejectionOut, WatchFrame } from '@hookrelay/shared';
import { KEY_REVOKED_CLOSE } from '@hookrelay/shared/sockets';
import { api, keyRefused, openSocket, page, type Page } from '../api.js';
import { ConfirmButton, CopyButton, ErrorBox, KeyTable, ListState, Loading, Pager, useLoad } from '../components.js';
import { formatBytes, formatMs, formatTime, statusClass } from '../format.js';
import { RefusedRequests } from './rejections.js';
import type { MessageRow } from './types.js';

function CreateInbound({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'cli' | 'forward'>('cli');
  const [url, setUrl] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [created, setCreated] = useState<InboundEndpointCreateOut | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const body = mode === 'forward' ? { name, mode, url } : { name, mode };
      const { data } = await api<InboundEndpointCreateOut>('POST', '/v1/inbound-endpoints', { body });
      setCreated(data);
      setName('');
      setUrl('');
      onCreated();
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <details class="panel">
      <summary>New inbound endpoint</summary>
      <form class="row wrap" onSubmit={submit}>
        <label>
          Name <input value={name} onInput={(e) => setName(e.currentTarget.value)} required maxLength={200} />
        </label>
        <label>
          Mode{' '}
          <select value={mode} onChange={(e) => setMode(e.currentTarget.value as 'cli' | 'forward')}>
            <option value="cli">cli</option>
            <option value="forward">forward</option>
          </select>
        </label>
        {mode === 'forward' ? (
          <label>
            Forward URL <input type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} required placeholder="https://" />
          </label>
        ) : null}
        <button type="submit">Create</button>
      </form>
      <ErrorBox error={error} />
      {created ? (
        <p role="status">
          Created <strong>{created.name}</strong>. Ingest URL (its secret token is shown only now; the endpoint's page shows it again):{' '}
          <code>{created.ingest_url}</code> <CopyButton label="Copy the ingest URL" text={() => created.ingest_url} />
          {created.signing_secret ? (
            <>
              {' '}
              Signing secret (shown once): <code>{created.signing_secret}</code>
            </>
          ) : null}
        </p>
      ) : null}
    </details>
  );
}

/** The ingest URL needs the endpoint's record (it holds the secret token, so lists omit it). */
function IngestUrl({ id }: { id: string }) {
  const { value } = useLoad(() => api<InboundEndpointOut>('GET', `/v1/inbound-endpoints/${id}`).then((r) => r.data.ingest_url), [id]);
  if (value === undefined) return <span class="muted">…</span>;
  return (
    <span class="nowrap">
      <code class="url">{value}</code> <CopyButton label="Copy the ingest URL" text={() => value} />
    </span>
  );
}

export function InboundEndpoints() {
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const list = useLoad(() => page<InboundEndpointSummaryOut>('/v1/inbound-endpoints', { cursor, limit: 50 }), [cursor]);
  const [error, setError] = useState<unknown>(undefined);
  const act = async (method: string, path: string) => {
    setError(undefined);
    try {
      await api(method, path);
      list.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <section aria-labelledby="inbound-title">
      <h1 id="inbound-title">Inbound endpoints</h1>
      <CreateInbound onCreated={list.reload} />
      <ListState list={list} error={error} empty="No inbound endpoint yet." />
      {list.value && list.value.data.length > 0 ? (
        <KeyTable
          label="Inbound endpoints"
          testid="inbound-endpoints"
          head={
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Mode</th>
              <th scope="col">State</th>
              <th scope="col">Listeners</th>
              <th scope="col">Messages 24 h</th>
              <th scope="col">Ingest URL</th>
              <th scope="col">Actions</th>
            </tr>
          }
        >
          {list.value.data.map((endpoint) => (
            <tr key={endpoint.id}>
              <td>
                <a href={`#/inbound/${endpoint.id}`}>{endpoint.name || endpoint.id}</a>
              </td>
              <td>{endpoint.mode}</td>
              <td>{endpoint.paused ? <span class="badge warn">paused</span> : <span class="badge ok">active</span>}</td>
              <td class="num">{endpoint.mode === 'cli' ? endpoint.connected_listeners : '—'}</td>
              <td class="num">{endpoint.messages_24h}</td>
              <td>
                <IngestUrl id={endpoint.id} />
              </td>
              <td class="nowrap">
                <button type="button" class="small" onClick={() => act('POST', `/v1/inbound-endpoints/${endpoint.id}/${endpoint.paused ? 'resume' : 'pause'}`)}>
                  {endpoint.paused ? 'Resume' : 'Pause'}
                </button>{' '}
                <ConfirmButton
                  label="Delete"
                  question={`Delete the inbound endpoint “${endpoint.name}”? Its ingest URL stops accepting webhooks.`}
                  confirm="Delete endpoint"
                  onConfirm={() => act('DELETE', `/v1/inbound-endpoints/${endpoint.id}`)}
                />
              </td>
            </tr>
          ))}
        </KeyTable>
      ) : null}
      <Pager hasPrevious={cursor !== undefined} next={list.value?.nextCursor ?? null} onFirst={() => setCursor(undefined)} onNext={setCursor} />
    </section>
  );
}

export interface MessageFilters {
  event_type: string;
  answer: '' | '2xx' | '4xx' | '5xx' | 'none';
  received_after: string;
  received_before: string;
}

const NO_FILTERS: MessageFilters = { event_type: '', answer: '', received_after: '', received_before: '' };

/** `<input type=datetime-local>` holds local time without a zone: the API wants RFC 3339. */
const toIso = (local: string) => (local === '' ? undefined : new Date(local).toISOString());

/** Each CLI listener's latest answer; a forward-mode message has the forward URL's latest one instead. */
function AnswerCell({ row }: { row: MessageRow }) {
  const answers: (Pick<InboundAnswerSummaryOut, 'status' | 'error'> & { listener: string; latency_ms: number | null })[] =
    row.answers.length > 0 ? row.answers : row.response_status !== null ? [{ listener: '', status: row.response_status, latency_ms: row.response_latency_ms, error: null }] : [];
  if (answers.length === 0) return <span class="muted">no answer</span>;
  return (
    <>
      {answers.map((answer) => (
        <span key={answer.listener} class={`badge ${statusClass(answer.status)}`} title={answer.error ?? undefined}>
          {answer.listener ? `${answer.listener}: ` : ''}
          {answer.status ?? 'no HTTP answer'} · {formatMs(answer.latency_ms)}
        </span>
      ))}
    </>
  );
}

/** The watch socket's first reconnection delay, and the longest. */
const WATCH_RETRY_MS = 2000;
const WATCH_RETRY_MAX_MS = 30_000;

/** How many rows the live list keeps as new ones arrive (older ones are a page away). */
const LIVE_ROWS = 200;

/** The live list: the first page (newest first), then every new message the watch socket announces. */
export function InboundMessages({ endpointId }: { endpointId: string }) {
  const endpoint = useLoad(() => api<InboundEndpointOut>('GET', `/v1/inbound-endpoints/${endpointId}`).then((r) => r.data), [endpointId]);
  const [filters, setFilters] = useState<MessageFilters>(NO_FILTERS);
  const [draft, setDraft] = useState<MessageFilters>(NO_FILTERS);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [rows, setRows] = useState<MessageRow[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [live, setLive] = useState<'connecting' | 'live' | 'offline'>('connecting');
  const [unseen, setUnseen] = useState(0);
  const [refused, setRefused] = useState<RejectionOut[]>([]);
  const filtered = filters !== NO_FILTERS;
  const atTop = cursor === undefined;
  const atTopRef = useRef(atTop);
  atTopRef.current = atTop && !filtered;

  const load = async (): Promise<Page<MessageRow>> =>
    page<MessageRow>(`/v1/inbound-endpoints/${endpointId}/messages`, {
      limit: 50,
      cursor,
      event_type: filters.event_type,
      answer: filters.answer,
      received_after: toIso(filters.received_after),
      received_before: toIso(filters.received_before),
    });

  useEffect(() => {
    let current = true;
    setLoading(true);
    load().then(
      (result) => {
        if (!current) return;
        setRows(result.data);
        setNext(result.nextCursor);
        setError(undefined);
        setLoading(false);
        setUnseen(0);
      },
      (caught: unknown) => current && (setError(caught), setLoading(false)),
    );
    return () => {
      current = false;
    };
  }, [endpointId, cursor, filters]);

  // Answers and replays change after a message arrives: the visible first page is read again now and then.
  useEffect(() => {
    if (!atTop || filtered) return;
    const timer = setInterval(() => {
      if (document.hidden) return;
      load().then((result) => setRows((old) => mergeRows(result.data, old)), () => undefined);
    }, 3000);
    return () => clearInterval(timer);
  }, [endpointId, atTop, filtered]);

  useEffect(() => {
    let socket: WebSocket | undefined;
    let stopped = false;
    let retry: ReturnType<typeof setTimeout> | undefined;
    // Doubles while the socket does not come up (a server at its socket limit refuses the upgrade,
    // which a browser reports only as a close), back to the first once it is live.
    let retryMs = WATCH_RETRY_MS;
    const again = () => {
      if (stopped) return;
      retry = setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, WATCH_RETRY_MAX_MS);
    };
    const connect = async () => {
      try {
        socket = await openSocket(`/v1/inbound-endpoints/${endpointId}/watch`);
      } catch {
        setLive('offline');
        again();
        return;
      }
      if (stopped) return socket.close();
      // Frames that arrive together are shown in one render (a burst of webhooks is one update).
      let pending: MessageRow[] = [];
      const flush = () => {
        const batch = pending;
        pending = [];
        if (atTopRef.current) setRows((old) => mergeRows(batch, old).slice(0, LIVE_ROWS));
        else setUnseen((n) => n + batch.length);
      };
      socket.onmessage = (event) => {
        const frame = JSON.parse(String(event.data)) as WatchFrame;
        if (frame.type === 'ready') {
          setLive('live');
          retryMs = WATCH_RETRY_MS;
        }
        if (frame.type === 'rejection') {
          const rejection = frame.rejection;
          setRefused((old) => [rejection, ...old].slice(0, LIVE_ROWS));
          return;
        }
        if (frame.type !== 'message') return;
        if (pending.length === 0) setTimeout(flush, 16);
        pending.push(frame.message);
      };
      socket.onclose = (event) => {
        setLive('offline');
        // The key was revoked: no socket or call will work with it again.
        if (event.code === KEY_REVOKED_CLOSE.code && !stopped) return keyRefused('the API key was revoked: the server closed the live view; sign in with another key');
        again();
      };
    };
    void connect();
    return () => {
      stopped = true;
      clearTimeout(retry);
      socket?.close();
    };
  }, [endpointId]);

  const name = endpoint.value?.name ?? endpointId;
  return (
    <section aria-labelledby="messages-title">
      <p class="crumbs">
        <a href="#/">Inbound endpoints</a> / {name}
      </p>
      <h1 id="messages-title">
        {name}{' '}
        <span class={`badge ${live === 'live' ? 'ok' : 'warn'}`} data-testid="live-state">
          {live}
        </span>
      </h1>
      {endpoint.value ? (
        <p class="meta-line">
          {endpoint.value.mode} mode{endpoint.value.mode === 'forward' ? ` → ${endpoint.value.url}` : ''} · ingest URL <code class="url">{endpoint.value.ingest_url}</code>{' '}
          <CopyButton label="Copy the ingest URL" text={() => endpoint.value!.ingest_url} />
        </p>
      ) : null}
      <ErrorBox error={endpoint.error} />
      <RefusedRequests kind="inbound" endpointId={endpointId} incoming={refused} />
      <form
        class="row wrap filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          setCursor(undefined);
          setFilters(JSON.stringify(draft) === JSON.stringify(NO_FILTERS) ? NO_FILTERS : { ...draft });
        }}
      >
        <label>
          Event type <input value={draft.event_type} placeholder="push, invoice.*" onInput={(e) => setDraft({ ...draft, event_type: e.currentTarget.value })} />
        </label>
        <label>
          Answer{' '}
          <select value={draft.answer} onChange={(e) => setDraft({ ...draft, answer: e.currentTarget.value as MessageFilters['answer'] })}>
            <option value="">any</option>
            <option value="2xx">2xx</option>
            <option value="4xx">4xx</option>
            <option value="5xx">5xx</option>
            <option value="none">no answer</option>
          </select>
        </label>
        <label>
          From <input type="datetime-local" step="1" value={draft.received_after} onInput={(e) => setDraft({ ...draft, received_after: e.currentTarget.value })} />
        </label>
        <label>
          Until <input type="datetime-local" step="1" value={draft.received_before} onInput={(e) => setDraft({ ...draft, received_before: e.currentTarget.value })} />
        </label>
        <button type="submit">Apply</button>
        <button
          type="button"
          onClick={() => {
            setDraft(NO_FILTERS);
            setFilters(NO_FILTERS);
            setCursor(undefined);
          }}
        >
          Clear
        </button>
      </form>
      {unseen > 0 ? (
        <p role="status">
          {unseen} new message{unseen === 1 ? '' : 's'} since this page was loaded.{' '}
          <button type="button" class="small" onClick={() => (setFilters(NO_FILTERS), setDraft(NO_FILTERS), setCursor(undefined), setUnseen(0))}>
            Show newest
          </button>
        </p>
      ) : null}
      <ErrorBox error={error} />
      <Loading when={loading && rows.length === 0} />
      {!loading && rows.length === 0 && !error ? (
        <p class="muted">{filtered ? 'No message matches the filters.' : 'No message yet: post a webhook to the ingest URL and it appears here.'}</p>
      ) : null}
      {rows.length > 0 ? (
        <KeyTable
          label="Messages, newest first"
          testid="messages"
          head={
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Method</th>
              <th scope="col">Path</th>
              <th scope="col">Size</th>
              <th scope="col">Event type</th>
              <th scope="col">Verified</th>
              <th scope="col">Answer</th>
              <th scope="col">Replays</th>
            </tr>
          }
        >
          {rows.map((row) => (
            <MessageRowView key={row.id} row={row} />
          ))}
        </KeyTable>
      ) : null}
      <Pager hasPrevious={cursor !== undefined} next={next} onFirst={() => setCursor(undefined)} onNext={setCursor} />
    </section>
  );
}

/**
 * One row of the live list. Rows keep their object while unchanged (see mergeRows), so at 50
 * webhooks a second only the new rows render, not the whole table each time.
 */
class MessageRowView extends Component<{ row: MessageRow }> {
  override shouldComponentUpdate(next: { row: MessageRow }): boolean {
    return next.row !== this.props.row;
  }

  override render({ row }: { row: MessageRow }) {
    return (
      <tr data-message-id={row.id}>
        <td class="nowrap">
          <a href={`#/inbound-messages/${row.id}`}>{formatTime(row.received_at)}</a>
        </td>
        <td>{row.method}</td>
        <td class="path">{row.query ? `${row.path}?${row.query}` : row.path}</td>
        <td class="num">{formatBytes(row.size_bytes)}</td>
        <td>{row.event_type ?? <span class="muted">—</span>}</td>
        <td>{row.verified.length === 0 ? <span class="muted">none set</span> : row.verified.join(', ')}</td>
        <td>
          <AnswerCell row={row} />
        </td>
        <td class="num">{row.replay_count}</td>
      </tr>
    );
  }
}

/** `fresh` rows replace the old ones of the same id; the result stays newest first. */
function mergeRows(fresh: MessageRow[], old: MessageRow[]): MessageRow[] {
  const byId = new Map(old.map((row) => [row.id, row]));
  for (const row of fresh) byId.set(row.id, row);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}
