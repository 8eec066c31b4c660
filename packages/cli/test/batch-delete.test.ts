import { describe, expect, it } from 'vitest';
import { batchIds, mergeBatchResults } from '../src/batch-delete.js';
import { CliFailure } from '../src/errors.js';

const A = '0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71';
const B = '0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21';

describe('batchIds', () => {
  it('keeps each id once, lower-cased, in the order given', () => {
    expect(batchIds([B, A.toUpperCase(), B, ` ${A} `], 'an inbound message')).toEqual([B, A]);
  });

  it('refuses a malformed id before any request (exit 2)', () => {
    expect(() => batchIds([A, 'nope'], 'an inbound message')).toThrow(CliFailure);
    try {
      batchIds(['nope'], 'an inbound message');
    } catch (error) {
      expect((error as CliFailure).exitCode).toBe(2);
      expect((error as CliFailure).message).toBe('"nope" is not an inbound message id');
    }
  });
});

describe('mergeBatchResults', () => {
  it('concatenates results and sums the counts', () => {
    const merged = mergeBatchResults([
      { results: [{ message_id: A, outcome: 'deleted' }], deleted_count: 1, already_deleted_count: 0, not_found_count: 0 },
      { results: [{ message_id: B, outcome: 'not_found' }], deleted_count: 0, already_deleted_count: 0, not_found_count: 1 },
    ]);
    expect(merged).toEqual({
      results: [
        { message_id: A, outcome: 'deleted' },
        { message_id: B, outcome: 'not_found' },
      ],
      deleted_count: 1,
      already_deleted_count: 0,
      not_found_count: 1,
    });
  });
});
