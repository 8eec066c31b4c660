import { expect } from 'vitest';
import { CliFailure } from '../src/errors.js';

/** The CliFailure a promise rejects with, after checking that it is one and that it exits 2 (usage). */
export async function usageError(promise: Promise<unknown>): Promise<CliFailure> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CliFailure);
  expect((error as CliFailure).exitCode).toBe(2);
  return error as CliFailure;
}
