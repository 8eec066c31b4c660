import type { RejectionOut } from '@hookrelay/shared';
import type { Style } from './style.js';
import { terminalSafe, terminalText, truncate } from './text.js';
import { formatDuration } from './time.js';

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
  /** The provider the message's headers name (GitHub, Stripe, Slack, Shopify, Standard Webhooks); null when none does. */
  provider: string | null;
  /** The event type the server read from it; null when none. */
  event_type: string | null;
  /** The server re-signed it for this delivery: the sender's signed timestamp was too old for the app's check. */
  resigned: boolean;
  /** When the sender signed it, when the server judged it late (re-signed or not). */
  signed_at?: string | undefined;
  /** Why a late message went with the sender's signature (`no_secret`, `disabled`, `unverified`). */
  resign_skipped?: string | undefined;
  /** An edited replay's copy (`inbound messages replay --set/--header/--body`); absent for any other message. */
  edited?: boolean | undefined;
  /** Of an edited copy: whether the server signed it (--resign); unsigned, it carries none of the original's signatures. */
  signed?: boolean | undefined;
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
/** What the line under a non-2xx delivery shows of the app's answer. */
export const ANSWER_PREVIEW_BYTES = 200;

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

/** How long after its signature a message went: `5 min`, `2 h 10 min`, `3 days`. */
export function formatLateness(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 2 * 86_400) {
    const hours = Math.floor(s / 3600);
    const minutes = Math.floor((s % 3600) / 60);
    return minutes === 0 ? `${hours} h` : `${hours} h ${minutes} min`;
  }
  return `${Math.floor(s / 86_400)} days`;
}

/** How late the delivery at `at` came after the sender's signature; null when the server did not judge it late. */
function lateness(record: DeliveryRecord, at: Date): string | null {
  const signed = record.signed_at === undefined ? Number.NaN : Date.parse(record.signed_at);
  return Number.isNaN(signed) ? null : formatLateness((at.getTime() - signed) / 1000);
}

/**
 * One delivery, one line: time, method, path and query, the provider and event type, the app's
 * status, latency, message id; then what is unusual about it (a replay, an edited copy and
 * whether the server signed it, several attempts, a re-signed or late signature, the error).
 * `12:01:02  POST /stripe  stripe invoice.paid  200  12 ms  0190b2c4-… (re-signed, 12 min late)`
 */
export function formatDeliveryLine(record: DeliveryRecord, style: Style, at: Date, showTarget = false): string {
  record = terminalSafe(record);
  const target = truncate(`${record.path}${record.query === '' ? '' : `?${record.query}`}`, PATH_MAX);
  const what = [record.provider, record.event_type].filter((part) => part !== null).join(' ');
  const parts = [
    style.dim(formatClock(at)),
    `${style.bold(record.method)} ${target}`,
    ...(what === '' ? [] : [style.cyan(what)]),
    formatStatus(record.status, style),
    `${record.latency_ms} ms`,
    style.dim(record.message_id),
  ];
  let line = parts.join('  ');
  if (showTarget && record.target !== null) line += `  ${style.dim(`→ ${record.target}`)}`;
  const notes: string[] = [];
  if (record.replay) notes.push('replay');
  if (record.edited === true) notes.push(record.signed === true ? 'edited' : 'edited, unsigned');
  if (record.attempt > 1) notes.push(`attempt ${record.attempt}`);
  const late = lateness(record, at);
  if (record.resigned) notes.push(late === null ? 're-signed' : `re-signed, ${late} late`);
  else if (late !== null) notes.push(`${late} late, not re-signed`);
  if (notes.length > 0) line += style.dim(` (${notes.join(', ')})`);
  if (record.error !== null) line += `  ${style.red(record.error)}`;
  return line;
}

/** The hmac scheme of a provider whose signature covers a timestamp (the ones re-signing knows). */
const TIMESTAMPED_PROVIDERS: ReadonlySet<string> = new Set(['stripe', 'slack', 'standard_webhooks']);

/**
 * The line under a late delivery that went with the sender's signature: the app's check will
 * likely refuse it, and what makes the server re-sign the next ones. `endpointId` names the
 * endpoint in the command to run.
 */
export function formatLateSignatureLine(record: DeliveryRecord, style: Style, at: Date, endpointId: string): string | null {
  record = terminalSafe(record);
  if (record.resigned || record.resign_skipped === undefined || record.target === null) return null;
  const late = lateness(record, at) ?? 'long';
  const check = record.provider === null ? "the app's signature check" : `the app's ${record.provider} signature check`;
  const scheme = record.provider !== null && TIMESTAMPED_PROVIDERS.has(record.provider) ? ` --hmac-scheme ${record.provider}` : '';
  const id = terminalText(endpointId);
  const fix: Record<string, string> = {
    no_secret: `to have hookrelay re-sign late deliveries, give the endpoint the sender's signing secret: hookrelay inbound update ${id}${scheme} --hmac-secret …`,
    disabled: `re-signing is off for this endpoint: hookrelay inbound update ${id} --resign-late`,
    unverified: `hookrelay re-signs only what it verified when it arrived, and the endpoint's HMAC check was off then: hookrelay inbound update ${id} --verify-hmac`,
  };
  const why = fix[record.resign_skipped] ?? `not re-signed (${record.resign_skipped})`;
  return style.yellow(`    signed ${late} before this delivery: ${check} will likely refuse it; ${why}`);
}

/**
 * The line under a delivery the app answered with a non-2xx: the first ANSWER_PREVIEW_BYTES of
 * its body, on one line, escaped for the terminal; null for a 2xx, no answer or an empty body.
 */
export function formatAnswerPreview(record: DeliveryRecord, style: Style): string | null {
  const body = record.response?.body;
  if (record.status === null || (record.status >= 200 && record.status < 300) || body === undefined || body.length === 0) return null;
  const shown = body.subarray(0, ANSWER_PREVIEW_BYTES);
  // A cut through a UTF-8 sequence leaves a replacement character at the end: not the app's text.
  let text = shown.toString('utf8');
  if (shown.length < body.length && text.endsWith('\ufffd')) text = text.replace(/\ufffd+$/u, '');
  const more = shown.length < body.length || record.response!.truncated;
  return style.dim(`    ↳ ${terminalText(text)}${more ? '…' : ''}`);
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

/** The `--json` line of a delivery: exactly these fields, in this order (`edited` and `signed` only for an edited copy). */
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
  /** The provider its headers name; null when none does. */
  provider: string | null;
  event_type: string | null;
  /** The server re-signed it for this delivery (docs/cli.md, Late signatures). */
  resigned: boolean;
  /** An edited replay's copy, and whether the server signed it: only on such a copy's line. */
  edited?: true;
  signed?: boolean;
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
    provider: record.provider,
    event_type: record.event_type,
    resigned: record.resigned,
    ...(record.edited === true ? { edited: true as const, signed: record.signed === true } : {}),
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

/**
 * A lost connection, summed up once the listener is back and has forwarded what arrived meanwhile:
 * how long it was away (from the last moment the server was heard from), and how many webhooks it
 * forwarded that came in meanwhile (null: unknown, the endpoint could not be read).
 */
export interface GapReport {
  downMs: number;
  arrived: number | null;
}

/** `reconnected after 1m32s; 41 webhooks arrived meanwhile`. */
export function formatGapText(report: GapReport, style: Style): string {
  const arrived =
    report.arrived === null ? '' : report.arrived === 0 ? '; no webhook arrived meanwhile' : `; ${report.arrived} ${report.arrived === 1 ? 'webhook' : 'webhooks'} arrived meanwhile`;
  return `${style.green('reconnected')} after ${formatDuration(report.downMs)}${arrived}`;
}

/** The `--json` line of a gap: `type` tells it from a delivery's line. */
export interface GapJson {
  type: 'reconnected';
  down_ms: number;
  arrived: number | null;
}

export function gapJson(report: GapReport): GapJson {
  return { type: 'reconnected', down_ms: Math.max(0, Math.round(report.downMs)), arrived: report.arrived };
}
