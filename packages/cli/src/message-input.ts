import { readFile } from 'node:fs/promises';
import type { MessageCreateIn } from '@hookrelay/shared';
import { usageFailure } from './errors.js';

/** The flags of `messages send` that say where the message body comes from and what it is. */
export interface MessageInputFlags {
  data?: string | undefined;
  file?: string | undefined;
  'content-type'?: string | undefined;
}

/** Where input is read from; injected so that tests need no files or pipes. */
export interface MessageInputSource {
  stdinIsTTY: boolean;
  readStdin: () => Promise<Buffer>;
  readFile: (path: string) => Promise<Buffer>;
}

export const processInputSource: MessageInputSource = {
  get stdinIsTTY() {
    return process.stdin.isTTY === true;
  },
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks);
  },
  readFile: (path) => readFile(path),
};

/**
 * A media type whose body is JSON: `application/json` and any `+json` suffix
 * (`application/cloudevents+json`), parameters ignored.
 */
export function isJsonMediaType(contentType: string): boolean {
  const essence = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  const subtype = essence.split('/')[1] ?? '';
  return subtype === 'json' || subtype.endsWith('+json');
}

/** The body part of `POST /v1/messages`: `payload` for JSON, `body` (text) with `content_type` otherwise. */
export type MessageBody = Pick<MessageCreateIn, 'payload' | 'body' | 'content_type'>;

interface RawInput {
  bytes: Buffer;
  /** For messages: "--data", "--file payload.json", "stdin". */
  origin: string;
}

async function readFileInput(path: string, origin: string, source: MessageInputSource): Promise<RawInput> {
  try {
    return { bytes: await source.readFile(path), origin };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory, not a file' : (error as Error).message;
    throw usageFailure(`${origin}: ${why}`);
  }
}

async function readStdinInput(origin: string, source: MessageInputSource, empty: { message: string; hint: string }): Promise<RawInput> {
  const bytes = await source.readStdin();
  if (bytes.length === 0) throw usageFailure(empty.message, empty.hint);
  return { bytes, origin };
}

async function readInput(flags: MessageInputFlags, source: MessageInputSource): Promise<RawInput> {
  if (flags.data !== undefined) return { bytes: Buffer.from(flags.data, 'utf8'), origin: '--data' };
  if (flags.file !== undefined && flags.file !== '-') return readFileInput(flags.file, `--file ${flags.file}`, source);
  if (flags.file === undefined && source.stdinIsTTY) {
    throw usageFailure('no message body given', 'Give --data \'{"…": …}\', --file PATH, or pipe the body on stdin.');
  }
  return readStdinInput('stdin', source, { message: 'no message body on stdin (it was empty)', hint: 'Pipe the body on stdin, or give --data or --file.' });
}

/** `what` names the input in messages: "the body from --data", "--schema @schema.json". */
function decodeUtf8(input: RawInput, what: string): string {
  const text = input.bytes.toString('utf8');
  if (Buffer.byteLength(text, 'utf8') !== input.bytes.length || text.includes('\uFFFD')) {
    throw usageFailure(
      `${what} is not UTF-8 text`,
      'Messages carry JSON or text; encode binary data first (for example as base64 in a JSON field).',
    );
  }
  // A byte-order mark is not part of the text (editors on Windows add one).
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

function parseJsonText<T>(text: string, what: string, hint: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw usageFailure(`${what} is not valid JSON: ${(error as Error).message}`, hint);
  }
}

/** Text given as a flag's value: the value itself, or `@PATH` (that file's text) or `@-` (stdin), as curl reads `@`. */
export interface FlagText {
  text: string;
  /** For messages: `--schema`, `--schema @schema.json`, `--payload @-`. */
  origin: string;
}

/**
 * A flag value as text: as it is, or read from the file `@PATH` names, or from stdin for `@-`
 * (refused on a terminal, where it would wait for typing). Files and stdin must hold UTF-8; a
 * byte-order mark is dropped.
 */
export async function readFlagText(flag: string, value: string, source: MessageInputSource = processInputSource): Promise<FlagText> {
  if (!value.startsWith('@')) return { text: value, origin: `--${flag}` };
  const path = value.slice(1);
  const origin = `--${flag} ${value}`;
  if (path === '') throw usageFailure(`--${flag} @: a file path must follow the @ (@- reads stdin)`);
  let input: RawInput;
  if (path === '-') {
    if (source.stdinIsTTY) throw usageFailure(`${origin}: stdin is a terminal`, `Pipe the input in, or give --${flag} @PATH.`);
    input = await readStdinInput(origin, source, { message: `${origin}: stdin was empty`, hint: `Pipe the input in, or give --${flag} @PATH.` });
  } else {
    input = await readFileInput(path, origin, source);
  }
  return { text: decodeUtf8(input, origin), origin };
}

/** A flag value that holds JSON, inline or `@PATH` / `@-` (`readFlagText`); not JSON is a usage error naming the flag. */
export async function readFlagJson(flag: string, value: string, source: MessageInputSource = processInputSource): Promise<unknown> {
  const { text, origin } = await readFlagText(flag, value, source);
  const hint = !value.startsWith('@')
    ? `Quote the JSON for the shell, or put it in a file and give --${flag} @PATH.`
    : value === '@-' ? 'The input must be one JSON value.' : 'The file must hold one JSON value.';
  return parseJsonText<unknown>(text, origin, hint);
}

/**
 * The message body from `--data`, `--file` (`-` for stdin) or stdin. Without `--content-type`, or
 * with a JSON one, it must be JSON and is sent as `payload`; any other content type sends the text
 * verbatim as `body` with that `content_type`.
 */
export async function messageBodyFromFlags(flags: MessageInputFlags, source: MessageInputSource = processInputSource): Promise<MessageBody> {
  const contentType = flags['content-type'];
  const input = await readInput(flags, source);
  const text = decodeUtf8(input, `the body from ${input.origin}`);
  if (contentType === undefined || isJsonMediaType(contentType)) {
    const payload = parseJsonText<MessageBody['payload']>(text, `the body from ${input.origin}`, 'A body that is not JSON needs --content-type (for example --content-type text/plain).');
    return contentType === undefined ? { payload } : { payload, content_type: contentType };
  }
  return { body: text, content_type: contentType };
}

