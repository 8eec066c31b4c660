import { useState } from 'preact/hooks';
import type { InboundAnswerSummaryOut, InboundEndpointCreateOut, InboundEndpointOut, InboundEndpointSummaryOut, MessageSearchMeta, RejectionOut } from '@hookrelay/shared';
import { api } from '../api.js';
import { ConfirmButton, CopyButton, ErrorBox, Time } from '../components.js';
import { formatBytes, formatMs, localTimeToIso, providerName, statusClass } from '../format.js';
import { useLoad, usePagedList } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';
import { useWatch } from '../watch.js';
import { ReplayThese } from './bulk-replay.js';
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
  const list = usePagedList<InboundEndpointSummaryOut>('/v1/inbound-endpoints');
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
  const columns: readonly Column<InboundEndpointSummaryOut>[] = [
    { head: 'Name', cell: (endpoint) => <a href={`#/inbound/${endpoint.id}`}>{endpoint.name || endpoint.id}</a> },
    { head: 'Mode', cell: (endpoint) => endpoint.mode },
    { head: 'State', cell: (endpoint) => (endpoint.paused ? <span class="badge warn">paused</span> : <span class="badge ok">active</span>) },
    { head: 'Listeners', class: 'num', cell: (endpoint) => (endpoint.mode === 'cli' ? endpoint.connected_listeners : '—') },
    { head: 'Messages 24 h', class: 'num', cell: (endpoint) => endpoint.messages_24h },
    { head: 'Ingest URL', cell: (endpoint) => <IngestUrl id={endpoint.id} /> },
    {
      head: 'Actions',
      class: 'nowrap',
      cell: (endpoint) => (
        <>
          <button type="button" class="small" onClick={() => act('POST', `/v1/inbound-endpoints/${endpoint.id}/${endpoint.paused ? 'resume' : 'pause'}`)}>
            {endpoint.paused ? 'Resume' : 'Pause'}
          </button>{' '}
          <ConfirmButton
            label="Delete"
            question={`Delete the inbound endpoint “${endpoint.name}”? Its ingest URL stops accepting webhooks.`}
            confirm="Delete endpoint"
            onConfirm={() => act('DELETE', `/v1/inbound-endpoints/${endpoint.id}`)}
          />
        </>
      ),
    },
  ];
  return (
    <section aria-labelledby="inbound-title">
      <h1 id="inbound-title">Inbound endpoints</h1>
      <CreateInbound onCreated={list.reload} />
      <ResourceTable list={list} error={error} label="Inbound endpoints" testid="inbound-endpoints" columns={columns} rowKey={(e) => e.id} empty="No inbound endpoint yet." />
    </section>
  );
}

export interface MessageFilters {
  /** Text searched in the bodies and header values (docs/api.md, Searching what arrived). */
  q: string;
  event_type: string;
  answer: '' | '2xx' | '4xx' | '5xx' | 'none';
  received_after: string;
  received_before: string;
}

const NO_FILTERS: MessageFilters = { q: '', event_type: '', answer: '', received_after: '', received_before: '' };

/** Each CLI listener's latest answer; a forward-mode message has the forward URL's latest one instead. */
function AnswerCell({ row }: { row: MessageRow }) {
  const answers: (Pick<InboundAnswerSummaryOut, 'status' | 'error'> & { listener: string; latency_ms: number | null; resigned: boolean })[] =
    row.answers.length > 0
      ? row.answers
      : row.response_status !== null
        ? [{ listener: '', status: row.response_status, latency_ms: row.response_latency_ms, error: null, resigned: false }]
        : [];
  if (answers.length === 0) return <span class="muted">no answer</span>;
  return (
    <>
      {answers.map((answer) => (
        <span key={answer.listener} class={`badge ${statusClass(answer.status)}`} title={answer.error ?? undefined}>
          {answer.listener ? `${answer.listener}: ` : ''}
          {answer.status ?? 'no HTTP answer'} · {formatMs(answer.latency_ms)}
          {answer.resigned ? ' · re-signed' : ''}
        </span>
      ))}
    </>
  );
}

/** How many rows the live list keeps as new ones arrive (older ones are a page away). */
const LIVE_ROWS = 200;
/** Answers and replays change after a message arrives: the visible first page is read again this often. */
const REFRESH_MS = 3000;

/**
 * The live list's columns read only the row, so a row renders again only when its record changes
 * (see mergeRows): at 50 webhooks a second only the new rows render, not the whole table each time.
 */
const MESSAGE_COLUMNS: readonly Column<MessageRow>[] = [
  {
    head: 'Received',
    class: 'nowrap',
    cell: (row) => (
      <a href={`#/inbound-messages/${row.id}`}>
        <Time iso={row.received_at} />
      </a>
    ),
  },
  { head: 'Method', cell: (row) => row.method },
  { head: 'Path', class: 'path', cell: (row) => (row.query ? `${row.path}?${row.query}` : row.path) },
  { head: 'Size', class: 'num', cell: (row) => formatBytes(row.size_bytes) },
  { head: 'Provider', cell: (row) => providerName(row.provider) ?? <span class="muted">—</span> },
  { head: 'Event type', cell: (row) => row.event_type ?? <span class="muted">—</span> },
  { head: 'Verified', cell: (row) => (row.verified.length === 0 ? <span class="muted">none set</span> : row.verified.join(', ')) },
  { head: 'Answer', cell: (row) => <AnswerCell row={row} /> },
  { head: 'Replays', class: 'num', cell: (row) => (row.edited ? <span class="badge" title={`An edited copy of ${row.replay_of}`}>edited copy</span> : row.replay_count) },
];
const messageRowAttributes = (row: MessageRow) => ({ 'data-message-id': row.id });

/** The live list: the first page (newest first), then every new message the watch socket announces. */
export function InboundMessages({ endpointId }: { endpointId: string }) {
  const endpoint = useLoad(() => api<InboundEndpointOut>('GET', `/v1/inbound-endpoints/${endpointId}`).then((r) => r.data), [endpointId]);
  const [filters, setFilters] = useState<MessageFilters>(NO_FILTERS);
  const [draft, setDraft] = useState<MessageFilters>(NO_FILTERS);
  const [unseen, setUnseen] = useState(0);
  const [refused, setRefused] = useState<RejectionOut[]>([]);
  const filtered = filters !== NO_FILTERS;
  const list = usePagedList<MessageRow>(
    `/v1/inbound-endpoints/${endpointId}/messages`,
    {
      q: filters.q,
      event_type: filters.event_type,
      answer: filters.answer,
      received_after: localTimeToIso(filters.received_after),
      received_before: localTimeToIso(filters.received_before),
    },
    { refreshMs: filtered ? undefined : REFRESH_MS, merge: mergeRows, onPage: () => setUnseen(0) },
  );
  const live = useWatch(`/v1/inbound-endpoints/${endpointId}/watch`, (frames) => {
    const messages = frames.flatMap((frame) => (frame.type === 'message' ? [frame.message] : []));
    const rejections = frames.flatMap((frame) => (frame.type === 'rejection' ? [frame.rejection] : [])).reverse();
    if (rejections.length > 0) setRefused((old) => [...rejections, ...old].slice(0, LIVE_ROWS));
    if (messages.length === 0) return;
    // The socket's messages are unfiltered and newest: they join the list only on its unfiltered first page.
    if (list.atFirst && !filtered) list.update((rows) => mergeRows(messages, rows).slice(0, LIVE_ROWS));
    else setUnseen((n) => n + messages.length);
  });

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
          list.first();
          setFilters(JSON.stringify(draft) === JSON.stringify(NO_FILTERS) ? NO_FILTERS : { ...draft });
        }}
      >
        <label>
          Search <input type="search" value={draft.q} maxLength={256} placeholder="text in a body or header value" onInput={(e) => setDraft({ ...draft, q: e.currentTarget.value })} />
        </label>
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
            list.first();
          }}
        >
          Clear
        </button>
      </form>
      {unseen > 0 ? (
        <p role="status">
          {unseen} new message{unseen === 1 ? '' : 's'} since this page was loaded.{' '}
          <button type="button" class="small" onClick={() => (setFilters(NO_FILTERS), setDraft(NO_FILTERS), list.first(), setUnseen(0))}>
            Show newest
          </button>
        </p>
      ) : null}
      <SearchWindow meta={list.meta} />
      <ReplayThese endpointId={endpointId} filters={filters} mode={endpoint.value?.mode} />
      <ResourceTable
        list={list}
        label="Messages, newest first"
        testid="messages"
        columns={MESSAGE_COLUMNS}
        rowKey={(row) => row.id}
        rowAttributes={messageRowAttributes}
        empty={filtered ? 'No message matches the filters.' : 'No message yet: post a webhook to the ingest URL and it appears here.'}
      />
    </section>
  );
}

/** What a search read: its window (the last 24 hours unless From or Until say otherwise), and where it stopped. */
function SearchWindow({ meta }: { meta: Record<string, unknown> | undefined }) {
  const search = meta?.search as MessageSearchMeta | undefined;
  if (search === undefined) return null;
  return (
    <p class="meta-line search-window" data-testid="search-window">
      Searched for “{search.q}” in {search.bodies === 'inline' ? 'the bodies and header values' : 'the header values (bodies in the object store are not searched)'} of the messages received from{' '}
      <Time iso={search.received_after} /> to <Time iso={search.received_before} />
      {search.scan_limit_reached ? ` · stopped after ${search.scan_limit.toLocaleString('en-US')} messages: the next page reads on` : ''}. A search reads at most 7 days: set From and Until for another window.
    </p>
  );
}

/** `fresh` rows replace the old ones of the same id; the result stays newest first. */
function mergeRows(fresh: MessageRow[], old: MessageRow[]): MessageRow[] {
  const byId = new Map(old.map((row) => [row.id, row]));
  for (const row of fresh) byId.set(row.id, row);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}
