import type {
  AttemptOut,
  LogRecordOut,
  MessageCreateOut,
  MessageDeleteBatchOut,
  MessageDeleteOut,
  MessageOut,
  MessageRetryOut,
} from '@hookrelay/shared';
import { formatBatchOutcomes } from './batch.js';
import { formatMessageStatus } from './inbound-messages.js';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, terminalText, truncate } from './text.js';
import { formatTimestamp } from './time.js';

const PAYLOAD_PREVIEW_CHARS = 4096;
const ERROR_COLUMN_MAX = 50;
const URL_COLUMN_MAX = 40;

export function formatMessageCreated(created: MessageCreateOut, endpointId: string, style: Style): string {
  created = terminalSafe(created);
  endpointId = terminalText(endpointId);
  return [
    `${style.green('Accepted')} message ${style.bold(created.message_id)} for ${endpointId}: ${formatMessageStatus(created.status, style)}`,
    style.dim(`Follow its delivery: hookrelay messages get ${created.message_id}`),
  ].join('\n');
}

function preview(text: string, style: Style): string {
  return text.length > PAYLOAD_PREVIEW_CHARS
    ? `${text.slice(0, PAYLOAD_PREVIEW_CHARS)}\n${style.dim(`… (${text.length - PAYLOAD_PREVIEW_CHARS} more characters; --json shows all)`)}`
    : text;
}

/** A JSON value pretty-printed as a block of lines, cut after PAYLOAD_PREVIEW_CHARS. */
export function formatJsonBlock(value: unknown, style: Style): string {
  // JSON leaves DEL and the C1 controls as they are: the block goes through the helper too.
  return preview(terminalText(JSON.stringify(value, null, 2), { lines: true }), style);
}

/** The payload as it was submitted: JSON pretty-printed, a text body as it is. */
export function formatMessagePayload(message: Pick<MessageOut, 'payload' | 'body' | 'body_error' | 'deleted_at'>, style: Style): string {
  if (message.body_error !== undefined) return style.red('(the payload could not be read from storage: payload_unavailable)');
  if (message.payload !== undefined) return formatJsonBlock(message.payload, style);
  if (message.body !== undefined) return message.body === '' ? style.dim('(empty)') : preview(terminalText(message.body, { lines: true }), style);
  return style.dim(message.deleted_at !== undefined && message.deleted_at !== null ? '(deleted)' : '(not stored)');
}

function lastResponse(row: Pick<LogRecordOut, 'response_status' | 'response_latency_ms'>): string | undefined {
  if (row.response_status === null) return undefined;
  return `${row.response_status}${row.response_latency_ms === null ? '' : ` in ${row.response_latency_ms} ms`}`;
}

function optionalTime(value: string | null | undefined, now: Date): string | undefined {
  return value === undefined || value === null ? undefined : formatTimestamp(value, now);
}

export function formatMessage(message: MessageOut, style: Style, now: Date): string {
  message = terminalSafe(message);
  const details = formatKeyValues(
    [
      ['ID', style.bold(message.message_id)],
      ['Endpoint', `${message.endpoint_id} (${message.endpoint})`],
      ['Event', message.event_id ?? undefined],
      ['Status', formatMessageStatus(message.status, style)],
      ['Event type', message.event_type ?? undefined],
      ['Content type', message.content_type],
      ['Size', `${message.size_bytes} bytes`],
      ['SHA-256', message.payload_sha256],
      ['Idempotency key', message.idempotency_key ?? undefined],
      ['Attempts', String(message.attempt_count)],
      ['Last response', lastResponse(message)],
      ['Last error', message.last_error ?? undefined],
      ['Created', formatTimestamp(message.created_at, now)],
      ['First attempt', optionalTime(message.first_attempt_at, now)],
      ['Next attempt', optionalTime(message.next_attempt_at, now)],
      ['Delivered', optionalTime(message.delivered_at, now)],
      ['Failed', optionalTime(message.failed_at, now)],
      ['Deleted', optionalTime(message.deleted_at, now)],
    ],
    style,
  );
  return [details, '', style.bold('Payload'), formatMessagePayload(message, style)].join('\n');
}

function responseCell(status: number | null): string {
  return status === null ? '-' : String(status);
}

function latencyCell(ms: number | null): string {
  return ms === null ? '-' : `${ms} ms`;
}

function colourResponse(text: string, style: Style): string {
  if (text === '-') return style.dim(text);
  return text.startsWith('2') ? style.green(text) : style.red(text);
}

export function formatAttemptTable(attempts: readonly AttemptOut[], style: Style): string {
  attempts = terminalSafe(attempts);
  return formatTable<AttemptOut>(
    [
      { header: '#', value: (a) => String(a.attempt_number) },
      { header: 'STARTED', value: (a) => a.started_at },
      { header: 'RESPONSE', value: (a) => responseCell(a.response_status), color: (text, _a, s) => colourResponse(text, s) },
      { header: 'LATENCY', value: (a) => latencyCell(a.latency_ms) },
      { header: 'ERROR', value: (a) => truncate(a.error ?? '', ERROR_COLUMN_MAX * 2) },
    ],
    attempts,
    style,
  );
}

export function formatMessageRetry(result: MessageRetryOut, style: Style): string {
  result = terminalSafe(result);
  return result.status === 'delivering'
    ? `${style.green('Retry queued')} for ${result.message_id}: an attempt is in flight; it is delivered again once that one ends.`
    : `${style.green('Retry queued')} for ${result.message_id}: ${formatMessageStatus(result.status, style)}, with the whole retry schedule.`;
}

export function formatMessageDeleted(result: MessageDeleteOut, style: Style): string {
  result = terminalSafe(result);
  return result.already_deleted
    ? `${style.dim('Already deleted')} ${result.message_id} (at ${result.deleted_at})`
    : `${style.green('Deleted')} message ${result.message_id}: its payload is gone and waiting deliveries are cancelled.`;
}

export function formatMessageBatchDeleted(result: MessageDeleteBatchOut, style: Style): string {
  result = terminalSafe(result);
  return formatBatchOutcomes(
    result.results,
    'message_id',
    `${result.deleted_count} deleted, ${result.already_deleted_count} already deleted, ${result.not_found_count} not found`,
    style,
  );
}

/** The delivery log as a table, in the API's order (newest first); the endpoint column only when it varies. */
export function formatLogTable(rows: readonly LogRecordOut[], style: Style, options: { showEndpoint: boolean }): string {
  rows = terminalSafe(rows);
  return formatTable<LogRecordOut>(
    [
      { header: 'CREATED', value: (r) => r.created_at },
      { header: 'MESSAGE', value: (r) => r.message_id },
      ...(options.showEndpoint ? [{ header: 'ENDPOINT', value: (r: LogRecordOut) => truncate(r.endpoint, URL_COLUMN_MAX) }] : []),
      { header: 'STATUS', value: (r) => r.status, color: (text, _r, s) => formatMessageStatus(text, s) },
      { header: 'ATTEMPTS', value: (r) => String(r.attempt_count) },
      { header: 'RESPONSE', value: (r) => responseCell(r.response_status) },
      { header: 'LATENCY', value: (r) => latencyCell(r.response_latency_ms) },
      { header: 'ERROR', value: (r) => (r.deleted_at !== undefined && r.deleted_at !== null ? '(deleted)' : truncate(r.last_error ?? '', ERROR_COLUMN_MAX)) },
    ],
    rows,
    style,
  );
}

/** One row as one line, for `logs --follow` (no header to align with). */
export function formatLogLine(row: LogRecordOut, style: Style): string {
  row = terminalSafe(row);
  const parts = [
    style.dim(row.created_at),
    row.message_id,
    formatMessageStatus(row.status, style),
    responseCell(row.response_status),
    latencyCell(row.response_latency_ms),
    style.dim(row.endpoint),
  ];
  if (row.last_error !== null) parts.push(style.red(truncate(row.last_error, ERROR_COLUMN_MAX * 2)));
  if (row.deleted_at !== undefined && row.deleted_at !== null) parts.push(style.dim('(deleted)'));
  return parts.join('  ');
}
