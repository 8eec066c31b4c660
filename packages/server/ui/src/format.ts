import { PROVIDER_NAMES } from '@hookrelay/shared/providers';
import type { InboundEndpointMessageOut } from '@hookrelay/shared';

/** One formatter per zone: building one is far slower than using it, and a live list formats hundreds of times. */
const clockFormats = new Map<string, Intl.DateTimeFormat>();

function clockFormat(timeZone: string | undefined): Intl.DateTimeFormat {
  let format = clockFormats.get(timeZone ?? '');
  if (format === undefined) {
    // en-US for the zone's name: a fixed, short form (EST, PDT, UTC; elsewhere the offset, GMT+2).
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      fractionalSecondDigits: 3,
      hourCycle: 'h23',
      timeZoneName: 'short',
    });
    clockFormats.set(timeZone ?? '', format);
  }
  return format;
}

/**
 * `2026-12-03 04:16:56.120 EST`: the time in the browser's zone (or `timeZone`), with the zone's
 * name, so that a time copied from the page says which clock it was read on.
 */
export function formatTime(iso: string | null | undefined, timeZone?: string): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const part: Partial<Record<Intl.DateTimeFormatPartTypes, string>> = {};
  for (const { type, value } of clockFormat(timeZone).formatToParts(date)) part[type] = value;
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second}.${part.fractionalSecond} ${part.timeZoneName}`;
}

/** `2026-12-03 09:16:56.120 UTC`: the same instant on the servers' clock, for a time's tooltip. */
export function formatUtc(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const text = date.toISOString();
  return `${text.slice(0, 10)} ${text.slice(11, 23)} UTC`;
}

type TitledMessage = Pick<InboundEndpointMessageOut, 'method' | 'path' | 'query' | 'event_type' | 'provider' | 'response_status'>;

/** `POST /github?source=ci`: the request line as received (method, sub-path, query). */
export function requestLine(m: Pick<TitledMessage, 'method' | 'path' | 'query'>): string {
  return `${m.method} ${m.path || '/'}${m.query ? `?${m.query}` : ''}`;
}

/** `GitHub`, `Standard Webhooks`; null for a message no provider's headers name. */
export function providerName(provider: TitledMessage['provider']): string | null {
  return provider === null ? null : PROVIDER_NAMES[provider];
}

/**
 * What a message is, as the CLI's lines say it: its event type and provider, then the latest answer's
 * status (`push · GitHub · 200`). Unknown parts are left out; without an event type and a provider,
 * the request line stands for them (`POST /orders · 200`), and without an HTTP answer there is no status.
 */
export function messageTitle(m: TitledMessage): string {
  const what = [m.event_type, providerName(m.provider)].filter((part) => part !== null);
  const parts = what.length === 0 ? [requestLine(m)] : what;
  if (m.response_status !== null) parts.push(String(m.response_status));
  return parts.join(' · ');
}

/** A JSON token: a string (escapes included), a structural character, or a run of a literal or number. */
const JSON_TOKEN = /"(?:[^"\\]|\\.)*"|[{}[\],:]|[^\s{}[\],:"]+/gu;

/**
 * Valid JSON text laid out two spaces a level, or null when the text is not JSON. The text's own
 * tokens are kept (not parsed and written again), so a number beyond a double's precision or a
 * repeated key reads as the app sent it.
 */
export function indentJson(text: string): string | null {
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  const tokens = text.match(JSON_TOKEN) ?? [];
  const lines: string[] = [];
  let depth = 0;
  let line = '';
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === '{' || token === '[') {
      const close = token === '{' ? '}' : ']';
      if (tokens[i + 1] === close) {
        line += token + close;
        i++;
        continue;
      }
      lines.push(line + token);
      depth++;
      line = '  '.repeat(depth);
    } else if (token === '}' || token === ']') {
      lines.push(line);
      depth--;
      line = '  '.repeat(depth) + token;
    } else if (token === ',') {
      lines.push(line + ',');
      line = '  '.repeat(depth);
    } else if (token === ':') {
      line += ': ';
    } else {
      line += token;
    }
  }
  lines.push(line);
  return lines.join('\n');
}

/** 2xx: the answers whose body stays folded. */
export function isSuccess(status: number | null): boolean {
  return status !== null && status >= 200 && status < 300;
}

/** `<input type=datetime-local>` holds local time without a zone: the API wants RFC 3339 (none for an empty field). */
export function localTimeToIso(local: string): string | undefined {
  return local === '' ? undefined : new Date(local).toISOString();
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export function formatMs(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '—' : `${ms} ms`;
}

export function statusClass(status: number | null | undefined): string {
  if (status === null || status === undefined) return 'none';
  return `s${Math.floor(status / 100)}xx`;
}

export function base64ToBytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function hex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

/** SHA-256 in the browser; null where WebCrypto is unavailable (a page not served over a secure context). */
export async function sha256(bytes: Uint8Array): Promise<string | null> {
  if (!globalThis.crypto?.subtle) return null;
  return hex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)));
}

/** UTF-8 text, or null when the bytes are not valid UTF-8 or hold control characters other than whitespace. */
export function asText(bytes: Uint8Array): string | null {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u0008\u000e-\u001f\u007f]/.test(text) ? null : text;
}

/** Lines of `offset  hex bytes  ascii`, 16 bytes each. */
export function hexDump(bytes: Uint8Array, limit = 64 * 1024): string {
  const lines: string[] = [];
  const end = Math.min(bytes.length, limit);
  for (let offset = 0; offset < end; offset += 16) {
    const row = bytes.subarray(offset, Math.min(offset + 16, end));
    const hexPart = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hexPart.padEnd(47)}  ${ascii}`);
  }
  if (bytes.length > end) lines.push(`… ${bytes.length - end} more bytes`);
  return lines.join('\n');
}

const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** Headers curl sets itself, or that belong to the hop the webhook arrived on. */
const CURL_SKIPS = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect', 'te', 'trailer', 'proxy-connection']);

/** Printable ASCII: the only characters a copied command holds, so a paste cannot carry terminal controls. */
const PRINTABLE = /^[\x20-\x7e]*$/u;

/** The bytes of received text: a character up to U+00FF is the one byte Node read it from (latin1), any other its UTF-8. */
function receivedBytes(text: string): number[] {
  const bytes: number[] = [];
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if (code <= 0xff) bytes.push(code);
    else bytes.push(...new TextEncoder().encode(c));
  }
  return bytes;
}

/** A POSIX `printf` format that writes the bytes: plain printable ASCII as is, every other byte as an octal escape. */
function printfFormat(bytes: Iterable<number>): string {
  let escaped = '';
  for (const b of bytes) {
    const c = String.fromCharCode(b);
    escaped += b >= 0x20 && b < 0x7f && c !== "'" && c !== '\\' && c !== '%' ? c : `\\${b.toString(8).padStart(3, '0')}`;
  }
  return `'${escaped}'`;
}

/**
 * The URL as curl sends it unchanged: `#` would end the URL there (a fragment is not sent), so it
 * is written `%23`; a byte outside printable ASCII is percent-encoded, as curl would send it.
 */
function curlUrl(url: string): string {
  let out = '';
  for (const c of url) {
    if (c === '#') out += '%23';
    else if (PRINTABLE.test(c)) out += c;
    else for (const b of receivedBytes(c)) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return shellQuote(out);
}

/**
 * One `-H` argument. curl drops a header given as `name:` with nothing after it, and sends
 * `name;` as the empty header; a line with bytes outside printable ASCII goes through `printf`.
 */
function curlHeader(name: string, value: string): string {
  const line = value === '' ? `${name};` : `${name}: ${value}`;
  return PRINTABLE.test(line) ? `-H ${shellQuote(line)}` : `-H "$(printf ${printfFormat(receivedBytes(line))})"`;
}

/**
 * A shell command that sends the exact request, once: `--globoff` keeps a sender's `{a,b}` and
 * `[1-9]` in the path or query (and a redacted `[redacted]`) as text rather than a list of URLs,
 * and `--path-as-is` keeps `/../` as received rather than a step to another path of the server.
 * Every argument is single-quoted, and the whole command is printable ASCII. The body goes through
 * `printf` with every byte that is not plain printable ASCII written as an octal escape (POSIX
 * printf, so sh, bash and zsh agree, NUL bytes included), piped to curl's `--data-binary @-`.
 */
export function curlCommand(method: string, url: string, headers: readonly [string, string][], body: Uint8Array): string {
  const parts = [`curl --globoff --path-as-is -X ${shellQuote(method)}`, curlUrl(url)];
  for (const [name, value] of headers) if (!CURL_SKIPS.has(name.toLowerCase())) parts.push(curlHeader(name, value));
  if (body.length === 0) return parts.join(' \\\n  ');
  return `printf ${printfFormat(body)} | ${parts.join(' \\\n  ')} \\\n  --data-binary @-`;
}
