import { describe, expect, it } from 'vitest';
import { LogFollower } from '../src/log-follow.js';

interface Row {
  id: string;
  at: string;
}

const t = (seconds: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString();
const row = (id: string, seconds: number): Row => ({ id, at: t(seconds) });
const follower = (): LogFollower<Row> => new LogFollower<Row>((r) => r.id, (r) => r.at, 5_000);

describe('LogFollower', () => {
  it('prints the first page oldest first, then each new row once', () => {
    const f = follower();
    expect(f.accept([row('c', 30), row('b', 20), row('a', 10)]).map((r) => r.id)).toEqual(['a', 'b', 'c']);
    // The next poll overlaps the window: c again, plus two new rows.
    expect(f.accept([row('e', 32), row('d', 31), row('c', 30)]).map((r) => r.id)).toEqual(['d', 'e']);
    expect(f.accept([row('e', 32), row('d', 31)])).toEqual([]);
  });

  it('asks from a little before the newest row seen', () => {
    const f = follower();
    expect(f.receivedAfter()).toBeUndefined();
    f.accept([row('a', 30)]);
    expect(f.receivedAfter()).toBe(t(25));
  });

  it('keeps a later --since floor', () => {
    const f = follower();
    expect(f.receivedAfter(t(100))).toBe(t(100));
    f.accept([row('a', 30)]);
    expect(f.receivedAfter(t(100))).toBe(t(100));
    expect(f.receivedAfter(t(1))).toBe(t(25));
  });

  it('keeps every new row of a poll, however far apart they are', () => {
    const f = follower();
    f.accept([row('a', 10)]);
    // After a quiet spell, two rows 9 s apart in one poll: both are new.
    expect(f.accept([row('c', 100), row('b', 91)]).map((r) => r.id)).toEqual(['b', 'c']);
  });

  it('catches a row committed late, inside the look-back window', () => {
    const f = follower();
    f.accept([row('b', 30)]);
    expect(f.accept([row('b', 30), row('a', 28)]).map((r) => r.id)).toEqual(['a']);
  });

  it('remembers only the ids inside the window', () => {
    const f = follower();
    f.accept([row('a', 1), row('b', 2), row('c', 3)]);
    f.accept([row('z', 60)]);
    expect(f.remembered).toBe(1);
  });

  it('orders rows of the same time by id', () => {
    const f = follower();
    expect(f.accept([row('b', 5), row('a', 5)]).map((r) => r.id)).toEqual(['a', 'b']);
  });

  it('seeds rows without printing them', () => {
    const f = follower();
    expect(f.accept([row('c', 30)]).map((r) => r.id)).toEqual(['c']);
    f.seed([row('c', 30), row('b', 28)]);
    expect(f.accept([row('d', 31), row('c', 30), row('b', 28)]).map((r) => r.id)).toEqual(['d']);
  });
});
