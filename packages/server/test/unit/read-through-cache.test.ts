import { describe, expect, it } from 'vitest';
import { ReadThroughCache } from '../../src/lib/read-through-cache.js';

describe('ReadThroughCache', () => {
  it('reads a key once, keeps what it read (null included) for ttlMs, then reads it again', async () => {
    const reads: string[] = [];
    const cache = new ReadThroughCache(async (key: string) => {
      reads.push(key);
      return key === 'gone' ? null : `${key}#${reads.length}`;
    }, 1000);
    expect(cache.peek('a', 0)).toBeUndefined();
    expect(await cache.get('a', 0)).toBe('a#1');
    expect(await cache.get('gone', 0)).toBeNull();
    expect([await cache.get('a', 999), await cache.get('gone', 999), cache.peek('a', 999)]).toEqual(['a#1', null, 'a#1']);
    expect(reads).toEqual(['a', 'gone']);
    expect(cache.peek('a', 1000)).toBeUndefined();
    expect(await cache.get('a', 1000)).toBe('a#3');
    cache.delete('a');
    expect(await cache.get('a', 1001)).toBe('a#4');
  });

  it('starts afresh past maxEntries', async () => {
    const cache = new ReadThroughCache(async (key: number) => key, 60_000, 2);
    for (const key of [1, 2, 3]) await cache.get(key, 0);
    expect([cache.peek(1, 0), cache.peek(2, 0), cache.peek(3, 0)]).toEqual([undefined, undefined, 3]);
  });
});
