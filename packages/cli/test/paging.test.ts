import { describe, expect, it } from 'vitest';
import { shellQuote } from '../src/format/text.js';
import { collectAllPages, nextPageHint } from '../src/paging.js';

describe('collectAllPages', () => {
  const pages: Record<string, { data: number[]; nextCursor: string | null }> = {
    start: { data: [1, 2], nextCursor: 'b' },
    b: { data: [3, 4], nextCursor: 'c' },
    c: { data: [5], nextCursor: null },
  };

  it('walks every page in order until there is no next cursor', async () => {
    const asked: (string | undefined)[] = [];
    const seen: number[][] = [];
    const rows = await collectAllPages(
      async (cursor) => {
        asked.push(cursor);
        return pages[cursor ?? 'start']!;
      },
      { onPage: (page) => seen.push([...page]) },
    );
    expect(rows).toEqual([1, 2, 3, 4, 5]);
    expect(asked).toEqual([undefined, 'b', 'c']);
    expect(seen).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('starts at a given cursor', async () => {
    expect(await collectAllPages(async (cursor) => pages[cursor ?? 'start']!, { cursor: 'b' })).toEqual([3, 4, 5]);
  });

  it('stops on an empty page even if it names a next cursor', async () => {
    expect(await collectAllPages(async () => ({ data: [], nextCursor: 'again' }))).toEqual([]);
  });

  it('refuses a cursor the server repeats (a loop)', async () => {
    await expect(collectAllPages(async () => ({ data: [1], nextCursor: 'same' }))).rejects.toThrow(/twice/u);
  });
});

describe('nextPageHint', () => {
  it('is the command with its filters and the cursor, ready to paste', () => {
    expect(nextPageHint('hookrelay inbound logs', ['--status', 'succeeded', '--since', '2026-05-01T00:00:00.000Z'], 'eyJpIjoi')).toBe(
      'hookrelay inbound logs --status succeeded --since 2026-05-01T00:00:00.000Z --cursor eyJpIjoi',
    );
  });

  it('quotes what a shell would split or expand', () => {
    expect(shellQuote('plain-word_1.2:3')).toBe('plain-word_1.2:3');
    expect(shellQuote('two words')).toBe("'two words'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('$HOME')).toBe("'$HOME'");
  });
});
