import { uuidv7AtTime, uuidv7Time } from '@hookrelay/shared';
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration, sinceCursor, uuidBefore } from '../src/listen/duration.js';

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1_500],
    [' 45S ', 45_000],
    ['0s', 0],
  ])('%s is %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '5', 'ten minutes', '10 m', '10mm', '-5s', 's', '1h 30m', '10x'])('refuses %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/duration/u);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [250, '250ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [45_000, '45s'],
    [300_000, '5m'],
    [330_000, '5m30s'],
    [5_400_000, '1h30m'],
    [7_200_000, '2h'],
  ])('%i ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('uuidBefore', () => {
  it('is the UUID one below, across nibble and group borders', () => {
    expect(uuidBefore('01900000-0000-7000-8000-000000000001')).toBe('01900000-0000-7000-8000-000000000000');
    expect(uuidBefore('01900000-0000-7000-8000-000000000000')).toBe('01900000-0000-7000-7fff-ffffffffffff');
    expect(uuidBefore('01900000-0000-7000-8000-0000000000A0')).toBe('01900000-0000-7000-8000-00000000009f');
  });
});

describe('sinceCursor', () => {
  const now = Date.parse('2026-05-01T12:00:00.000Z');

  it('turns a duration into the UUIDv7 of that long ago with zero random bits', () => {
    const cursor = sinceCursor('10m', now);
    expect(cursor).toBe(uuidv7AtTime(now - 600_000));
    expect(cursor).toMatch(/-7000-8000-000000000000$/u);
    expect(uuidv7Time(cursor)).toBe(now - 600_000);
  });

  it('starts with a given message id itself (the cursor is just below it)', () => {
    const id = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70';
    const cursor = sinceCursor(id.toUpperCase(), now);
    expect(cursor < id).toBe(true);
    expect(uuidBefore('0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71')).toBe(id);
    expect(cursor).toBe('0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f6f');
  });

  it('accepts an ISO 8601 time in the past', () => {
    expect(sinceCursor('2026-05-01T11:00:00Z', now)).toBe(uuidv7AtTime(Date.parse('2026-05-01T11:00:00Z')));
    expect(() => sinceCursor('2026-05-02T00:00:00Z', now)).toThrow(/future/u);
  });

  it('refuses anything else', () => {
    expect(() => sinceCursor('yesterday', now)).toThrow(/neither a duration/u);
  });

  it('clamps a duration longer than the epoch to the first possible cursor', () => {
    expect(sinceCursor('100000d', now)).toBe(uuidv7AtTime(0));
  });
});
