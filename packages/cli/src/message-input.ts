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

async function readInput(flags: MessageInputFlags, source: MessageInputSource): Promise<RawInput> {
  if (flags.data !== undefined) return { bytes: Buffer.from(flags.data, 'utf8'), origin: '--data' };
  if (flags.file !== undefined && flags.file !== '-') {
    try {
      return { bytes: await source.readFile(flags.file), origin: `--file ${flags.file}` };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw usageFailure(`--file ${flags.file}: ${code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
    }
  }
  if (flags.file === undefined && source.stdinIsTTY) {
    throw usageFailure('no message body given', 'Give --data \'{"…": …}\', --file PATH, or pipe the body on stdin.');
  }
  const bytes = await source.readStdin();
  if (bytes.length === 0) {
    throw usageFailure('no message body on stdin (it was empty)', 'Pipe the body on stdin, or give --data or --file.');
  }
  return { bytes, origin: 'stdin' };
}

function decodeUtf8(input: RawInput): string {
  const text = input.bytes.toString('utf8');
  if (Buffer.byteLength(text, 'utf8') !== input.bytes.length || text.includes('\uFFFD')) {
    throw usageFailure(
      `the body from ${input.origin} is not UTF-8 text`,
      'Messages carry JSON or text; encode binary data first (for example as base64 in a JSON field).',
    );
  }
  // A byte-order mark is not part of the text (editors on Windows add one).
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

/**
 * The message body from `--data`, `--file` (`-` for stdin) or stdin. Without `--content-type`, or
 * with a JSON one, it must be JSON and is sent as `payload`; any other content type sends the text
 * verbatim as `body` with that `content_type`.
 */
export async function messageBodyFromFlags(flags: MessageInputFlags, source: MessageInputSource = processInputSource): Promise<MessageBody> {
  const contentType = flags['content-type'];
  const input = await readInput(flags, source);
  const text = decodeUtf8(input);
  if (contentType === undefined || isJsonMediaType(contentType)) {
    let payload: MessageBody['payload'];
    try {
      payload = JSON.parse(text) as MessageBody['payload'];
    } catch (error) {
      throw usageFailure(
        `the body from ${input.origin} is not valid JSON: ${(error as Error).message}`,
        'A body that is not JSON needs --content-type (for example --content-type text/plain).',
      );
    }
    return contentType === undefined ? { payload } : { payload, content_type: contentType };
  }
  return { body: text, content_type: contentType };
}

