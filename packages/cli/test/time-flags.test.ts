import { describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { parseTimeFlag } from '../src/flags/time.js';

const now = Date.parse('2026-05-01T12:00:00.000Z');

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
      let error: unknown;
      try {
        parseTimeFlag('until', bad, now);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(CliFailure);
      expect((error as CliFailure).exitCode).toBe(2);
      expect((error as CliFailure).message).toContain('--until');
    }
  });
});
