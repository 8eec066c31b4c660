import { useState } from 'preact/hooks';
import type { PullEndpointOut, PullEventAckOut, PullEventDetailOut, PullEventOut } from '@hookrelay/shared';
import { api, page } from '../api.js';
import { BodyView, ConfirmButton, ErrorBox, HeadersTable, KeyTable, ListState, Loading, Pager, useLoad } from '../components.js';
import { formatBytes, formatTime } from '../format.js';
import { RefusedRequests } from './rejections.js';

export function PullEndpoints() {
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const list = useLoad(() => page<PullEndpointOut>('/v1/pull-endpoints', { cursor, limit: 50 }), [cursor]);
  return (
    <section aria-labelledby="pull-title">
      <h1 id="pull-title">Pull endpoints</h1>
      <ListState list={list} empty="No pull endpoint yet." />
      {list.value && list.value.data.length > 0 ? (
        <KeyTable
          label="Pull endpoints"
          testid="pull-endpoints"
          head={
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">State</th>
              <th scope="col">Event type from</th>
              <th scope="col">Retention</th>
            </tr>
          }
        >
          {list.value.data.map((endpoint) => (
            <tr key={endpoint.id}>
              <td>
                <a href={`#/pull/${endpoint.id}`}>{endpoint.name}</a>
              </td>
              <td>{endpoint.description}</td>
              <td>{endpoint.paused ? <span class="badge warn">paused</span> : <span class="badge ok">active</span>}</td>
              <td>{endpoint.event_type_source ? `${endpoint.event_type_source}: ${endpoint.event_type_path ?? ''}` : '—'}</td>
              <td class="num">{endpoint.retention_days} days</td>
            </tr>
          ))}
        </KeyTable>
      ) : null}
      <Pager hasPrevious={cursor !== undefined} next={list.value?.nextCursor ?? null} onFirst={() => setCursor(undefined)} onNext={setCursor} />
    </section>
  );
}

interface EventFilters {
  status: string[];
  event_type: string;
  received_after: string;
  received_before: string;
}

const toIso = (local: string) => (local === '' ? undefined : new Date(local).toISOString());

export function PullEvents({ endpointId }: { endpointId: string }) {
  const endpoint = useLoad(() => api<PullEndpointOut>('GET', `/v1/pull-endpoints/${endpointId}`).then((r) => r.data), [endpointId]);
  const [filters, setFilters] = useState<EventFilters>({ status: ['stored'], event_type: '', received_after: '', received_before: '' });
  const [draft, setDraft] = useState<EventFilters>(filters);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const list = useLoad(
    () =>
      page<PullEventOut>(`/v1/pull-endpoints/${endpointId}/events`, {
        status: filters.status.join(','),
        event_type: filters.event_type,
        received_after: toIso(filters.received_after),
        received_before: toIso(filters.received_before),
        cursor,
        limit: 100,
      }),
    [endpointId, filters, cursor],
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
          setCursor(undefined);
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
      <ListState list={list} error={endpoint.error} empty="No event matches." />
      {list.value && list.value.data.length > 0 ? (
        <KeyTable
          label="Events, oldest first"
          testid="pull-events"
          head={
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Status</th>
              <th scope="col">Event type</th>
              <th scope="col">Size</th>
            </tr>
          }
        >
          {list.value.data.map((event) => (
            <tr key={event.id}>
              <td class="nowrap">
                <a href={`#/pull/${endpointId}/events/${event.id}`}>{formatTime(event.received_at)}</a>
              </td>
              <td>{event.status}</td>
              <td>{event.event_type ?? '—'}</td>
              <td class="num">{formatBytes(event.size_bytes)}</td>
            </tr>
          ))}
        </KeyTable>
      ) : null}
      <Pager hasPrevious={cursor !== undefined} next={list.value?.nextCursor ?? null} onFirst={() => setCursor(undefined)} onNext={setCursor} />
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
            <dd data-testid="pull-status">{e.deleted_at ? `deleted ${formatTime(e.deleted_at)}` : e.status}</dd>
            <dt>Event type</dt>
            <dd>{e.event_type ?? '—'}</dd>
            <dt>Received</dt>
            <dd>{formatTime(e.received_at)}</dd>
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
