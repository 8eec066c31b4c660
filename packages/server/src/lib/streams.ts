import { Readable } from 'node:stream';

/**
 * `source` with its first piece already read: a source that fails at once (a missing file, a store
 * that cannot be read) rejects here, before an answer has started, rather than cutting it short.
 */
export async function startedStream(source: Readable): Promise<Readable> {
  const pieces = source[Symbol.asyncIterator]();
  const first = await pieces.next();
  return Readable.from(
    (async function* () {
      if (first.done === true) return;
      yield first.value as Buffer;
      for (let next = await pieces.next(); next.done !== true; next = await pieces.next()) yield next.value as Buffer;
    })(),
    { objectMode: false },
  );
}
