import { useMemo, useState } from 'preact/hooks';
import type { PullEndpointOut, PullEventAckOut, PullEventDetailOut, PullEventOut } from '@hookrelay/shared';
import { api } from '../api.js';
import { BodyView, ConfirmButton, ErrorBox, HeadersTable, Loading, Time } from '../components.js';
import { formatBytes, localTimeToIso } from '../format.js';
import { useLoad, usePagedList } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';
import { RefusedRequests } from './rejections.js';

const ENDPOINT_COLUMNS: readonly Column<PullEndpointOut>[] = [
  { head: 'Name', cell: (endpoint) => <a href={`#/pull/${endpoint.id}`}>{endpoint.name}</a> },
  { head: 'Description', cell: (endpoint) => endpoint.description },
  { head: 'State', cell: (endpoint) => (endpoint.paused ? <span class="badge warn">paused</span> : <span class="badge ok">active</span>) },
  { head: 'Event type from', cell: (endpoint) => (endpoint.event_type_source ? `${endpoint.event_type_source}: ${endpoint.event_type_path ?? ''}` : '—') },
  { head: 'Retention', class: 'num', cell: (endpoint) => `${endpoint.retention_days} days` },
];

export function PullEndpoints() {
  const list = usePagedList<PullEndpointOut>('/v1/pull-endpoints');
  return (
    <section aria-labelledby="pull-title">
      <h1 id="pull-title">Pull endpoints</h1>
      <ResourceTable list={list} label="Pull endpoints" testid="pull-endpoints" columns={ENDPOINT_COLUMNS} rowKey={(e) => e.id} empty="No pull endpoint yet." />
    </section>
  );
}

interface EventFilters {
  status: string[];
  event_type: string;
  received_after: string;
  received_before: string;
}

export function PullEvents({ endpointId }: { endpointId: string }) {
  const endpoint = useLoad(() => api<PullEndpointOut>('GET', `/v1/pull-endpoints/${endpointId}`).then((r) => r.data), [endpointId]);
  const [filters, setFilters] = useState<EventFilters>({ status: ['stored'], event_type: '', received_after: '', received_before: '' });
  const [draft, setDraft] = useState<EventFilters>(filters);
  const list = usePagedList<PullEventOut>(
    `/v1/pull-endpoints/${endpointId}/events`,
    {
      status: filters.status.join(','),
      event_type: filters.event_type,
      received_after: localTimeToIso(filters.received_after),
      received_before: localTimeToIso(filters.received_before),
    },
    { limit: 100 },
  );
  const columns: readonly Column<PullEventOut>[] = useMemo(
    () => [
      { head: 'Received', class: 'nowrap', cell: (event) => <a href={`#/pull/${endpointId}/events/${event.id}`}><Time iso={event.received_at} /></a> },
      { head: 'Status', cell: (event) => event.status },
      { head: 'Event type', cell: (event) => event.event_type ?? '—' },
      { head: 'Size', class: 'num', cell: (event) => formatBytes(event.size_bytes) },
    ],
    [endpointId],
  );
  const toggle = (status: string, on: boolean) => setDraft({ ...draft, status: on ? [...draft.status, status] : draft.status.filter((s) => s !== status) });
  const counts = endpoint.value?.event_counts;
  return (
    <section aria-labelledby="pull-events-title">
      <p class="crumbs">
        <a href="#/pull">Pull endpoints</a> / {endpoint.value?.name ?? endpointId}
      </p>
      <h1 id="pull-events-title">{endpoint.value?.name ?? 'Events'}</h1>
      {counts ? (
        <p class="meta-line">
          {counts.stored} stored · {counts.fetched} fetched · {counts.delivered} delivered · {counts.deleted} deleted
        </p>
      ) : null}
      <RefusedRequests kind="pull" endpointId={endpointId} />
      <form
        class="row wrap filters"
        aria-label="Filters"
        onSubmit={(e) => {
          e.preventDefault();
          list.first();
          setFilters({ ...draft });
        }}
      >
        <fieldset class="row">
          <legend>Status</legend>
          {['stored', 'fetched', 'delivered'].map((status) => (
            <label key={status} class="inline">
              <input type="checkbox" checked={draft.status.includes(status)} onChange={(e) => toggle(status, e.currentTarget.checked)} /> {status}
            </label>
          ))}
        </fieldset>
        <label>
          Event type <input value={draft.event_type} onInput={(e) => setDraft({ ...draft, event_type: e.currentTarget.value })} />
        </label>
        <label>
          From <input type="datetime-local" step="1" value={draft.received_after} onInput={(e) => setDraft({ ...draft, received_after: e.currentTarget.value })} />
        </label>
        <label>
          Until <input type="datetime-local" step="1" value={draft.received_before} onInput={(e) => setDraft({ ...draft, received_before: e.currentTarget.value })} />
        </label>
        <button type="submit">Apply</button>
      </form>
      <ResourceTable list={list} error={endpoint.error} label="Events, oldest first" testid="pull-events" columns={columns} rowKey={(e) => e.id} empty="No event matches." />
    </section>
  );
}

export function PullEvent({ endpointId, eventId }: { endpointId: string; eventId: string }) {
  const path = `/v1/pull-endpoints/${endpointId}/events/${eventId}`;
  const event = useLoad(() => api<PullEventDetailOut>('GET', `${path}?body_encoding=base64`).then((r) => r.data), [path]);
  const [error, setError] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | null>(null);
  const act = async (method: string, suffix: string, what: string) => {
    setError(undefined);
    try {
      const { data } = await api<PullEventAckOut | { already_deleted: boolean }>(method, `${path}${suffix}`);
      setDone(`${what}${'already_deleted' in data && data.already_deleted ? ' (it already was)' : ''}`);
      event.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  const e = event.value;
  return (
    <section aria-labelledby="pull-event-title">
      <p class="crumbs">
        <a href="#/pull">Pull endpoints</a> / <a href={`#/pull/${endpointId}`}>events</a> / event
      </p>
      <h1 id="pull-event-title">Event {eventId}</h1>
      <ErrorBox error={event.error} />
      <Loading when={event.loading && !e} />
      {e ? (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="pull-status">{e.deleted_at ? <>deleted <Time iso={e.deleted_at} /></> : e.status}</dd>
            <dt>Event type</dt>
            <dd>{e.event_type ?? '—'}</dd>
            <dt>Received</dt>
            <dd><Time iso={e.received_at} /></dd>
          </dl>
          <div class="row">
            <button type="button" onClick={() => act('POST', '/ack', 'Acknowledged')} disabled={e.deleted_at !== undefined || e.status === 'delivered'}>
              Ack
            </button>
            <ConfirmButton label="Delete" question="Delete this event? Its payload becomes unreachable at once." confirm="Delete event" onConfirm={() => act('DELETE', '', 'Deleted')} />
            {done ? <span role="status">{done}</span> : null}
          </div>
          <ErrorBox error={error} />
          <h2>Headers</h2>
          <HeadersTable headers={e.raw_headers} label="Request headers as received" />
          <h2>Payload</h2>
          {typeof e.body === 'string' && e.body_encoding === 'base64' ? <BodyView base64={e.body} contentType={e.content_type} storedSha256={e.payload_sha256} /> : <p class="muted">No payload.</p>}
        </>
      ) : null}
    </section>
  );
}
