import { useEffect, useState } from 'preact/hooks';
import type { InboundEndpointOut, PullEndpointOut, RejectionDetailOut, RejectionEndpointKind, RejectionOut } from '@hookrelay/shared';
import { REDACTED_HEADER_VALUE } from '@hookrelay/shared/rejections';
import { api, page } from '../api.js';
import { BodyView, CopyButton, ErrorBox, HeadersTable, Loading, Time } from '../components.js';
import { asText, base64ToBytes, curlCommand, formatBytes, hexDump } from '../format.js';
import { useLoad } from '../load.js';
import { ResourceTable, type Column } from '../resource-table.js';

/** How many refused requests the endpoint's page shows (older ones: the API, or `hookrelay … rejections`). */
const SHOWN = 20;
const PULL_TOKEN_PLACEHOLDER = 'SECRET_TOKEN';
/** Without a live socket (pull endpoints), how often the list is read again. */
const POLL_MS = 3000;

const basePath = (kind: RejectionEndpointKind, endpointId: string) => `/v1/${kind === 'inbound' ? 'inbound' : 'pull'}-endpoints/${endpointId}`;
const detailHash = (r: RejectionOut) => `#/${r.endpoint_kind}/${r.endpoint_id}/rejections/${r.id}`;
const requestLine = (r: Pick<RejectionOut, 'method' | 'path' | 'query'>) => `${r.method} ${r.path}${r.query ? `?${r.query}` : ''}`;

function merge(fresh: readonly RejectionOut[], old: readonly RejectionOut[]): RejectionOut[] {
  const byId = new Map(old.map((r) => [r.id, r]));
  for (const r of fresh) byId.set(r.id, r);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, SHOWN);
}

const REJECTION_COLUMNS: readonly Column<RejectionOut>[] = [
  { head: 'Received', class: 'nowrap', cell: (r) => <a href={detailHash(r)}><Time iso={r.received_at} /></a> },
  { head: 'Answer', cell: (r) => <span class="badge err">{r.status}</span> },
  { head: 'Reason', cell: (r) => <code>{r.reason}</code> },
  { head: 'Request', class: 'path', cell: requestLine },
  { head: 'From', cell: (r) => r.source_address },
  { head: 'What to check', class: 'detail', cell: (r) => r.detail },
];
const rejectionRowAttributes = (r: RejectionOut) => ({ 'data-rejection-id': r.id });

/**
 * The requests the endpoint's ingest URL refused, newest first, beside its messages: `incoming`
 * are the ones the page's live socket announced; without a socket the list is read again now and then.
 */
export function RefusedRequests({ kind, endpointId, incoming }: { kind: RejectionEndpointKind; endpointId: string; incoming?: readonly RejectionOut[] }) {
  const [rows, setRows] = useState<RejectionOut[]>([]);
  const [error, setError] = useState<unknown>(undefined);
  const [loaded, setLoaded] = useState(false);
  useEffect(() => {
    let current = true;
    const read = () =>
      page<RejectionOut>(`${basePath(kind, endpointId)}/rejections`, { limit: SHOWN }).then(
        (result) => current && (setRows((old) => merge(result.data, old)), setError(undefined), setLoaded(true)),
        (caught: unknown) => current && (setError(caught), setLoaded(true)),
      );
    void read();
    const timer = incoming === undefined ? setInterval(() => !document.hidden && void read(), POLL_MS) : undefined;
    return () => {
      current = false;
      clearInterval(timer);
    };
  }, [kind, endpointId, incoming === undefined]);
  useEffect(() => {
    if (incoming && incoming.length > 0) setRows((old) => merge(incoming, old));
  }, [incoming]);

  return (
    <section aria-labelledby="refused-title" data-testid="refused" class="panel">
      <h2 id="refused-title">
        Refused requests{rows.length > 0 ? <span class="badge err"> {rows.length === SHOWN ? `${SHOWN}+` : rows.length}</span> : null}
      </h2>
      <ResourceTable
        list={{ rows: loaded || rows.length > 0 ? rows : undefined, error }}
        label="Refused requests, newest first"
        testid="rejections"
        columns={REJECTION_COLUMNS}
        rowKey={(r) => r.id}
        rowAttributes={rejectionRowAttributes}
        empty="None: every request that reached the ingest URL was accepted. A refused one (bad signature, wrong token, paused, too large…) appears here with why."
      />
    </section>
  );
}

function headerValue(headers: readonly [string, string][], name: string): string {
  return headers.find(([n]) => n.toLowerCase() === name)?.[1] ?? '';
}

/** The kept start of a body: the full view when it is all there, else text or a hex dump of the start. */
function RefusedBody({ r }: { r: RejectionDetailOut }) {
  if (r.body_sha256 === null) return <p class="muted">The body was not read ({formatBytes(r.size_bytes)} announced): nothing of it was kept.</p>;
  if (!r.body_truncated) return <BodyView base64={r.body} contentType={headerValue(r.raw_headers, 'content-type')} storedSha256={r.body_sha256} />;
  const bytes = base64ToBytes(r.body);
  const text = asText(bytes);
  return (
    <section aria-label="Body" data-testid="body">
      <p class="meta-line">
        The first {formatBytes(bytes.length)} of {formatBytes(r.size_bytes)} · SHA-256 of the whole body <code>{r.body_sha256}</code>
      </p>
      <pre class={text === null ? 'body hexdump' : 'body'}>{text ?? hexDump(bytes)}</pre>
    </section>
  );
}

function Curl({ r, ingestUrl }: { r: RejectionDetailOut; ingestUrl: string }) {
  const body = base64ToBytes(r.body);
  // A pull URL's token is kept as a hash only: the command holds a placeholder for it.
  const base = r.endpoint_kind === 'pull' ? `${ingestUrl.replace(/\/+$/, '')}/${PULL_TOKEN_PLACEHOLDER}` : ingestUrl.replace(/\/+$/, '');
  const url = `${base}${r.endpoint_kind === 'inbound' && r.path !== '/' ? r.path : ''}${r.query ? `?${r.query}` : ''}`;
  const command = curlCommand(r.method, url, r.raw_headers, body);
  const redacted = r.raw_headers.filter(([, value]) => value === REDACTED_HEADER_VALUE).map(([name]) => name);
  const notes = [
    r.body_sha256 === null ? 'The body was not kept (it was refused for its size): the command sends none.' : null,
    r.body_sha256 !== null && r.body_truncated ? `The body is cut to the first ${formatBytes(body.length)} of ${formatBytes(r.size_bytes)}: the command sends only that start.` : null,
    redacted.length > 0 ? `The ${redacted.join(', ')} header${redacted.length > 1 ? 's are' : ' is'} redacted: put the real value in before sending.` : null,
    r.query.includes(REDACTED_HEADER_VALUE) ? 'The static token in the query is redacted: put the real value in before sending.' : null,
    r.endpoint_kind === 'pull' ? `Replace ${PULL_TOKEN_PLACEHOLDER} with the pull endpoint's secret token (shown once, when it was created).` : null,
  ].filter((note) => note !== null);
  return (
    <section class="panel" aria-labelledby="curl-title">
      <h2 id="curl-title">
        Copy as curl <CopyButton label="Copy as curl" text={() => command} />
      </h2>
      {notes.map((note) => (
        <p key={note} class="warn" data-testid="curl-note">
          {note}
        </p>
      ))}
      <pre class="body" data-testid="curl">
        {command}
      </pre>
    </section>
  );
}

/** One refused request: why, what to check, the request as received, and the curl that sends it again. */
export function Rejection({ kind, endpointId, rejectionId }: { kind: RejectionEndpointKind; endpointId: string; rejectionId: string }) {
  const rejection = useLoad(() => api<RejectionDetailOut>('GET', `${basePath(kind, endpointId)}/rejections/${rejectionId}`).then((res) => res.data), [kind, endpointId, rejectionId]);
  const endpoint = useLoad(
    () => (kind === 'inbound' ? api<InboundEndpointOut>('GET', basePath(kind, endpointId)) : api<PullEndpointOut>('GET', basePath(kind, endpointId))).then((res) => res.data),
    [kind, endpointId],
  );
  const r = rejection.value;
  const listHash = kind === 'inbound' ? `#/inbound/${endpointId}` : `#/pull/${endpointId}`;
  return (
    <section aria-labelledby="rejection-title">
      <p class="crumbs">
        <a href={kind === 'inbound' ? '#/' : '#/pull'}>{kind === 'inbound' ? 'Inbound endpoints' : 'Pull endpoints'}</a> / <a href={listHash}>{endpoint.value?.name ?? endpointId}</a> / refused request
      </p>
      <h1 id="rejection-title">{r ? `Refused: ${requestLine(r)}` : 'Refused request'}</h1>
      <ErrorBox error={rejection.error} />
      <Loading when={rejection.loading && !r} />
      {r ? (
        <>
          <p class="error" data-testid="rejection-detail">
            <span class="badge err">{r.status}</span> <code>{r.reason}</code>: {r.detail}
          </p>
          <dl class="facts">
            <dt>Id</dt>
            <dd>
              <code>{r.id}</code>
            </dd>
            <dt>Received</dt>
            <dd><Time iso={r.received_at} /></dd>
            <dt>From</dt>
            <dd>{r.source_address}</dd>
            <dt>Size</dt>
            <dd>{formatBytes(r.size_bytes)}</dd>
          </dl>
          <h2>Headers</h2>
          <HeadersTable headers={r.raw_headers} label="Request headers as received" />
          <h2>Body</h2>
          <RefusedBody r={r} />
          {endpoint.value ? <Curl r={r} ingestUrl={endpoint.value.ingest_url} /> : null}
        </>
      ) : null}
    </section>
  );
}
