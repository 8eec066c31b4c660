import { uuidv7AtTime } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { formatGapText, gapJson } from '../src/format/listen.js';
import { plainStyle } from '../src/format/style.js';
import { ConnectionGap } from '../src/listen/gap.js';

/**
 * The gap a lost connection leaves and its one line: when it starts and ends, what it counts (the
 * messages forwarded above the cursor at the loss, up to the endpoint's newest at the reconnection),
 * and when the line comes.
 */

const id = (n: number): string => uuidv7AtTime(1_780_000_000_000 + n);

describe('ConnectionGap', () => {
  it('counts what arrived while away, and reports once it is forwarded up to the newest message at the reconnection', () => {
    const gap = new ConnectionGap();
    expect(gap.open).toBe(false);
    gap.lost(1_000, id(1));
    expect(gap.open).toBe(true);
    // Later failures of the same outage move neither its start nor its cursor.
    gap.lost(5_000, id(9));
    expect(gap.reconnected(93_000, id(4))).toBeNull();
    expect(gap.open).toBe(false);
    // A message received before the loss and forwarded only now did not arrive meanwhile.
    expect(gap.forwarded(id(1))).toBeNull();
    expect(gap.forwarding(id(2))).toBeNull();
    expect(gap.forwarded(id(2))).toBeNull();
    expect(gap.forwarded(id(3))).toBeNull();
    expect(gap.forwarded(id(4))).toEqual({ downMs: 92_000, arrived: 3 });
    // Once only.
    expect(gap.forwarded(id(5))).toBeNull();
  });

  it('reports at once when nothing arrived, or when the newest message could not be read (no count)', () => {
    const nothing = new ConnectionGap();
    nothing.lost(0, id(3));
    expect(nothing.reconnected(4_000, id(3))).toEqual({ downMs: 4_000, arrived: 0 });
    const empty = new ConnectionGap();
    empty.lost(0, id(3));
    expect(empty.reconnected(4_000, null)).toEqual({ downMs: 4_000, arrived: 0 });
    const unknown = new ConnectionGap();
    unknown.lost(0, id(3));
    expect(unknown.reconnected(4_000, undefined)).toEqual({ downMs: 4_000, arrived: null });
  });

  it('a message past the catch-up ends it before it is forwarded; so does a cursor moved past it by a filter', () => {
    const past = new ConnectionGap();
    past.lost(0, id(1));
    past.reconnected(2_000, id(3));
    expect(past.forwarded(id(2))).toBeNull();
    // The newest message at the reconnection was skipped by the filter: the next one ends the count.
    expect(past.forwarding(id(7))).toEqual({ downMs: 2_000, arrived: 1 });
    const skipped = new ConnectionGap();
    skipped.lost(0, id(1));
    skipped.reconnected(2_000, id(3));
    expect(skipped.passed(id(2))).toBeNull();
    expect(skipped.passed(id(3))).toEqual({ downMs: 2_000, arrived: 0 });
  });

  it('is no gap before a first connection, nor without an outage', () => {
    const gap = new ConnectionGap();
    gap.lost(0, null);
    expect(gap.open).toBe(false);
    expect(gap.reconnected(1_000, id(1))).toBeNull();
    expect(gap.forwarded(id(1))).toBeNull();
  });

  it('an outage during a catch-up extends it: the times add up, the count goes on, the later end counts', () => {
    const gap = new ConnectionGap();
    gap.lost(0, id(1));
    gap.reconnected(10_000, id(5));
    gap.forwarded(id(2));
    gap.lost(20_000, id(5));
    expect(gap.reconnected(25_000, id(8))).toBeNull();
    gap.forwarded(id(3));
    gap.forwarded(id(5));
    expect(gap.forwarded(id(8))).toEqual({ downMs: 15_000, arrived: 4 });
  });
});

describe('the gap line', () => {
  it('says how long and how many, as the issue words it', () => {
    expect(formatGapText({ downMs: 92_000, arrived: 41 }, plainStyle)).toBe('reconnected after 1m32s; 41 webhooks arrived meanwhile');
    expect(formatGapText({ downMs: 21_400, arrived: 1 }, plainStyle)).toBe('reconnected after 21s; 1 webhook arrived meanwhile');
    expect(formatGapText({ downMs: 3_400, arrived: 0 }, plainStyle)).toBe('reconnected after 3.4s; no webhook arrived meanwhile');
    expect(formatGapText({ downMs: 3_400, arrived: null }, plainStyle)).toBe('reconnected after 3.4s');
  });

  it('is a typed NDJSON object under --json', () => {
    expect(gapJson({ downMs: 92_000.4, arrived: 41 })).toEqual({ type: 'reconnected', down_ms: 92_000, arrived: 41 });
    expect(gapJson({ downMs: 10, arrived: null })).toEqual({ type: 'reconnected', down_ms: 10, arrived: null });
  });
});
