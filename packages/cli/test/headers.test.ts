import { describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { headersFromFlags, parseHeaderFlag } from '../src/headers.js';

function usageError(run: () => unknown): CliFailure {
  try {
    run();
  } catch (error) {
    if (error instanceof CliFailure) return error;
    throw error;
  }
  throw new Error('expected a usage failure');
}

describe('--header K=V', () => {
  it('splits at the first "="', () => {
    expect(parseHeaderFlag('X-Team=a=b')).toEqual(['X-Team', 'a=b']);
    expect(parseHeaderFlag('X-Empty=')).toEqual(['X-Empty', '']);
  });

  it.each(['novalue', '=value', 'bad name=x', 'X-Line=a\nb'])('rejects %j with exit 2', (input) => {
    const error = usageError(() => parseHeaderFlag(input));
    expect(error.exitCode).toBe(2);
    expect(error.code).toBe('INVALID_ARGUMENTS');
  });

  it('builds a map and refuses the same name twice', () => {
    expect(headersFromFlags(['A=1', 'B=2'])).toEqual({ A: '1', B: '2' });
    expect(usageError(() => headersFromFlags(['X-A=1', 'x-a=2'])).message).toContain('twice');
  });

  it('leaves forbidden names to the server', () => {
    expect(headersFromFlags(['Host=x'])).toEqual({ Host: 'x' });
  });
});
