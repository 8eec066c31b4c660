import { uuidv7AtTime, uuidv7Time } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { CLOCK_SKEW_MS, parseTimeFlag, sinceCursor, uuidBefore, waitStartCursor } from '../src/flags/time.js';
import { ZERO_CURSOR } from '../src/listen/ports.js';

const now = Date.parse('2026-05-01T12:00:00.000Z');

/** The failure `fn` throws: a usage error (exit 2) is what every refused --since must be. */
function usageError(fn: () => unknown): CliFailure {
  let error: unknown;
  try {
    fn();
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(CliFailure);
  expect((error as CliFailure).exitCode).toBe(2);
  return error as CliFailure;
}

describe('parseTimeFlag', () => {
  it('reads a duration as that long ago', () => {
    expect(parseTimeFlag('since', '10m', now)).toBe('2026-05-01T11:50:00.000Z');
    expect(parseTimeFlag('since', '1d', now)).toBe('2026-04-30T12:00:00.000Z');
    expect(parseTimeFlag('since', '1h30m', now)).toBe('2026-05-01T10:30:00.000Z');
  });

  it('reads ISO 8601 times and dates as RFC 3339 UTC', () => {
    expect(parseTimeFlag('since', '2026-04-01T08:00:00Z', now)).toBe('2026-04-01T08:00:00.000Z');
    expect(parseTimeFlag('since', '2026-04-01T10:00:00+02:00', now)).toBe('2026-04-01T08:00:00.000Z');
    expect(parseTimeFlag('until', '2026-04-01', now)).toBe('2026-04-01T00:00:00.000Z');
  });

  it('refuses anything else as a usage error naming the flag', () => {
    for (const bad of ['yesterday', '5', '2026-13-45T99:00:00Z', '']) {
      expect(usageError(() => parseTimeFlag('until', bad, now)).message).toContain('--until');
    }
  });
});

describe('uuidBefore', () => {
  it('is the UUID one below, across a borrow, lower-cased', () => {
    expect(uuidBefore('01900000-0000-7000-8000-000000000001')).toBe('01900000-0000-7000-8000-000000000000');
    expect(uuidBefore('01900000-0000-7000-8000-000000000000')).toBe('01900000-0000-7000-7fff-ffffffffffff');
    expect(uuidBefore('01900000-0000-7000-8000-0000000000A0')).toBe('01900000-0000-7000-8000-00000000009f');
    expect(uuidBefore('00000000-0000-0000-0000-000000000000')).toBe('00000000-0000-0000-0000-000000000000');
  });
});

describe('sinceCursor', () => {
  it('turns a duration into the UUIDv7 of that long ago with zero random bits', () => {
    const cursor = sinceCursor('10m', now);
    expect(cursor).toBe(uuidv7AtTime(now - 600_000));
    expect(cursor).toMatch(/-7000-8000-000000000000$/u);
    expect(uuidv7Time(cursor)).toBe(now - 600_000);
    expect(sinceCursor(' 2h ', now)).toBe(uuidv7AtTime(now - 7_200_000));
    expect(sinceCursor('1h30m', now)).toBe(uuidv7AtTime(now - 5_400_000));
  });

  it('starts with a given message id itself (the cursor is just below it)', () => {
    const id = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
    const cursor = sinceCursor(id.toUpperCase(), now);
    expect(cursor).toBe('0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f6f');
    expect(cursor < id).toBe(true);
  });

  it('accepts an RFC 3339 / ISO 8601 time in the past, offsets and dates included', () => {
    expect(sinceCursor('2026-05-01T11:00:00Z', now)).toBe(uuidv7AtTime(Date.parse('2026-05-01T11:00:00Z')));
    expect(sinceCursor('2026-05-01T13:00:00.250+02:00', now)).toBe(uuidv7AtTime(Date.parse('2026-05-01T11:00:00.250Z')));
    expect(sinceCursor('2026-04-30', now)).toBe(uuidv7AtTime(Date.parse('2026-04-30')));
    expect(sinceCursor('2026-05-01T12:00:00Z', now)).toBe(uuidv7AtTime(now));
  });

  it('refuses a time in the future, an impossible time and anything else, naming --since', () => {
    expect(usageError(() => sinceCursor('2026-05-01T12:00:00.001Z', now)).message).toBe('--since: "2026-05-01T12:00:00.001Z" is in the future');
    expect(usageError(() => sinceCursor('2026-13-45T99:00:00Z', now)).message).toBe('--since: "2026-13-45T99:00:00Z" is not a valid time');
    for (const bad of ['yesterday', '5', '', 'now-ish', '0190b2c4-7d2e-7a51-9c3f']) {
      expect(usageError(() => sinceCursor(bad, now)).message, bad).toBe(
        `--since: "${bad}" is neither a duration (10m, 2h), a message id nor an ISO 8601 time (2026-05-01T12:00:00Z)`,
      );
    }
  });

  it('clamps a duration longer than the epoch to the first possible cursor', () => {
    expect(sinceCursor('100000d', now)).toBe(uuidv7AtTime(0));
  });
});

describe('waitStartCursor', () => {
  /** The CLI process started 400 ms before `now`: the time it took to load before parsing flags. */
  const startedAt = now - 400;

  it('--since now, and no --since, start one clock-skew allowance before the process started', () => {
    const expected = uuidv7AtTime(startedAt - CLOCK_SKEW_MS);
    expect(CLOCK_SKEW_MS).toBe(1000);
    expect(waitStartCursor({ since: undefined, fromStart: false }, now, startedAt)).toBe(expected);
    expect(waitStartCursor({ since: 'now', fromStart: false }, now, startedAt)).toBe(expected);
    expect(waitStartCursor({ since: ' NOW ', fromStart: false }, now, startedAt)).toBe(expected);
    // A message the server stamped while the CLI loaded, or a little before on a server clock behind ours, counts.
    const postedWhileLoading = uuidv7AtTime(startedAt + 100);
    const stampedBySlowClock = uuidv7AtTime(startedAt - 900);
    expect(postedWhileLoading > expected && stampedBySlowClock > expected).toBe(true);
    expect(uuidv7AtTime(startedAt - 1001) < expected).toBe(true);
  });

  it('--from-start reads from before every message', () => {
    expect(waitStartCursor({ since: undefined, fromStart: true }, now, startedAt)).toBe(ZERO_CURSOR);
  });

  it('any other --since is read as listen reads it: relative to now, a message id included', () => {
    const id = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
    expect(waitStartCursor({ since: id, fromStart: false }, now, startedAt)).toBe(sinceCursor(id, now));
    expect(waitStartCursor({ since: id, fromStart: false }, now, startedAt) < id).toBe(true);
    expect(waitStartCursor({ since: '2h', fromStart: false }, now, startedAt)).toBe(uuidv7AtTime(now - 7_200_000));
    expect(waitStartCursor({ since: '2026-05-01T11:00:00Z', fromStart: false }, now, startedAt)).toBe(uuidv7AtTime(Date.parse('2026-05-01T11:00:00Z')));
    expect(usageError(() => waitStartCursor({ since: 'yesterday', fromStart: false }, now, startedAt)).message).toContain('--since: "yesterday"');
  });
});
