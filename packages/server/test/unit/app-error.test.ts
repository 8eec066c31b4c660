import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';

describe('AppError', () => {
  function raise(code: 'UNAUTHORIZED' | 'NOT_FOUND' | 'INTERNAL_ERROR' | 'SERVICE_UNAVAILABLE'): AppError {
    return new AppError(code, 'message');
  }

  it('collects no stack for a client error (an answer, not a fault), and leaves the limit as it was', () => {
    const limit = Error.stackTraceLimit;
    for (const code of ['UNAUTHORIZED', 'NOT_FOUND'] as const) {
      const error = raise(code);
      expect(error.stack).not.toMatch(/\n\s+at /);
      expect(error.message).toBe('message');
      expect(error.code).toBe(code);
    }
    expect(Error.stackTraceLimit).toBe(limit);
    expect(new Error('plain').stack).toMatch(/\n\s+at /);
  });

  it('keeps the stack of a server error, which is logged', () => {
    expect(raise('INTERNAL_ERROR').stack).toMatch(/\n\s+at raise /);
    expect(raise('SERVICE_UNAVAILABLE').stack).toMatch(/\n\s+at raise /);
  });
});
