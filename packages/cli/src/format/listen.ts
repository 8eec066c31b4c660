import type { RejectionOut } from '@hookrelay/shared';
import type { Style } from './style.js';
import { terminalSafe, terminalText, truncate } from './text.js';

/**
 * One processed message, as `--json` prints it (plus what people see): what a delivery line is
 * made of, declared here so that the formatters need nothing of the listener (its ports hand it on).
 */
export interface DeliveryRecord {
  message_id: string;
  /** The stored cursor after this delivery (a replay leaves it where it was). */
  cursor: string | null;
  method: string;
  path: string;
  query: string;
  status: number | null;
  latency_ms: number;
  attempt: number;
  error: string | null;
  replay: boolean;
  /** Where the message went (the target of the route that took it); null when no route did (then nothing was sent or reported). */
  target: string | null;
  /** What the app answered besides its status, when it answered and capture is on. */
  response?: CapturedResponse | undefined;
}

/** What the app answered besides its status (`--capture-response-bytes`). */
export interface CapturedResponse {
  /** `[name, value]` in the order received, bounded (`MAX_CAPTURED_HEADERS` of the forwarder). */
  headers: [string, string][];
  /** The first bytes of the body. */
  body: Buffer;
  /** The app sent more than was kept. */
  truncated: boolean;
}

const PATH_MAX = 60;

/** `HH:MM:SS`, local time: what a person watching the terminal compares with their clock. */
export function formatClock(date: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

/** The app's status, coloured by class; `ERR` when it gave no answer. */
export function formatStatus(status: number | null, style: Style): string {
  if (status === null) return style.red.bold('ERR');
  const text = String(status);
  if (status >= 500) return style.red(text);
  if (status >= 400) return style.yellow(text);
  if (status >= 300) return style.cyan(text);
  return style.green(text);
}

/**
 * One delivery, one line: time, method, path and query, the app's status, latency, message id;
 * then what is unusual about it (a replay, several attempts, the error).
 * `12:01:02  POST /github/push?x=1  200  12 ms  0190b2c4-…`
 */
export function formatDeliveryLine(record: DeliveryRecord, style: Style, at: Date, showTarget = false): string {
  record = terminalSafe(record);
  const target = truncate(`${record.path}${record.query === '' ? '' : `?${record.query}`}`, PATH_MAX);
  const parts = [
    style.dim(formatClock(at)),
    `${style.bold(record.method)} ${target}`,
    formatStatus(record.status, style),
    `${record.latency_ms} ms`,
    style.dim(record.message_id),
  ];
  let line = parts.join('  ');
  if (showTarget && record.target !== null) line += `  ${style.dim(`→ ${record.target}`)}`;
  const notes: string[] = [];
  if (record.replay) notes.push('replay');
  if (record.attempt > 1) notes.push(`attempt ${record.attempt}`);
  if (notes.length > 0) line += style.dim(` (${notes.join(', ')})`);
  if (record.error !== null) line += `  ${style.red(record.error)}`;
  return line;
}

/** What `--verbose` prints under a delivery line: the app's answer headers, then its body. */
export function formatResponseLines(record: DeliveryRecord, style: Style): string[] {
  record = terminalSafe(record);
  const response = record.response;
  if (response === undefined) return [];
  const lines = response.headers.map(([name, value]) => style.dim(`    ${name}: ${value}`));
  const body = response.body;
  if (body.length > 0) {
    const text = body.toString('utf8');
    // Shown as text only when it is text: invalid UTF-8 or control characters would garble the terminal.
    const printable = Buffer.from(text, 'utf8').equals(body) && !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/u.test(text);
    if (printable) lines.push(...terminalText(text, { lines: true }).split('\n').map((line) => `    ${line}`));
    else lines.push(style.dim(`    <${body.length} bytes of binary body>`));
  }
  if (response.truncated) lines.push(style.dim(`    … (the app sent more than the ${body.length} bytes kept: --capture-response-bytes)`));
  return lines;
}

/** The `--json` line of a delivery: exactly these fields, in this order. */
export interface DeliveryJson {
  message_id: string;
  cursor: string | null;
  method: string;
  path: string;
  status: number | null;
  latency_ms: number;
  attempt: number;
  error: string | null;
  /** Where the message went (the target of the route that took it); null when no route did. */
  target: string | null;
  response_headers: [string, string][];
  /** Base64 of the first bytes of the answer's body; null when there was no answer or capture is off. */
  response_body: string | null;
  response_body_truncated: boolean;
}

export function deliveryJson(record: DeliveryRecord): DeliveryJson {
  return {
    message_id: record.message_id,
    cursor: record.cursor,
    method: record.method,
    path: record.path,
    status: record.status,
    latency_ms: record.latency_ms,
    attempt: record.attempt,
    error: record.error,
    target: record.target,
    response_headers: record.response?.headers ?? [],
    response_body: record.response === undefined ? null : record.response.body.toString('base64'),
    response_body_truncated: record.response?.truncated ?? false,
  };
}

/** A state line (connected, reconnecting, …), with the time in front like delivery lines. */
export function formatStateLine(text: string, style: Style, at: Date): string {
  return `${style.dim(formatClock(at))}  ${text}`;
}

/**
 * One refused request, one line, in the delivery lines' layout: time, REFUSED and the status the
 * sender got, the reason, the request, then what to check.
 * `00:21:47  REFUSED 401 signature_mismatch  POST /  — the x-hub-signature-256 header does not match …`
 */
export function formatRejectionLine(rejection: RejectionOut, style: Style, at: Date): string {
  rejection = terminalSafe(rejection);
  const target = truncate(`${rejection.path}${rejection.query === '' ? '' : `?${rejection.query}`}`, PATH_MAX);
  return [
    style.dim(formatClock(at)),
    `${style.red.bold('REFUSED')} ${style.red(String(rejection.status))} ${rejection.reason}`,
    `${style.bold(rejection.method)} ${target}`,
    `${style.dim('—')} ${rejection.detail}`,
  ].join('  ');
}

/** The `--json` line of a refused request: `type` tells it from a delivery's line, which has none. */
export interface RejectionJson {
  type: 'rejection';
  rejection_id: string;
  endpoint_id: string;
  received_at: string;
  status: number;
  reason: string;
  detail: string;
  method: string;
  path: string;
  query: string;
  size_bytes: number;
  source_address: string;
}

export function rejectionJson(rejection: RejectionOut): RejectionJson {
  return {
    type: 'rejection',
    rejection_id: rejection.id,
    endpoint_id: rejection.endpoint_id,
    received_at: rejection.received_at,
    status: rejection.status,
    reason: rejection.reason,
    detail: rejection.detail,
    method: rejection.method,
    path: rejection.path,
    query: rejection.query,
    size_bytes: rejection.size_bytes,
    source_address: rejection.source_address,
  };
}
