export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
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
