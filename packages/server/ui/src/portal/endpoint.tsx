import { useMemo, useState } from 'preact/hooks';
import type { BulkJobOut, EndpointOut, LogRecordOut, MessageCreateOut } from '@hookrelay/shared';
import { api } from '../api.js';
import { ErrorBox, Time } from '../components.js';
import { formatMs, localTimeToIso, statusClass } from '../format.js';
import { useLoad, usePagedList } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';
import { useCatalogue } from './catalogue.js';
import { EndpointForm } from './endpoints.js';
import { usePortalFrames } from './live.js';

/** Rows per page of an endpoint's messages: the newest ones are what the live socket follows (PORTAL_WATCH_LIMITS). */
const PAGE_SIZE = 25;
/** What "retry every failed message" takes: those failed for good and those waiting for their next try. */
const FAILED = ['failed_permanent', 'pending_retry'];

const MESSAGE_COLUMNS: readonly Column<LogRecordOut>[] = [
  { head: 'Created', class: 'nowrap', cell: (m) => <a href={`#/messages/${m.message_id}`}><Time iso={m.created_at} /></a> },
  { head: 'Status', cell: (m) => <span data-testid="message-status">{m.status}</span> },
  { head: 'Attempts', class: 'num', cell: (m) => m.attempt_count },
  {
    head: 'Last answer',
    class: 'nowrap',
    cell: (m) => (
      <>
        <span class={`badge ${statusClass(m.response_status)}`}>{m.response_status ?? '—'}</span> {formatMs(m.response_latency_ms)}
      </>
    ),
  },
  { head: 'Last error', class: 'error-text', cell: (m) => m.last_error ?? '' },
];

/** Every failed message of the endpoint since a time, retried by one bulk job whose progress shows here. */
function RetryFailed({ endpointId }: { endpointId: string }) {
  const [since, setSince] = useState('');
  const [job, setJob] = useState<BulkJobOut | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const createdAfter = localTimeToIso(since);
      if (createdAfter === undefined) throw new Error('give the time to retry from');
      let { data } = await api<BulkJobOut>('POST', '/v1/bulk-retries', { body: { filter: { endpoint_id: endpointId, created_after: createdAfter, status: FAILED } } });
      setJob(data);
      // The job runs on the server in chunks: its counts, read until it ends (bounded).
      for (let i = 0; i < 120 && data.status === 'running'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        data = (await api<BulkJobOut>('GET', `/v1/bulk-retries/${data.id}`)).data;
        setJob(data);
      }
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <form class="row wrap filters" onSubmit={submit}>
      <label>
        Retry every failed message since{' '}
        <input type="datetime-local" step="1" value={since} required onInput={(e) => setSince(e.currentTarget.value)} />
      </label>
      <button type="submit">Retry failed</button>
      {job ? (
        <span role="status" data-testid="bulk-retry">
          {job.status === 'running' ? 'retrying' : job.status}: {job.done} of {job.matched} retried
        </span>
      ) : null}
      <ErrorBox error={error} />
    </form>
  );
}

/** The example of a catalogue type, sent to this endpoint. */
function TestEvent({ endpointId }: { endpointId: string }) {
  const catalogue = useCatalogue();
  const withExample = (catalogue.value ?? []).filter((t) => t.example !== null);
  const [type, setType] = useState('');
  const [sent, setSent] = useState<MessageCreateOut | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const chosen = type || withExample[0]?.name || '';
  const send = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      setSent((await api<MessageCreateOut>('POST', '/v1/portal/test-events', { body: { endpoint_id: endpointId, event_type: chosen } })).data);
    } catch (caught) {
      setError(caught);
    }
  };
  if (withExample.length === 0) return null;
  return (
    <form class="row wrap filters" onSubmit={send}>
      <label>
        Test event{' '}
        <select value={chosen} onChange={(e) => setType(e.currentTarget.value)}>
          {withExample.map((t) => (
            <option key={t.name} value={t.name}>
              {t.name}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Send test event</button>
      {sent ? (
        <span role="status">
          Sent: <a href={`#/messages/${sent.message_id}`}>message {sent.message_id}</a>
        </span>
      ) : null}
      <ErrorBox error={error ?? catalogue.error} />
    </form>
  );
}

/** One endpoint: its settings (edit), and its messages newest first, live as they are attempted. */
export function PortalEndpoint({ endpointId, readOnly }: { endpointId: string; readOnly: boolean }) {
  const endpoint = useLoad(() => api<EndpointOut>('GET', `/v1/endpoints/${encodeURIComponent(endpointId)}`).then((r) => r.data), [endpointId]);
  const [shown, setShown] = useState<EndpointOut | null>(null);
  const list = usePagedList<LogRecordOut>('/v1/logs', { endpoint_id: endpointId }, { limit: PAGE_SIZE });
  const catalogue = useCatalogue();
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const e = shown?.id === endpointId ? shown : endpoint.value;

  usePortalFrames(
    (frames) => {
      for (const frame of frames) {
        if (frame.type === 'endpoint' && frame.endpoint.id === endpointId) setShown(frame.endpoint);
        // Deleted elsewhere (another tab, the operator): the page reads what the API says of it now.
        if (frame.type === 'endpoint_removed' && frame.endpoint_id === endpointId) {
          setShown(null);
          endpoint.reload();
        }
        if (frame.type !== 'message' || frame.endpoint_id !== endpointId) continue;
        const { message } = frame;
        list.update((rows) => {
          const at = rows.findIndex((row) => row.message_id === message.message_id);
          if (at >= 0) return rows.map((row, i) => (i === at ? message : row));
          // A new message belongs at the top of the first page only.
          return list.atFirst ? [message, ...rows].slice(0, PAGE_SIZE) : rows;
        });
      }
    },
    () => {
      endpoint.reload();
      list.reload();
    },
  );

  const retry = async (id: string) => {
    setError(undefined);
    try {
      await api('POST', `/v1/messages/${id}/retry`);
    } catch (caught) {
      setError(caught);
    }
  };
  const columns = useMemo<readonly Column<LogRecordOut>[]>(
    () =>
      readOnly
        ? MESSAGE_COLUMNS
        : [
            ...MESSAGE_COLUMNS,
            {
              head: 'Retry',
              cell: (m) =>
                m.status === 'failed_permanent' || m.status === 'pending_retry' ? (
                  <button type="button" class="small" aria-label={`Retry the message of ${m.created_at}`} onClick={() => void retry(m.message_id)}>
                    Retry
                  </button>
                ) : null,
            },
          ],
    [readOnly],
  );

  return (
    <section aria-labelledby="endpoint-title">
      <p class="crumbs">
        <a href="#/">Endpoints</a> / endpoint
      </p>
      <h1 id="endpoint-title">{e ? e.url : `Endpoint ${endpointId}`}</h1>
      <ErrorBox error={endpoint.error} />
      {e ? (
        <>
          <dl class="facts">
            <dt>Description</dt>
            <dd data-testid="endpoint-description">{e.description === '' ? '—' : e.description}</dd>
            <dt>Event types</dt>
            <dd data-testid="endpoint-types">{e.event_types === null ? 'every type' : e.event_types.join(', ')}</dd>
            <dt>State</dt>
            <dd>{e.paused ? <span class="badge warn">paused{e.paused_reason === 'failing' ? ': its deliveries kept failing' : ''}</span> : <span class="badge ok">active</span>}</dd>
          </dl>
          {readOnly ? null : editing ? (
            <div class="panel">
              <h2>Edit the endpoint</h2>
              <EndpointForm
                initial={e}
                catalogue={catalogue.value ?? []}
                submitLabel="Save"
                onCancel={() => setEditing(false)}
                onSubmit={async (body) => {
                  setShown((await api<EndpointOut>('PATCH', `/v1/endpoints/${endpointId}`, { body })).data);
                  setEditing(false);
                }}
              />
            </div>
          ) : (
            <div class="row">
              <button type="button" onClick={() => setEditing(true)}>
                Edit
              </button>
            </div>
          )}
          {readOnly ? null : <TestEvent endpointId={endpointId} />}
          <h2>Messages</h2>
          {readOnly ? null : <RetryFailed endpointId={endpointId} />}
          <ErrorBox error={error} />
          <ResourceTable list={list} label="Messages, newest first" testid="portal-messages" columns={columns} rowKey={(m) => m.message_id} rowAttributes={(m) => ({ 'data-message-id': m.message_id })} empty="No message yet." />
        </>
      ) : null}
    </section>
  );
}
