import type { InboundMessageDeleteBatchOut, InboundMessageDeleteOut, InboundMessageOut, InboundReplayOut } from '@hookrelay/shared';
import { INLINE_BODY_MAX_BYTES } from '@hookrelay/shared/constants';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { terminalSafe, terminalText } from './text.js';
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

export function formatReplay(replay: InboundReplayOut, style: Style): string {
  replay = terminalSafe(replay);
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
