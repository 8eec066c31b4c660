import { useMemo, useState } from 'preact/hooks';
import type { EndpointCreateOut, EndpointOut, EndpointSummaryOut, EventTypeOut, RotateSecretOut } from '@hookrelay/shared';
import { api } from '../api.js';
import { ConfirmButton, CopyButton, ErrorBox, Time } from '../components.js';
import { usePagedList } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';
import { useCatalogue } from './catalogue.js';
import { usePortalFrames } from './live.js';

/** A signing secret the server shows once: on creation and on rotation. */
export function SecretOnce({ secret, onDone }: { secret: { label: string; value: string } | null; onDone: () => void }) {
  if (secret === null) return null;
  return (
    <div class="panel" role="status" data-testid="secret">
      <p>
        {secret.label} This is the only time it is shown: store it where your receiver checks signatures.
      </p>
      <p class="row wrap">
        <code class="secret" data-testid="secret-value">{secret.value}</code>
        <CopyButton text={() => secret.value} label="Copy the signing secret" />
        <button type="button" class="small" onClick={onDone}>
          Done
        </button>
      </p>
    </div>
  );
}

/** The add and edit form: URL, description and the catalogue's types (none ticked: every type). */
export function EndpointForm({
  initial,
  catalogue,
  submitLabel,
  onSubmit,
  onCancel,
}: {
  initial: Pick<EndpointOut, 'url' | 'description' | 'event_types'> | null;
  catalogue: readonly EventTypeOut[];
  submitLabel: string;
  onSubmit: (body: { url: string; description: string; event_types: string[] | null }) => Promise<void>;
  onCancel?: () => void;
}) {
  const [url, setUrl] = useState(initial?.url ?? '');
  const [description, setDescription] = useState(initial?.description ?? '');
  const [types, setTypes] = useState<ReadonlySet<string>>(new Set(initial?.event_types ?? []));
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  // A subscription to a glob or a type no longer published stays as it is unless changed here.
  const names = [...new Set([...catalogue.map((t) => t.name), ...types])];
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await onSubmit({ url: url.trim(), description, event_types: types.size === 0 ? null : [...types] });
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const toggle = (name: string, on: boolean) => {
    const next = new Set(types);
    if (on) next.add(name);
    else next.delete(name);
    setTypes(next);
  };
  return (
    <form class="portal-form" onSubmit={submit}>
      <label>
        Endpoint URL
        <input type="url" value={url} required placeholder="https://example.com/webhooks" onInput={(e) => setUrl(e.currentTarget.value)} />
      </label>
      <label>
        Description
        <input value={description} maxLength={500} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <fieldset>
        <legend>Event types (none ticked: every type)</legend>
        {names.length === 0 ? <p class="muted">No event type is published yet.</p> : null}
        {names.map((name) => (
          <label key={name}>
            <input type="checkbox" checked={types.has(name)} onChange={(e) => toggle(name, e.currentTarget.checked)} /> <code>{name}</code>
          </label>
        ))}
      </fieldset>
      <div class="row">
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
        {onCancel ? (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
      <ErrorBox error={error} />
    </form>
  );
}

const BASE_COLUMNS: readonly Column<EndpointSummaryOut>[] = [
  { head: 'URL', cell: (e) => <a href={`#/endpoints/${encodeURIComponent(e.id)}`}>{e.url}</a> },
  { head: 'Description', cell: (e) => e.description },
  { head: 'State', cell: (e) => (e.paused ? <span class="badge warn">paused</span> : <span class="badge ok">active</span>) },
  { head: 'Created', class: 'nowrap', cell: (e) => <Time iso={e.created_at} /> },
];

/** The customer's endpoints: add one, and pause, resume, rotate the secret of or delete each. */
export function PortalEndpoints({ readOnly }: { readOnly: boolean }) {
  const list = usePagedList<EndpointSummaryOut>('/v1/endpoints');
  const catalogue = useCatalogue();
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  usePortalFrames((frames) => {
    if (frames.some((f) => f.type === 'endpoint' || f.type === 'endpoint_removed')) list.reload();
  }, list.reload);

  const act = async (call: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await call();
      list.reload();
    } catch (caught) {
      setError(caught);
    }
  };
  const columns = useMemo<readonly Column<EndpointSummaryOut>[]>(
    () =>
      readOnly
        ? BASE_COLUMNS
        : [
            ...BASE_COLUMNS,
            {
              head: 'Actions',
              class: 'nowrap',
              cell: (e) => (
                <div class="row">
                  <button type="button" class="small" aria-label={`${e.paused ? 'Resume' : 'Pause'} ${e.url}`} onClick={() => act(() => api('POST', `/v1/endpoints/${e.id}/${e.paused ? 'resume' : 'pause'}`))}>
                    {e.paused ? 'Resume' : 'Pause'}
                  </button>
                  <button
                    type="button"
                    class="small"
                    aria-label={`Rotate secret of ${e.url}`}
                    onClick={() =>
                      act(async () => {
                        const { data } = await api<RotateSecretOut>('POST', `/v1/endpoints/${e.id}/rotate-secret`);
                        setSecret({ label: `The new signing secret of ${e.url} (the previous one is accepted until ${new Date(data.previous_key_expires_at).toLocaleString()}).`, value: data.signing_secret });
                      })
                    }
                  >
                    Rotate secret
                  </button>
                  <ConfirmButton label="Delete" question={`Delete the endpoint ${e.url}? Its messages are no longer delivered.`} confirm="Delete endpoint" onConfirm={() => act(() => api('DELETE', `/v1/endpoints/${e.id}`))} />
                </div>
              ),
            },
          ],
    [readOnly],
  );

  return (
    <section aria-labelledby="endpoints-title">
      <h1 id="endpoints-title">Endpoints</h1>
      <p class="muted">Where your webhooks are sent. Each delivery is signed with the endpoint's secret (Standard Webhooks).</p>
      <SecretOnce secret={secret} onDone={() => setSecret(null)} />
      {readOnly ? null : adding ? (
        <div class="panel">
          <h2>Add an endpoint</h2>
          <EndpointForm
            initial={null}
            catalogue={catalogue.value ?? []}
            submitLabel="Add endpoint"
            onCancel={() => setAdding(false)}
            onSubmit={async (body) => {
              const { data } = await api<EndpointCreateOut>('POST', '/v1/endpoints', { body });
              setAdding(false);
              setSecret({ label: `The signing secret of ${data.url}.`, value: data.signing_secret });
              list.reload();
            }}
          />
        </div>
      ) : (
        <button type="button" onClick={() => setAdding(true)}>
          Add endpoint
        </button>
      )}
      <ErrorBox error={error ?? catalogue.error} />
      <ResourceTable list={list} label="Endpoints" testid="portal-endpoints" columns={columns} rowKey={(e) => e.id} rowAttributes={(e) => ({ 'data-endpoint-id': e.id })} empty="No endpoint yet." />
    </section>
  );
}
