import { stripVTControlCharacters } from 'node:util';

/** Width on screen: escapes take no room. */
export function visibleWidth(text: string): number {
  return stripVTControlCharacters(text).length;
}

export function padEnd(text: string, width: number): string {
  const missing = width - visibleWidth(text);
  return missing > 0 ? text + ' '.repeat(missing) : text;
}

/** Cut plain text to `max` characters, marking the cut. */
export function truncate(text: string, max: number): string {
  if (max < 2 || text.length <= max) return text;
  return `${text.slice(0, max - 1)}…`;
}

/** An argument as a POSIX shell reads it back: plain words as they are, anything else single-quoted. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_./:=@,+%-]+$/u.test(arg)) return arg;
  return `'${arg.replace(/'/gu, `'\\''`)}'`;
}

/** Every C0 control, DEL and every C1 control (U+0080–U+009F, the 8-bit CSI U+009B among them). */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/gu;
const NAMED_ESCAPES = new Map([
  ['\n', '\\n'],
  ['\r', '\\r'],
  ['\t', '\\t'],
]);

/**
 * The one way a server's or a sender's text reaches a terminal: every control character becomes a
 * visible escape (`\x1b`, `\x9b`, `\x7f`, `\n`, `\r`, `\t`), so that text can neither move the
 * cursor, retitle or clear the terminal, plant a link or write the clipboard, nor start a line that
 * looks like the CLI's own. With `lines`, a block of text (a body) keeps its line breaks (LF or
 * CRLF) as lines and escapes everything else. Idempotent: escaped text has no control left.
 */
export function terminalText(text: string, options: { lines?: boolean } = {}): string {
  const escape = (part: string): string => part.replace(CONTROLS, (char) => NAMED_ESCAPES.get(char) ?? `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return options.lines === true ? text.split(/\r?\n/u).map(escape).join('\n') : escape(text);
}

/**
 * A copy of an API answer (or any record a formatter shows) with `terminalText` applied to every
 * string in it, names of record keys included. `payload` and `body` are left as they are: they are
 * blocks, shown by the body formatters with `terminalText(…, { lines: true })` once decoded.
 */
export function terminalSafe<T>(value: T): T {
  return escapeDeep(value, 0) as T;
}

const BLOCK_FIELDS = new Set(['payload', 'body']);
/** Answers are shallow; a deeper value is left to JSON's own escaping in the body formatters. */
const MAX_DEPTH = 8;

function escapeDeep(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return terminalText(value);
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => escapeDeep(item, depth + 1));
  if (Buffer.isBuffer(value) || value instanceof Date) return value;
  // Object.fromEntries defines own properties: a key such as `__proto__` stays data.
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [terminalText(key), depth === 0 && BLOCK_FIELDS.has(key) ? item : escapeDeep(item, depth + 1)]),
  );
}
