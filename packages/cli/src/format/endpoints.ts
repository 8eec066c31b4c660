import type {
  EndpointCreateOut,
  EndpointOut,
  EndpointSummaryOut,
  PauseOut,
  RotateSecretOut,
} from '@hookrelay/shared';
import { formatKeyValues, type Pair } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, terminalText, truncate } from './text.js';
import { formatRelative, formatTimestamp } from './time.js';

function pausedLabel(paused: boolean, style: Style): string {
  return paused ? style.yellow('paused') : style.green('active');
}

/** The full record's status: a pause says who paused it (`manual` or `failing`, hookrelay itself) and since when. */
function statusLabel(endpoint: EndpointOut, style: Style, now: Date): string {
  if (!endpoint.paused) return pausedLabel(false, style);
  const why = endpoint.paused_reason === 'failing' ? 'by hookrelay: every delivery kept failing' : endpoint.paused_reason === 'manual' ? 'manually' : undefined;
  const since = endpoint.paused_at ? `since ${formatTimestamp(endpoint.paused_at, now)}` : undefined;
  return [pausedLabel(true, style), why, since].filter((part) => part !== undefined).join(' ');
}

function expiryLabel(ephemeral: boolean, expiresAt: string | null | undefined, now: Date): string | undefined {
  if (!ephemeral) return undefined;
  return expiresAt ? formatTimestamp(expiresAt, now) : 'yes';
}

function headerLines(headers: Record<string, string>): string {
  const entries = Object.entries(headers);
  if (entries.length === 0) return '(none)';
  return entries.map(([name, value]) => `${name}: ${value}`).join(', ');
}

/** Who an endpoint belongs to and what it receives; `null` is each field's default. */
interface Subscription {
  owner_id: string | null;
  event_types: string[] | null;
  channels: string[] | null;
}

function listLabel(items: readonly string[] | null, all: string, style: Style): string {
  if (items === null) return style.dim(all);
  return items.length === 0 ? style.yellow('none') : items.join(', ');
}

/** The subscription as key/value pairs (already escaped by the caller's terminalSafe). */
function subscriptionPairs(subscription: Subscription, style: Style): Pair[] {
  return [
    ['Owner', subscription.owner_id ?? style.dim('(none: your own endpoint)')],
    ['Event types', listLabel(subscription.event_types, 'every type (not hookrelay.*)', style)],
    ['Channels', listLabel(subscription.channels, 'any', style)],
  ];
}

/**
 * The secret is printed on a line of its own so that it can be copied whole, with the warning
 * right beside it: it is never shown again.
 */
function secretBlock(secret: string, style: Style): string {
  return [
    '',
    style.bold('Signing secret (shown only once, store it now):'),
    `  ${style.cyan.bold(secret)}`,
    style.yellow("  hookrelay will not show this secret again. Verify deliveries with it (Standard Webhooks)."),
  ].join('\n');
}

export function formatCreatedEndpoint(endpoint: EndpointCreateOut, style: Style, now: Date): string {
  endpoint = terminalSafe(endpoint);
  const details = formatKeyValues(
    [
      ['ID', style.bold(endpoint.id)],
      ['URL', endpoint.url],
      ['Description', endpoint.description === '' ? undefined : endpoint.description],
      ['Ephemeral', endpoint.ephemeral ? 'yes' : 'no'],
      ['Expires', expiryLabel(endpoint.ephemeral, endpoint.expires_at, now)],
      ...subscriptionPairs(endpoint, style),
      ['Signing key', `${endpoint.signing_key_id} (…${endpoint.key_hint})`],
      ['Created', endpoint.created_at],
    ],
    style,
  );
  return `${style.green('Created endpoint')} ${endpoint.id}\n${details}\n${secretBlock(endpoint.signing_secret, style)}`;
}

export function formatEndpoint(endpoint: EndpointOut, style: Style, now: Date): string {
  endpoint = terminalSafe(endpoint);
  return formatKeyValues(
    [
      ['ID', style.bold(endpoint.id)],
      ['URL', endpoint.url],
      ['Description', endpoint.description === '' ? '(none)' : endpoint.description],
      ['Status', statusLabel(endpoint, style, now)],
      ['Rate limit', endpoint.rate_limit_rps === 0 ? 'none' : `${endpoint.rate_limit_rps}/s`],
      ['Burst', String(endpoint.burst)],
      ['Headers', headerLines(endpoint.headers)],
      ...subscriptionPairs(endpoint, style),
      ['Ephemeral', endpoint.ephemeral ? 'yes' : 'no'],
      ['Expires', expiryLabel(endpoint.ephemeral, endpoint.expires_at, now)],
      ['Created', endpoint.created_at],
      ['Updated', endpoint.updated_at],
    ],
    style,
  );
}

const URL_COLUMN_MAX = 60;
const DESCRIPTION_COLUMN_MAX = 30;

export function formatEndpointTable(endpoints: readonly EndpointSummaryOut[], style: Style, now: Date): string {
  endpoints = terminalSafe(endpoints);
  return formatTable<EndpointSummaryOut>(
    [
      { header: 'ID', value: (e) => e.id },
      { header: 'URL', value: (e) => truncate(e.url, URL_COLUMN_MAX) },
      {
        header: 'STATUS',
        value: (e) => (e.paused ? 'paused' : 'active'),
        color: (text, e, s) => (e.paused ? s.yellow(text) : s.green(text)),
      },
      { header: 'EXPIRES', value: (e) => (e.ephemeral && e.expires_at ? formatRelative(e.expires_at, now) : '-') },
      { header: 'CREATED', value: (e) => e.created_at },
      { header: 'DESCRIPTION', value: (e) => truncate(e.description, DESCRIPTION_COLUMN_MAX) },
    ],
    endpoints,
    style,
  );
}

export function formatPauseResult(result: PauseOut, style: Style): string {
  result = terminalSafe(result);
  return result.paused
    ? `${style.yellow('Paused')} ${result.id}: messages are accepted but not delivered until you resume it.`
    : `${style.green('Resumed')} ${result.id}: deliveries continue.`;
}

export function formatRotatedSecret(id: string, rotated: RotateSecretOut, style: Style, now: Date): string {
  id = terminalText(id);
  rotated = terminalSafe(rotated);
  const details = formatKeyValues(
    [
      ['Endpoint', id],
      ['Signing key', `${rotated.signing_key_id} (…${rotated.key_hint})`],
      ['Previous key valid until', formatTimestamp(rotated.previous_key_expires_at, now)],
    ],
    style,
  );
  return `${style.green('Rotated signing secret of')} ${id}\n${details}\n${secretBlock(rotated.signing_secret, style)}`;
}
