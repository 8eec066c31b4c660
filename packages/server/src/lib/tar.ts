import type { FileHandle } from 'node:fs/promises';
import type { Writable } from 'node:stream';

/**
 * A ustar archive written to a stream and read from one, entry by entry, without holding a whole
 * file in memory: what the embedded database's backup writes and its restore reads. Only files and
 * directories; names below 256 bytes (split into ustar's prefix and name fields).
 */

const BLOCK = 512;
/** A file's data is read and written in pieces of this size. */
const PIECE = 1 << 20;
/** ustar's size field: 11 octal digits. */
const MAX_ENTRY_SIZE = 8 ** 11 - 1;

function splitName(name: string): { prefix: string; name: string } {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', name };
  // The prefix ends at a `/` and holds at most 155 bytes; the rest is the name (at most 100).
  for (let at = name.indexOf('/'); at !== -1; at = name.indexOf('/', at + 1)) {
    const prefix = name.slice(0, at);
    const rest = name.slice(at + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest !== '') return { prefix, name: rest };
  }
  throw new Error(`the path ${name} is too long for the archive`);
}

function header(name: string, type: 'file' | 'directory', size: number, mtime: Date): Buffer {
  if (size > MAX_ENTRY_SIZE) throw new Error(`the file ${name} is too large for the archive`);
  const block = Buffer.alloc(BLOCK);
  const split = splitName(type === 'directory' ? `${name}/` : name);
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  block.write(split.name, 0, 100, 'utf8');
  block.write(octal(type === 'directory' ? 0o700 : 0o600, 8), 100, 8, 'ascii');
  block.write(octal(0, 8), 108, 8, 'ascii');
  block.write(octal(0, 8), 116, 8, 'ascii');
  block.write(octal(size, 12), 124, 12, 'ascii');
  block.write(octal(Math.max(0, Math.floor(mtime.getTime() / 1000)), 12), 136, 12, 'ascii');
  block.write(type === 'directory' ? '5' : '0', 156, 1, 'ascii');
  block.write('ustar\u000000', 257, 8, 'ascii');
  block.write(split.prefix, 345, 155, 'utf8');
  // The checksum is computed with its own field as spaces.
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${octal(sum, 7)}\u0000 `, 148, 8, 'ascii');
  return block;
}

/** Writes entries to `out`, waiting whenever it asks to (backpressure). */
export class TarWriter {
  constructor(private readonly out: Writable) {}

  private async write(chunk: Buffer): Promise<void> {
    if (this.out.destroyed) throw new Error('the archive stream was closed');
    if (this.out.write(chunk)) return;
    await new Promise<void>((resolve, reject) => {
      const onDrain = () => {
        this.out.off('close', onClose);
        resolve();
      };
      const onClose = () => {
        this.out.off('drain', onDrain);
        reject(new Error('the archive stream was closed'));
      };
      this.out.once('drain', onDrain);
      this.out.once('close', onClose);
    });
  }

  async directory(name: string, mtime = new Date()): Promise<void> {
    await this.write(header(name, 'directory', 0, mtime));
  }

  async buffer(name: string, data: Buffer, mtime = new Date()): Promise<void> {
    await this.write(header(name, 'file', data.length, mtime));
    await this.write(data);
    await this.pad(data.length);
  }

  /**
   * The first `size` bytes of an open file. A file that shrinks meanwhile is padded with zeros to
   * `size`, and what it grows by is left out: the header, written first, has said its size.
   */
  async file(name: string, handle: FileHandle, size: number, mtime: Date): Promise<void> {
    await this.write(header(name, 'file', size, mtime));
    let done = 0;
    while (done < size) {
      const piece = Buffer.alloc(Math.min(PIECE, size - done));
      const { bytesRead } = await handle.read(piece, 0, piece.length, done);
      done += piece.length;
      // Zeros past a short read: the buffer was allocated zeroed.
      await this.write(bytesRead === piece.length ? piece : Buffer.concat([piece.subarray(0, bytesRead), Buffer.alloc(piece.length - bytesRead)]));
    }
    await this.pad(size);
  }

  private async pad(size: number): Promise<void> {
    const rest = size % BLOCK;
    if (rest !== 0) await this.write(Buffer.alloc(BLOCK - rest));
  }

  /** The end-of-archive marker: two zero blocks. */
  async finish(): Promise<void> {
    await this.write(Buffer.alloc(2 * BLOCK));
  }
}

export interface TarReadEntry {
  type: 'file' | 'directory';
  /** The path's segments, none of them empty, `.` or `..`. */
  segments: string[];
  size: number;
  /** The file's data in pieces (a directory has none); must be read to its end before the next entry. */
  data(): AsyncGenerator<Buffer>;
}

/** Reads exact byte counts from a stream of chunks. */
class ByteReader {
  private buffered: Buffer[] = [];
  private length = 0;
  constructor(private readonly chunks: AsyncIterator<Buffer>) {}

  /** Up to `max` bytes (at least 1), or undefined at the end of the stream. */
  async some(max: number): Promise<Buffer | undefined> {
    if (this.length === 0) {
      const next = await this.chunks.next();
      if (next.done) return undefined;
      this.buffered.push(next.value);
      this.length += next.value.length;
    }
    const first = this.buffered[0]!;
    if (first.length <= max) {
      this.buffered.shift();
      this.length -= first.length;
      return first;
    }
    this.buffered[0] = first.subarray(max);
    this.length -= max;
    return first.subarray(0, max);
  }

  /** Exactly `n` bytes; throws when the stream ends first. */
  async exactly(n: number): Promise<Buffer> {
    const parts: Buffer[] = [];
    let got = 0;
    while (got < n) {
      const part = await this.some(n - got);
      if (part === undefined) throw new Error('the archive is truncated');
      parts.push(part);
      got += part.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }
}

function field(block: Buffer, start: number, length: number): string {
  const bytes = block.subarray(start, start + length);
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end === -1 ? length : end).toString('utf8');
}

/** The entries of a ustar archive read from `chunks`, up to its end-of-archive marker (required). */
export async function* readTar(chunks: AsyncIterable<Buffer>): AsyncGenerator<TarReadEntry> {
  const reader = new ByteReader(chunks[Symbol.asyncIterator]());
  for (;;) {
    const block = await reader.exactly(BLOCK);
    if (block.every((byte) => byte === 0)) return;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]!;
    if (Number.parseInt(field(block, 148, 8).trim(), 8) !== sum) throw new Error('the archive is damaged (a header checksum does not match)');
    const name = field(block, 0, 100);
    const prefix = field(block, 257, 6).startsWith('ustar') ? field(block, 345, 155) : '';
    const full = prefix === '' ? name : `${prefix}/${name}`;
    const size = Number.parseInt(field(block, 124, 12).trim() || '0', 8);
    if (!Number.isSafeInteger(size) || size < 0) throw new Error(`the archive is damaged (the entry ${full} has no valid size)`);
    const segments = full.split('/').filter((s) => s !== '' && s !== '.');
    if (full.startsWith('/') || segments.some((s) => s === '..')) throw new Error(`the archive's entry ${full} leaves its directory`);
    const flag = String.fromCharCode(block[156]!);
    const type = flag === '5' ? 'directory' : flag === '0' || flag === '\0' ? 'file' : undefined;
    if (type === undefined) throw new Error(`the archive's entry ${full} has the unsupported type ${JSON.stringify(flag)}`);
    let consumed = false;
    const dataSize = type === 'file' ? size : 0;
    async function* data(): AsyncGenerator<Buffer> {
      consumed = true;
      let left = dataSize;
      while (left > 0) {
        const part = await reader.some(Math.min(left, PIECE));
        if (part === undefined) throw new Error('the archive is truncated');
        left -= part.length;
        yield part;
      }
      const rest = dataSize % BLOCK;
      if (rest !== 0) await reader.exactly(BLOCK - rest);
    }
    if (segments.length === 0) {
      for await (const _ of data());
      continue;
    }
    yield { type, segments, size: dataSize, data };
    if (!consumed) for await (const _ of data());
  }
}
