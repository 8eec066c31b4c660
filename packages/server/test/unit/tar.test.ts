import { open, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readTar, TarWriter } from '../../src/lib/tar.js';

async function written(fill: (tar: TarWriter) => Promise<void>): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  await fill(new TarWriter(out));
  out.end();
  return Buffer.concat(chunks);
}

async function entries(archive: Buffer): Promise<{ type: string; name: string; data: string }[]> {
  const read: { type: string; name: string; data: string }[] = [];
  for await (const entry of readTar(Readable.from([archive]))) {
    const parts: Buffer[] = [];
    for await (const part of entry.data()) parts.push(part);
    read.push({ type: entry.type, name: entry.segments.join('/'), data: Buffer.concat(parts).toString() });
  }
  return read;
}

/** A ustar header for `name` as another tool might write it (the checksum made right). */
function header(name: string, size: number): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0, 100);
  block.write(size.toString(8).padStart(11, '0'), 124, 12);
  block.write('0', 156, 1);
  block.write('ustar\u000000', 257, 8);
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 8);
  return block;
}

describe('tar archives of the backup', () => {
  it('reads back what it wrote: directories, buffers, files (a shrunk one padded), long names', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'hookrelay-tar-'));
    try {
      const file = path.join(dir, 'f');
      await writeFile(file, 'abc');
      const handle = await open(file, 'r');
      const long = `${'d'.repeat(120)}/${'e'.repeat(90)}`;
      const archive = await written(async (tar) => {
        await tar.directory('top');
        await tar.buffer('top/a.json', Buffer.from('{"x":1}'));
        // The header says 5 bytes; the file holds 3 (it shrank after its size was read).
        await tar.file('top/f', handle, 5, new Date());
        await tar.buffer(long, Buffer.from('long'));
        await tar.finish();
      });
      await handle.close();
      expect(await entries(archive)).toEqual([
        { type: 'directory', name: 'top', data: '' },
        { type: 'file', name: 'top/a.json', data: '{"x":1}' },
        { type: 'file', name: 'top/f', data: 'abc\0\0' },
        { type: 'file', name: long, data: 'long' },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses an entry that leaves its directory, a damaged header and an archive cut short', async () => {
    const end = Buffer.alloc(1024);
    await expect(entries(Buffer.concat([header('../outside', 0), end]))).rejects.toThrow("the archive's entry ../outside leaves its directory");
    await expect(entries(Buffer.concat([header('/etc/passwd', 0), end]))).rejects.toThrow("the archive's entry /etc/passwd leaves its directory");
    const damaged = header('ok', 0);
    damaged[0] = 'x'.charCodeAt(0);
    await expect(entries(Buffer.concat([damaged, end]))).rejects.toThrow('a header checksum does not match');
    await expect(entries(Buffer.concat([header('ok', 100), Buffer.alloc(10)]))).rejects.toThrow('the archive is truncated');
    await expect(entries(header('ok', 0))).rejects.toThrow('the archive is truncated');
  });
});
