import type {
  PauseOut,
  PullDeleteAllOut,
  PullEndpointCreateOut,
  PullEndpointOut,
  PullEventAckBatchOut,
  PullEventAckOut,
  PullEventDeleteBatchOut,
  PullEventDeleteOut,
  PullEventDetailOut,
  PullEventOut,
} from '@hookrelay/shared';
import { formatBatchOutcomes } from './batch.js';
import { bodyLimitLabel, expiryLabel } from './inbound-endpoints.js';
import { formatMessageBody } from './inbound-messages.js';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, truncate } from './text.js';
import { formatRelative, formatTimestamp } from './time.js';

const NAME_COLUMN_MAX = 30;
const TYPE_COLUMN_MAX = 30;

function pausedLabel(paused: boolean, style: Style): string {
  return paused ? style.yellow('paused') : style.green('active');
}

function extractionLabel(endpoint: Pick<PullEndpointOut, 'event_type_source' | 'event_type_path'>): string {
  if (endpoint.event_type_source === null || endpoint.event_type_path === null) return '(none)';
  return endpoint.event_type_source === 'body' ? `body field ${endpoint.event_type_path}` : `header ${endpoint.event_type_path}`;
}

function endpointPairs(endpoint: PullEndpointOut | PullEndpointCreateOut, style: Style, now: Date) {
  return [
    ['ID', style.bold(endpoint.id)],
    ['Name', endpoint.name],
    ['Description', endpoint.description === '' ? '(none)' : endpoint.description],
    ['Status', pausedLabel(endpoint.paused, style)],
    ['Ephemeral', endpoint.ephemeral ? 'yes' : 'no'],
    ['Expires', expiryLabel(endpoint.ephemeral, endpoint.expires_at, now)],
    ['Retention', `${endpoint.retention_days} ${endpoint.retention_days === 1 ? 'day' : 'days'}`],
    ['Event type', extractionLabel(endpoint)],
    ['Body limit', bodyLimitLabel(endpoint.max_body_bytes)],
  ] as const;
}

/**
 * The ingest URL with its token is shown once, on a line of its own so it can be copied whole,
 * with the warning beside it: only the token's hash is stored. The record's `ingest_url` (what
 * `pull get` and `--json` also show) stops before the token, so the output says it stores nothing.
 */
export function formatCreatedPullEndpoint(endpoint: PullEndpointCreateOut, style: Style, now: Date): string {
  endpoint = terminalSafe(endpoint);
  const details = formatKeyValues([...endpointPairs(endpoint, style, now), ['Created', endpoint.created_at]], style);
  return [
    `${style.green('Created pull endpoint')} ${endpoint.id}`,
    details,
    '',
    style.bold('Ingest URL (send webhooks here; shown only once, store it now):'),
    `  ${style.cyan.bold(endpoint.full_ingest_url)}`,
    style.yellow('  It ends in the secret token, which hookrelay keeps only as a hash: it cannot be shown again.'),
    style.yellow(`  Without the token (${endpoint.ingest_url}, the ingest_url of the record) it stores nothing: webhooks sent there get 404.`),
    style.dim(`Fetch what arrives: hookrelay pull events list ${endpoint.id}`),
  ].join('\n');
}

export function formatPullEndpoint(endpoint: PullEndpointOut, style: Style, now: Date): string {
  endpoint = terminalSafe(endpoint);
  const counts = endpoint.event_counts;
  return formatKeyValues(
    [
      ...endpointPairs(endpoint, style, now),
      ['Ingest URL', `${endpoint.ingest_url}/<secret token>`],
      [
        'Events',
        counts === undefined
          ? undefined
          : `${counts.stored} stored, ${counts.fetched} fetched, ${counts.delivered} delivered, ${counts.deleted} deleted`,
      ],
      ['Created', formatTimestamp(endpoint.created_at, now)],
      ['Updated', formatTimestamp(endpoint.updated_at, now)],
    ],
    style,
  );
}

export function formatPullEndpointTable(endpoints: readonly PullEndpointOut[], style: Style, now: Date): string {
  endpoints = terminalSafe(endpoints);
  return formatTable<PullEndpointOut>(
    [
      { header: 'ID', value: (e) => e.id },
      { header: 'NAME', value: (e) => truncate(e.name, NAME_COLUMN_MAX) },
      { header: 'STATUS', value: (e) => (e.paused ? 'paused' : 'active'), color: (text, e, s) => (e.paused ? s.yellow(text) : s.green(text)) },
      { header: 'RETENTION', value: (e) => `${e.retention_days}d` },
      { header: 'EVENT TYPE', value: (e) => truncate(extractionLabel(e), TYPE_COLUMN_MAX) },
      { header: 'EXPIRES', value: (e) => (e.ephemeral && e.expires_at ? formatRelative(e.expires_at, now) : '-') },
      { header: 'CREATED', value: (e) => e.created_at },
    ],
    endpoints,
    style,
  );
}

export function formatPullPauseResult(result: PauseOut, style: Style): string {
  result = terminalSafe(result);
  return result.paused
    ? `${style.yellow('Paused')} ${result.id}: webhooks sent to it are refused (503) and not stored until you resume it; stored events stay readable.`
    : `${style.green('Resumed')} ${result.id}: webhooks are stored again.`;
}

function colourEventStatus(status: string, style: Style): string {
  if (status === 'delivered') return style.green(status);
  if (status === 'fetched') return style.cyan(status);
  return style.yellow(status);
}

export function formatPullEventTable(events: readonly PullEventOut[], style: Style): string {
  events = terminalSafe(events);
  return formatTable<PullEventOut>(
    [
      { header: 'RECEIVED', value: (e) => e.received_at },
      { header: 'EVENT', value: (e) => e.id },
      { header: 'STATUS', value: (e) => e.status, color: (text, _e, s) => colourEventStatus(text, s) },
      { header: 'TYPE', value: (e) => truncate(e.event_type ?? '-', TYPE_COLUMN_MAX) },
      { header: 'SIZE', value: (e) => `${e.size_bytes} B` },
      { header: 'CONTENT TYPE', value: (e) => (e.content_type === '' ? '-' : e.content_type) },
    ],
    events,
    style,
  );
}

function optionalTime(value: string | null | undefined, now: Date): string | undefined {
  return value === undefined || value === null ? undefined : formatTimestamp(value, now);
}

export function formatPullEvent(event: PullEventDetailOut, style: Style, now: Date): string {
  event = terminalSafe(event);
  const request = `${event.method}${event.query === '' ? '' : ` ?${event.query}`}`;
  const details = formatKeyValues(
    [
      ['ID', style.bold(event.id)],
      ['Endpoint', event.endpoint_id],
      ['Status', colourEventStatus(event.status, style)],
      ['Event type', event.event_type ?? '(none)'],
      ['Request', request],
      ['Content type', event.content_type === '' ? '(none)' : event.content_type],
      ['Size', `${event.size_bytes} bytes`],
      ['SHA-256', event.payload_sha256],
      ['Received', formatTimestamp(event.received_at, now)],
      ['Fetched', optionalTime(event.fetched_at, now)],
      ['Delivered', optionalTime(event.delivered_at, now)],
      ['Deleted', optionalTime(event.deleted_at, now)],
    ],
    style,
  );
  const headers = event.raw_headers.map(([name, value]) => `  ${style.dim(`${name}:`)} ${value}`);
  return [
    details,
    '',
    style.bold('Headers'),
    ...(headers.length > 0 ? headers : [style.dim('  (none)')]),
    '',
    style.bold('Body'),
    formatMessageBody(event, style),
  ].join('\n');
}

export function formatPullEventAck(result: PullEventAckOut, style: Style): string {
  result = terminalSafe(result);
  return result.already_delivered
    ? `${style.dim('Already acknowledged')} ${result.event_id} (at ${result.delivered_at})`
    : `${style.green('Acknowledged')} ${result.event_id}: delivered.`;
}

export function formatPullEventAckBatch(result: PullEventAckBatchOut, style: Style): string {
  result = terminalSafe(result);
  return formatBatchOutcomes(
    result.results,
    'event_id',
    `${result.delivered_count} acknowledged, ${result.already_delivered_count} already acknowledged, ${result.not_found_count} not found`,
    style,
  );
}

export function formatPullEventDeleted(result: PullEventDeleteOut, style: Style): string {
  result = terminalSafe(result);
  return result.already_deleted
    ? `${style.dim('Already deleted')} ${result.event_id} (at ${result.deleted_at})`
    : `${style.green('Deleted')} event ${result.event_id}: its payload is gone.`;
}

export function formatPullEventBatchDeleted(result: PullEventDeleteBatchOut, style: Style): string {
  result = terminalSafe(result);
  return formatBatchOutcomes(
    result.results,
    'event_id',
    `${result.deleted_count} deleted, ${result.already_deleted_count} already deleted, ${result.not_found_count} not found`,
    style,
  );
}

/** `deleted N` and then the ids, one per line, so that `tail -n +2` gives the ids alone. */
export function formatDeleteAll(result: PullDeleteAllOut, style: Style): string {
  result = terminalSafe(result);
  const head = `${style.green('deleted')} ${result.deleted}`;
  return [head, ...result.deleted_event_ids].join('\n');
}
