import type {
  InboundEndpointMessageOut,
  InboundMessageDeleteBatchOut,
  InboundMessageDeleteOut,
  InboundMessageOut,
  InboundReplayOut,
  MessageSearchMeta,
} from '@hookrelay/shared';
import { INLINE_BODY_MAX_BYTES } from '@hookrelay/shared/constants';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe, terminalText, truncate } from './text.js';
import { formatTimestamp } from './time.js';

const BODY_PREVIEW_CHARS = 4096;

/**
 * The largest body a command fetches to show it to people (`body_max_bytes`): a larger one is
 * named by its size, not read (`--json --base64` has it whole).
 */
export const SHOWN_BODY_MAX_BYTES = INLINE_BODY_MAX_BYTES;

export function formatMessageStatus(status: string, style: Style): string {
  status = terminalText(status);
  switch (status) {
    case 'succeeded':
      return style.green(status);
    case 'failed_permanent':
      return style.red(status);
    case 'pending_retry':
      return style.yellow(status);
    default:
      return style.cyan(status);
  }
}

/** Printable text (UTF-8 without control characters other than whitespace)? */
function isText(bytes: Buffer): boolean {
  const text = bytes.toString('utf8');
  if (Buffer.byteLength(text, 'utf8') !== bytes.length || text.includes('\uFFFD')) return false;
  // eslint-disable-next-line no-control-regex
  return !/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/u.test(text);
}

function preview(text: string, style: Style): string {
  return text.length > BODY_PREVIEW_CHARS ? `${text.slice(0, BODY_PREVIEW_CHARS)}\n${style.dim(`… (${text.length - BODY_PREVIEW_CHARS} more characters; --json shows all)`)}` : text;
}

/**
 * The body for people: JSON pretty-printed, text as it is, binary summarised. `omittedAbove`: the
 * body was asked for with that `body_max_bytes`, so a larger one is missing on purpose.
 */
export function formatMessageBody(
  message: Pick<InboundMessageOut, 'body' | 'body_encoding' | 'body_error' | 'size_bytes' | 'deleted_at'>,
  style: Style,
  omittedAbove?: number,
): string {
  if (message.body_error !== undefined) return style.red('(the payload could not be read from storage: payload_unavailable)');
  if (message.body === undefined && message.deleted_at === undefined && omittedAbove !== undefined && message.size_bytes > omittedAbove) {
    return style.dim(`(${message.size_bytes} bytes: too large to show here; --json --base64 gives it whole)`);
  }
  if (message.body === undefined) return style.dim(message.deleted_at !== undefined ? '(deleted)' : '(not stored)');
  if (message.body_encoding === 'base64' && typeof message.body === 'string') {
    const bytes = Buffer.from(message.body, 'base64');
    if (bytes.length === 0) return style.dim('(empty)');
    if (isText(bytes)) return preview(terminalText(bytes.toString('utf8'), { lines: true }), style);
    return style.dim(`(binary, ${bytes.length} bytes; --json shows it as base64)`);
  }
  // JSON leaves DEL and the C1 controls as they are: the block goes through the helper too.
  return preview(terminalText(JSON.stringify(message.body, null, 2), { lines: true }), style);
}

/** `omittedAbove`: as for formatMessageBody. */
export function formatInboundMessage(message: InboundMessageOut, style: Style, now: Date, omittedAbove?: number): string {
  message = terminalSafe(message);
  const request = `${message.method} ${message.path}${message.query === '' ? '' : `?${message.query}`}`;
  const lastResponse =
    message.response_status === null
      ? undefined
      : `${message.response_status}${message.response_latency_ms === null ? '' : ` in ${message.response_latency_ms} ms`}`;
  const details = formatKeyValues(
    [
      ['ID', style.bold(message.id)],
      ['Endpoint', message.inbound_endpoint_id],
      ['Status', formatMessageStatus(message.status, style)],
      ['Request', request],
      ['Content type', message.content_type === '' ? '(none)' : message.content_type],
      ['Size', `${message.size_bytes} bytes`],
      ['SHA-256', message.payload_sha256],
      ['Attempts', String(message.attempt_count)],
      ['Replays', String(message.replay_count)],
      ['Last response', lastResponse],
      ['Last error', message.last_error ?? undefined],
      ['Idempotency key', message.idempotency_key ?? undefined],
      ['Received', formatTimestamp(message.received_at, now)],
      ['Delivered', message.delivered_at === undefined ? undefined : formatTimestamp(message.delivered_at, now)],
      ['Failed', message.failed_at === null ? undefined : formatTimestamp(message.failed_at, now)],
      ['Deleted', message.deleted_at === undefined ? undefined : formatTimestamp(message.deleted_at, now)],
    ],
    style,
  );
  const headers = message.raw_headers.map(([name, value]) => `  ${style.dim(`${name}:`)} ${value}`);
  return [details, '', style.bold('Headers'), ...(headers.length > 0 ? headers : [style.dim('  (none)')]), '', style.bold('Body'), formatMessageBody(message, style, omittedAbove)].join('\n');
}

/** A replay's answer; `asked`: the message the replay was asked for (an edited copy's answer names the copy). */
export function formatReplay(replay: InboundReplayOut, style: Style, asked: string = replay.message_id): string {
  replay = terminalSafe(replay);
  if (replay.edited === true) {
    const signature = replay.signed === true ? "signed by the server with the endpoint's secret" : "unsigned: the original's signature headers were dropped";
    return `${style.green('Replayed')} ${terminalText(replay.replay_of ?? asked)} as an edited copy, message ${style.bold(replay.message_id)} (${signature}): status ${formatMessageStatus(replay.status, style)}. Connected listeners receive it now; a forward-mode endpoint delivers it.`;
  }
  return `${style.green('Replayed')} ${replay.message_id} (replay ${replay.replay_count}): status ${formatMessageStatus(replay.status, style)}. Connected listeners receive it again now; a forward-mode endpoint delivers it again.`;
}

export function formatInboundMessageDeleted(result: InboundMessageDeleteOut, style: Style): string {
  result = terminalSafe(result);
  return result.already_deleted
    ? `${style.dim('Already deleted')} ${result.message_id} (at ${result.deleted_at})`
    : `${style.green('Deleted')} inbound message ${result.message_id}: its payload and headers are gone.`;
}

/** One line per id with its outcome, then the counts. */
export function formatBatchDeleteResult(result: InboundMessageDeleteBatchOut, style: Style): string {
  result = terminalSafe(result);
  const outcome = (text: string): string =>
    text === 'deleted' ? style.green(text) : text === 'not_found' ? style.yellow(text) : style.dim(text);
  const lines = result.results.map((entry) => `${entry.message_id}  ${outcome(entry.outcome)}`);
  lines.push(
    `${result.deleted_count} deleted, ${result.already_deleted_count} already deleted, ${result.not_found_count} not found`,
  );
  return lines.join('\n');
}

const REQUEST_COLUMN_MAX = 50;

/** An endpoint's messages as a table, newest first; the NOTE column only when a row is an edited copy. */
export function formatEndpointMessageTable(rows: readonly InboundEndpointMessageOut[], style: Style): string {
  rows = terminalSafe(rows);
  const notes = rows.some((row) => row.edited === true);
  return formatTable<InboundEndpointMessageOut>(
    [
      { header: 'RECEIVED', value: (r) => r.received_at },
      { header: 'MESSAGE', value: (r) => r.message_id },
      { header: 'REQUEST', value: (r) => truncate(`${r.method} ${r.path}${r.query === '' ? '' : `?${r.query}`}`, REQUEST_COLUMN_MAX) },
      { header: 'EVENT', value: (r) => [r.provider, r.event_type].filter((part) => part !== null).join(' ') || '-' },
      { header: 'STATUS', value: (r) => r.status, color: (text, _r, s) => formatMessageStatus(text, s) },
      { header: 'RESPONSE', value: (r) => (r.response_status === null ? '-' : String(r.response_status)) },
      { header: 'SIZE', value: (r) => `${r.size_bytes} B` },
      ...(notes ? [{ header: 'NOTE', value: (r: InboundEndpointMessageOut) => (r.edited === true && r.replay_of !== null ? `edited copy of ${r.replay_of}` : '') }] : []),
    ],
    rows,
    style,
  );
}

/** What a search read, for stderr: the text, the window, which bodies, and whether it stopped at its scan limit. */
export function formatSearchNote(search: MessageSearchMeta, style: Style): string {
  search = terminalSafe(search);
  const bodies = search.bodies === 'inline' ? 'header values and the bodies stored in the database (not those above 256 KiB)' : 'header values only (the bodies are in an object store)';
  const lines = [style.dim(`searched ${JSON.stringify(search.q)} in messages received from ${search.received_after} to ${search.received_before}: ${bodies}`)];
  if (search.scan_limit_reached) {
    lines.push(style.yellow(`the search stopped after ${search.scan_limit.toLocaleString('en')} messages; the next page goes on from there`));
  }
  return lines.join('\n');
}
