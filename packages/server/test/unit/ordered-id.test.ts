import { describe, expect, it } from 'vitest';
import { UUIDV7_PATTERN, uuidv7Time } from '@hookrelay/shared';
import { nextOrderedId, nextUuidv7After } from '../../src/ingest/ordered-id.js';

/** The rule that makes one endpoint's ids only ever grow (the database's copy is held equal in test/db/ordered-id.test.ts). */
describe('nextUuidv7After', () => {
  it('counts over the 74 bits after the millisecond, keeping version 7 and the variant, and carries into the millisecond last', () => {
    const cases: [string, string][] = [
      ['01a203db-a5ba-7123-8456-00000000000f', '01a203db-a5ba-7123-8456-000000000010'],
      ['01a203db-a5ba-7123-8456-ffffffffffff', '01a203db-a5ba-7123-8457-000000000000'],
      ['01a203db-a5ba-7123-bfff-ffffffffffff', '01a203db-a5ba-7124-8000-000000000000'],
      ['01a203db-a5ba-7123-9fff-ffffffffffff', '01a203db-a5ba-7123-a000-000000000000'],
      // The counter's last value stays in the millisecond; only the one after it carries.
      ['01a203db-a5ba-7fff-bfff-fffffffffffe', '01a203db-a5ba-7fff-bfff-ffffffffffff'],
      ['01a203db-a5ba-7fff-bfff-ffffffffffff', '01a203db-a5bb-7000-8000-000000000000'],
      ['01a203db-ffff-7fff-bfff-ffffffffffff', '01a203dc-0000-7000-8000-000000000000'],
      ['00000000-0000-7000-8000-000000000000', '00000000-0000-7000-8000-000000000001'],
      ['01A203DB-A5BA-7123-8456-00000000000F', '01a203db-a5ba-7123-8456-000000000010'],
    ];
    for (const [id, next] of cases) {
      expect(nextUuidv7After(id), id).toBe(next);
      expect(next).toMatch(UUIDV7_PATTERN);
    }
  });
});

describe('nextOrderedId', () => {
  it('is a fresh UUIDv7 of now when there is no last id, or the clock is past it', () => {
    const before = Date.now();
    for (const last of [null, '01a203db-a5ba-7123-8456-00000000000f', '00000000-0000-7000-8000-000000000000']) {
      const id = nextOrderedId(last);
      expect(id).toMatch(UUIDV7_PATTERN);
      expect(uuidv7Time(id)).toBeGreaterThanOrEqual(before);
      expect(uuidv7Time(id)).toBeLessThanOrEqual(Date.now());
    }
    expect(nextOrderedId(null)).not.toBe(nextOrderedId(null));
  });

  it('is the id right after the last one when that one is ahead of the clock, in either case', () => {
    // Year 10889: ahead of any clock.
    expect(nextOrderedId('ffffffff-fff0-7000-8000-000000000000')).toBe('ffffffff-fff0-7000-8000-000000000001');
    expect(nextOrderedId('FFFFFFFF-FFF0-7000-8000-00000000000F')).toBe('ffffffff-fff0-7000-8000-000000000010');
  });
});
