import type {
  InboundEndpointCreateOut,
  InboundEndpointOut,
  InboundEndpointSummaryOut,
  PauseOut,
  RotateSecretOut,
} from '@hookrelay/shared';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, terminalText, truncate } from './text.js';
import { formatRelative, formatTimestamp } from './time.js';

function statusLabel(paused: boolean, style: Style): string {
  return paused ? style.yellow('paused') : style.green('active');
}

export function expiryLabel(ephemeral: boolean, expiresAt: string | null | undefined, now: Date): string | undefined {
  if (!ephemeral) return undefined;
  return expiresAt ? formatTimestamp(expiresAt, now) : 'yes';
}

/**
 * The ingest URL, set apart so it can be copied whole. It ends in the endpoint's secret token, so
 * the warning says what it is worth.
 */
function ingestBlock(ingestUrl: string, style: Style): string[] {
  return [
    style.bold('Ingest URL (send webhooks here):'),
    `  ${style.cyan.bold(ingestUrl)}`,
    style.yellow('  The URL ends in the secret token: anyone who has it can post webhooks to this endpoint. Keep it private.'),
  ];
}

function signingSecretBlock(secret: string, style: Style): string[] {
  return [
    style.bold('Signing secret (shown only once, store it now):'),
    `  ${style.cyan.bold(secret)}`,
    style.yellow('  hookrelay will not show this secret again. Verify forwarded webhooks with it (Standard Webhooks).'),
  ];
}

function modeLabel(mode: string, id: string, style: Style): string {
  return mode === 'cli' ? `cli ${style.dim(`(forward to your machine: hookrelay listen ${id} --forward-to 3000)`)}` : 'forward';
}

/** The verification checks that are on, in one line: what a sender must satisfy. */
export function verificationSummary(endpoint: InboundEndpointOut): string {
  endpoint = terminalSafe(endpoint);
  const checks: string[] = [];
  if (endpoint.verify_static_token) {
    const where = [
      endpoint.static_token_header_name === null ? undefined : `header ${endpoint.static_token_header_name}`,
      endpoint.static_token_query_param === null ? undefined : `query ${endpoint.static_token_query_param}`,
    ].filter((part): part is string => part !== undefined);
    checks.push(`static token${where.length > 0 ? ` (${where.join(' or ')})` : ''}`);
  }
  if (endpoint.verify_hmac) {
    const parts: string[] = [endpoint.hmac_scheme];
    if (endpoint.hmac_header_name !== null) parts.push(`header ${endpoint.hmac_header_name}`);
    if (endpoint.timestamp_header_name !== null) parts.push(`timestamp ${endpoint.timestamp_header_name} ±${endpoint.timestamp_tolerance_seconds}s`);
    checks.push(`HMAC (${parts.join(', ')})`);
  }
  if (endpoint.verify_ip_allowlist) checks.push(`IP allowlist (${endpoint.allowed_cidrs.join(', ')})`);
  return checks.length === 0 ? 'none' : checks.join('; ');
}

export function formatCreatedInboundEndpoint(endpoint: InboundEndpointCreateOut, style: Style, now: Date): string {
  endpoint = terminalSafe(endpoint);
  const details = formatKeyValues(
    [
      ['ID', style.bold(endpoint.id)],
      ['Name', endpoint.name],
      ['Mode', modeLabel(endpoint.mode, endpoint.id, style)],
      ['URL', endpoint.mode === 'forward' ? endpoint.url : undefined],
      ['Ephemeral', endpoint.ephemeral ? 'yes' : 'no'],
      ['Expires', expiryLabel(endpoint.ephemeral, endpoint.expires_at, now)],
      ['Signing key', endpoint.signing_key_id === undefined ? undefined : `${endpoint.signing_key_id} (…${endpoint.key_hint ?? ''})`],
      ['Created', endpoint.created_at],
    ],
    style,
  );
  const lines = [`${style.green('Created inbound endpoint')} ${endpoint.id}`, '', ...ingestBlock(endpoint.ingest_url, style), '', details];
  if (endpoint.signing_secret !== undefined) lines.push('', ...signingSecretBlock(endpoint.signing_secret, style));
  return lines.join('\n');
}

/** An endpoint's own body limit, or that it takes the server's. */
export function bodyLimitLabel(maxBodyBytes: number | null): string {
  return maxBodyBytes === null ? "the server's ingest limit" : `${maxBodyBytes} bytes`;
}

export function formatInboundEndpoint(endpoint: InboundEndpointOut, style: Style, now: Date): string {
  endpoint = terminalSafe(endpoint);
  const details = formatKeyValues(
    [
      ['ID', style.bold(endpoint.id)],
      ['Name', endpoint.name],
      ['Description', endpoint.description === '' ? '(none)' : endpoint.description],
      ['Mode', modeLabel(endpoint.mode, endpoint.id, style)],
      ['URL', endpoint.mode === 'forward' ? endpoint.url : undefined],
      ['Status', statusLabel(endpoint.paused, style)],
      ['Verification', verificationSummary(endpoint)],
      [
        'Rejected',
        `${endpoint.rejected_count} ${endpoint.rejected_count === 1 ? 'request' : 'requests'} failed verification` +
          (endpoint.rejections_dropped_count > 0 ? `; ${endpoint.rejections_dropped_count} refused ${endpoint.rejections_dropped_count === 1 ? 'request' : 'requests'} counted but not kept (over the recording rate)` : ''),
      ],
      ['Response code', String(endpoint.ingest_response_code)],
      ['Body limit', bodyLimitLabel(endpoint.max_body_bytes)],
      ['Idempotency', endpoint.idempotency_header_names.length === 0 ? '(none)' : endpoint.idempotency_header_names.join(', ')],
      ['Signing', endpoint.signing_enabled ? `on${endpoint.signing_key_id === null ? '' : `, key ${endpoint.signing_key_id} (…${endpoint.key_hint ?? ''})`}` : 'off'],
      ['Late deliveries', endpoint.resign_late ? "re-signed with the sender's secret" : "sent with the sender's signature"],
      ['Latest message', endpoint.mode === 'cli' ? (endpoint.latest_message_id ?? '(none yet)') : undefined],
      ['Ephemeral', endpoint.ephemeral ? 'yes' : 'no'],
      ['Expires', expiryLabel(endpoint.ephemeral, endpoint.expires_at, now)],
      ['Created', endpoint.created_at],
      ['Updated', endpoint.updated_at],
    ],
    style,
  );
  return [...ingestBlock(endpoint.ingest_url, style), '', details].join('\n');
}

const NAME_COLUMN_MAX = 30;
const URL_COLUMN_MAX = 50;

export function formatInboundEndpointTable(endpoints: readonly InboundEndpointSummaryOut[], style: Style, now: Date): string {
  endpoints = terminalSafe(endpoints);
  return formatTable<InboundEndpointSummaryOut>(
    [
      { header: 'ID', value: (e) => e.id },
      { header: 'NAME', value: (e) => truncate(e.name, NAME_COLUMN_MAX) },
      { header: 'MODE', value: (e) => e.mode },
      {
        header: 'STATUS',
        value: (e) => (e.paused ? 'paused' : 'active'),
        color: (text, e, s) => (e.paused ? s.yellow(text) : s.green(text)),
      },
      { header: 'EXPIRES', value: (e) => (e.ephemeral && e.expires_at ? formatRelative(e.expires_at, now) : '-') },
      { header: 'CREATED', value: (e) => e.created_at },
      { header: 'URL', value: (e) => (e.url === '' ? '-' : truncate(e.url, URL_COLUMN_MAX)) },
    ],
    endpoints,
    style,
  );
}

export function formatInboundPauseResult(result: PauseOut, style: Style): string {
  result = terminalSafe(result);
  return result.paused
    ? `${style.yellow('Paused')} ${result.id}: its ingest URL answers 503 (with Retry-After) and stores nothing until you resume it.`
    : `${style.green('Resumed')} ${result.id}: its ingest URL accepts webhooks again.`;
}

export function formatInboundRotatedSecret(id: string, rotated: RotateSecretOut, style: Style, now: Date): string {
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
  return [`${style.green('Rotated signing secret of inbound endpoint')} ${id}`, details, '', ...signingSecretBlock(rotated.signing_secret, style)].join('\n');
}
