import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../src/listen/duration.js';

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
    // Rounded before it is split into units: never 1m60s or 60s.
    [9_960, '10s'],
    [59_600, '1m'],
    [119_400, '1m59s'],
    [119_700, '2m'],
    [7_170_000, '2h'],
  ])('%i ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
