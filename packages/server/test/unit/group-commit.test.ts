import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GroupCommit, type GroupCommitOptions } from '../../src/lib/group-commit.js';

/**
 * The group-commit helper every writer shares: which items go together, when a batch starts, what a
 * failed commit does to its items, and when a stop may proceed. Commits here are promises the test
 * settles, and time is fake, so every step is explicit.
 */

interface Commit<T> {
  items: T[];
  resolve(outcomes: unknown[]): void;
  reject(error: unknown): void;
}

function harness<T, R = string>(options: Omit<GroupCommitOptions<T, R>, 'commit'> = {}) {
  const commits: Commit<T>[] = [];
  const group = new GroupCommit<T, R>({
    ...options,
    commit: (items) =>
      new Promise<R[]>((resolve, reject) => {
        commits.push({ items: [...items], resolve: (outcomes) => resolve(outcomes as R[]), reject });
      }),
  });
  return { group, commits };
}

/** Runs what is due now (the join of the turn, settled commits) without moving time. */
const turn = () => vi.advanceTimersByTimeAsync(0);

/** Tracks a promise's state without awaiting it. */
function track<V>(promise: Promise<V>) {
  const state: { settled: boolean; value?: V; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('GroupCommit batches', () => {
  it('puts the items of one turn in one batch, starts it in the next turn, and answers each caller with its own outcome', async () => {
    const { group, commits } = harness<string>();
    const a = track(group.enqueue('a'));
    const b = track(group.enqueue('b'));
    const c = track(group.enqueue('c'));
    expect(commits).toHaveLength(0);
    await turn();
    expect(commits.map((x) => x.items)).toEqual([['a', 'b', 'c']]);
    commits[0]!.resolve(['A', 'B', 'C']);
    await turn();
    expect([a.value, b.value, c.value]).toEqual(['A', 'B', 'C']);
  });

  it('sends what queued during a commit in the next batch, as soon as the commit ends, in arrival order', async () => {
    const { group, commits } = harness<number>();
    const first = track(group.enqueue(1));
    await turn();
    const later = [2, 3, 4].map((n) => track(group.enqueue(n)));
    await turn();
    // One batch at a time: the later items wait for the commit in flight.
    expect(commits).toHaveLength(1);
    commits[0]!.resolve(['one']);
    await vi.advanceTimersByTimeAsync(0);
    expect(first.value).toBe('one');
    expect(commits.map((x) => x.items)).toEqual([[1], [2, 3, 4]]);
    commits[1]!.resolve(['two', 'three', 'four']);
    await turn();
    expect(later.map((s) => s.value)).toEqual(['two', 'three', 'four']);
  });

  it('ends a batch at maxBatch items, and at maxBatchSize except for its first item', async () => {
    const { group, commits } = harness<number>({ maxBatch: 3 });
    for (let i = 1; i <= 7; i++) void group.enqueue(i);
    await turn();
    expect(commits.map((x) => x.items)).toEqual([[1, 2, 3]]);
    commits[0]!.resolve([]);
    await turn();
    commits[1]!.resolve([]);
    await turn();
    expect(commits.map((x) => x.items)).toEqual([[1, 2, 3], [4, 5, 6], [7]]);

    const sized = harness<number>({ sizeOf: (n) => n, maxBatchSize: 10 });
    for (const n of [25, 4, 6, 1, 9, 2]) void sized.group.enqueue(n);
    await turn();
    for (let i = 0; i < 4; i++) {
      sized.commits[i]?.resolve([]);
      await turn();
    }
    // 25 alone (a batch always takes one), 4 + 6 = 10, 1 + 9 = 10, 2.
    expect(sized.commits.map((x) => x.items)).toEqual([[25], [4, 6], [1, 9], [2]]);
  });

  it('never puts two items of one key in a batch: the batch ends before the second', async () => {
    const { group, commits } = harness<{ key: string; n: number }>({ keyOf: (x) => x.key });
    for (const [key, n] of [['a', 1], ['b', 2], ['a', 3], ['c', 4], ['a', 5]] as const) void group.enqueue({ key, n });
    await turn();
    for (let i = 0; i < 3; i++) {
      commits[i]?.resolve([]);
      await turn();
    }
    expect(commits.map((x) => x.items.map((i) => i.n))).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('keeps up to maxInFlight batches committing at once, and starts the next when one ends', async () => {
    const { group, commits } = harness<number>({ maxInFlight: 2, maxBatch: 2 });
    for (let i = 1; i <= 4; i++) void group.enqueue(i);
    await turn();
    expect(commits.map((x) => x.items)).toEqual([[1, 2], [3, 4]]);
    // A newcomer while both are in flight waits for one of them.
    void group.enqueue(5);
    await turn();
    expect(commits).toHaveLength(2);
    commits[1]!.resolve([]);
    await turn();
    expect(commits.map((x) => x.items)).toEqual([[1, 2], [3, 4], [5]]);
    // With one slot free a newcomer goes in the next turn, beside the commit still in flight.
    commits[2]!.resolve([]);
    await turn();
    void group.enqueue(6);
    await turn();
    expect(commits.map((x) => x.items).at(-1)).toEqual([6]);
    expect(commits).toHaveLength(4);
  });
});

describe('GroupCommit linger', () => {
  it('holds items that can wait for lingerMs, so that items coming one by one share a commit', async () => {
    const { group, commits } = harness<number>({ lingerMs: 100 });
    void group.enqueue(1, true);
    await vi.advanceTimersByTimeAsync(40);
    void group.enqueue(2, true);
    await vi.advanceTimersByTimeAsync(59);
    expect(commits).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(commits.map((x) => x.items)).toEqual([[1, 2]]);

    // Held items that queued during a commit start a new linger when it ends.
    void group.enqueue(3, true);
    await vi.advanceTimersByTimeAsync(10);
    commits[0]!.resolve([]);
    await turn();
    await vi.advanceTimersByTimeAsync(99);
    expect(commits).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(commits.map((x) => x.items)).toEqual([[1, 2], [3]]);
  });

  it('sends the held items at once with an item someone waits on, with a full batch, and on idle()', async () => {
    const { group, commits } = harness<number>({ lingerMs: 60_000, maxBatch: 4 });
    void group.enqueue(1, true);
    void group.enqueue(2, true);
    await vi.advanceTimersByTimeAsync(10);
    expect(commits).toHaveLength(0);
    void group.enqueue(3);
    await turn();
    expect(commits.map((x) => x.items)).toEqual([[1, 2, 3]]);
    commits[0]!.resolve([]);
    await turn();

    for (const n of [4, 5, 6]) void group.enqueue(n, true);
    await vi.advanceTimersByTimeAsync(10);
    expect(commits).toHaveLength(1);
    void group.enqueue(7, true);
    await turn();
    expect(commits.map((x) => x.items).at(-1)).toEqual([4, 5, 6, 7]);
    commits[1]!.resolve([]);
    await turn();

    void group.enqueue(8, true);
    await turn();
    expect(commits).toHaveLength(2);
    const stopped = track(group.idle());
    await turn();
    expect(commits.map((x) => x.items).at(-1)).toEqual([8]);
    expect(stopped.settled).toBe(false);
    commits[2]!.resolve([]);
    await turn();
    expect(stopped.settled).toBe(true);
  });
});

describe('GroupCommit failures', () => {
  it('fails every item of a failed batch with the error by default, and goes on with the next batch', async () => {
    const { group, commits } = harness<number>();
    const failed = [1, 2].map((n) => track(group.enqueue(n)));
    await turn();
    const next = track(group.enqueue(3));
    const boom = new Error('refused');
    commits[0]!.reject(boom);
    await turn();
    expect(failed.map((s) => s.error)).toEqual([boom, boom]);
    expect(commits.map((x) => x.items)).toEqual([[1, 2], [3]]);
    commits[1]!.resolve(['three']);
    await turn();
    expect(next.value).toBe('three');
  });

  it('fails the batch with the error the policy names', async () => {
    const cause = new Error('the cause');
    const { group, commits } = harness<number>({ onFailure: () => ({ action: 'fail', error: cause }) });
    const items = [1, 2].map((n) => track(group.enqueue(n)));
    await turn();
    commits[0]!.reject(new Error('wrapper'));
    await turn();
    expect(items.map((s) => s.error)).toEqual([cause, cause]);
  });

  it('split: commits each item of a failed batch alone, in order, so that only the bad one fails', async () => {
    const seen: [number[], number][] = [];
    const { group, commits } = harness<number>({
      onFailure: (_error, batch, failures) => {
        seen.push([[...batch], failures]);
        return { action: 'split' };
      },
    });
    const items = [1, 2, 3].map((n) => track(group.enqueue(n)));
    await turn();
    commits[0]!.reject(new Error('one of them is bad'));
    await turn();
    expect(commits.map((x) => x.items)).toEqual([[1, 2, 3], [1]]);
    commits[1]!.resolve(['one']);
    await turn();
    const bad = new Error('2 is bad');
    commits[2]!.reject(bad);
    await turn();
    commits[3]!.resolve(['three']);
    await turn();
    expect(commits.map((x) => x.items)).toEqual([[1, 2, 3], [1], [2], [3]]);
    expect(items.map((s) => s.value ?? s.error)).toEqual(['one', bad, 'three']);
    // A batch of one that asks to split fails: it cannot get smaller.
    expect(seen).toEqual([[[1, 2, 3], 1], [[2], 1]]);
  });

  it('retry: commits the batch again after the delay, with the items that queued meanwhile, and counts the failures', async () => {
    const seen: number[] = [];
    const { group, commits } = harness<number>({
      maxBatch: 3,
      onFailure: (_error, _batch, failures) => {
        seen.push(failures);
        return failures < 3 ? { action: 'retry', delayMs: 200 } : { action: 'fail', error: new Error('gave up') };
      },
    });
    const first = track(group.enqueue(1));
    await turn();
    commits[0]!.reject(new Error('down'));
    await turn();
    const queued = [2, 3, 4].map((n) => track(group.enqueue(n)));
    await vi.advanceTimersByTimeAsync(199);
    expect(commits).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    // Topped up to maxBatch; 4 waits behind it.
    expect(commits.map((x) => x.items)).toEqual([[1], [1, 2, 3]]);
    commits[1]!.reject(new Error('still down'));
    await vi.advanceTimersByTimeAsync(200);
    commits[2]!.resolve(['one', 'two', 'three']);
    await turn();
    expect([first.value, ...queued.slice(0, 2).map((s) => s.value)]).toEqual(['one', 'two', 'three']);
    expect(commits.map((x) => x.items).at(-1)).toEqual([4]);
    expect(seen).toEqual([1, 2]);

    commits[3]!.reject(new Error('down'));
    await vi.advanceTimersByTimeAsync(200);
    commits[4]!.reject(new Error('down'));
    await vi.advanceTimersByTimeAsync(200);
    commits[5]!.reject(new Error('down'));
    await turn();
    expect(seen).toEqual([1, 2, 1, 2, 3]);
    expect((queued[2]!.error as Error).message).toBe('gave up');
  });

  it('a policy that throws fails the batch with what it threw', async () => {
    const thrown = new Error('policy failed');
    const { group, commits } = harness<number>({
      onFailure: () => {
        throw thrown;
      },
    });
    const item = track(group.enqueue(1));
    await turn();
    commits[0]!.reject(new Error('refused'));
    await turn();
    expect(item.error).toBe(thrown);
  });
});

describe('GroupCommit idle()', () => {
  it('resolves at once when nothing is queued, and otherwise once every item queued before and during the commits is settled', async () => {
    const { group, commits } = harness<number>({ onFailure: () => ({ action: 'retry', delayMs: 50 }) });
    expect(group.busy).toBe(false);
    const empty = track(group.idle());
    await turn();
    expect(empty.settled).toBe(true);

    const items = [track(group.enqueue(1))];
    const stopped = track(group.idle());
    await turn();
    items.push(track(group.enqueue(2)));
    commits[0]!.reject(new Error('down'));
    await vi.advanceTimersByTimeAsync(50);
    expect(stopped.settled).toBe(false);
    expect(commits.map((x) => x.items)).toEqual([[1], [1, 2]]);
    items.push(track(group.enqueue(3)));
    commits[1]!.resolve([]);
    await turn();
    expect(stopped.settled).toBe(false);
    commits[2]!.resolve([]);
    await turn();
    expect(items.every((s) => s.settled)).toBe(true);
    expect(stopped.settled).toBe(true);
    expect(group.busy).toBe(false);
  });

  it('resolves when the join of a turn finds the queue already taken by the end of a commit', async () => {
    const { group, commits } = harness<number>({ maxInFlight: 2 });
    void group.enqueue(1);
    await turn();
    // 2 schedules a join (a slot is free), but the end of commit 1 takes it first.
    void group.enqueue(2);
    commits[0]!.resolve([]);
    const stopped = track(group.idle());
    const microtasks = async () => {
      for (let i = 0; i < 20; i++) await Promise.resolve();
    };
    await microtasks();
    expect(commits.map((x) => x.items)).toEqual([[1], [2]]);
    commits[1]!.resolve([]);
    await microtasks();
    await turn();
    expect(stopped.settled).toBe(true);
  });
});
