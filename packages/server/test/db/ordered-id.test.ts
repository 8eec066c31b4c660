import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuidv7, UUIDV7_PATTERN } from '@hookrelay/shared';
import type { Database } from '../../src/db/database.js';
import { nextOrderedId, nextUuidv7After } from '../../src/ingest/ordered-id.js';
import { createTestDatabase } from '../helpers/database.js';

/**
 * "The next UUIDv7 after this id" is computed in the process (nextUuidv7After, for the ids it
 * proposes) and in the database (hookrelay_uuidv7_after, for ids placed after another process's):
 * both must give the same ids, on PostgreSQL and on PGlite.
 */

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

/** `id` stepped `n` times by the process's rule. */
function afterInProcess(id: string, n: number): string {
  let next = id;
  for (let i = 0; i < n; i++) next = nextUuidv7After(next);
  return next;
}

async function afterInDatabase(cases: readonly { id: string; n: number }[]): Promise<string[]> {
  const rows = await db.sql<{ k: number; after: string }>`
    SELECT c.k, hookrelay_uuidv7_after(c.id, c.n)::text AS after
    FROM unnest(${cases.map((c) => c.id)}::uuid[], ${cases.map((c) => c.n)}::bigint[]) WITH ORDINALITY AS c (id, n, k)
    ORDER BY c.k`;
  return rows.map((r) => r.after);
}

// Each: the id, the steps, the id that many places after it.
const BOUNDARIES: [string, number, string][] = [
  ['01a203db-a5ba-7123-8456-00000000000f', 1, '01a203db-a5ba-7123-8456-000000000010'],
  ['01a203db-a5ba-7123-8456-fffffffffffe', 1, '01a203db-a5ba-7123-8456-ffffffffffff'],
  // The low 48 bits are full: the counter goes on above them, in the same millisecond.
  ['01a203db-a5ba-7123-8456-ffffffffffff', 1, '01a203db-a5ba-7123-8457-000000000000'],
  ['01a203db-a5ba-7123-8456-fffffffffffe', 2, '01a203db-a5ba-7123-8457-000000000000'],
  ['01a203db-a5ba-7123-8456-fffffffffffe', 3, '01a203db-a5ba-7123-8457-000000000001'],
  // rand_b is full (its 62 bits under the variant): the carry goes into rand_a.
  ['01a203db-a5ba-7123-bfff-ffffffffffff', 1, '01a203db-a5ba-7124-8000-000000000000'],
  ['01a203db-a5ba-7123-bfff-fffffffffffd', 5, '01a203db-a5ba-7124-8000-000000000002'],
  // All 74 bits are full: the next millisecond, counting from 0.
  ['01a203db-a5ba-7fff-bfff-ffffffffffff', 1, '01a203db-a5bb-7000-8000-000000000000'],
  ['01a203db-a5ba-7fff-bfff-fffffffffffe', 4, '01a203db-a5bb-7000-8000-000000000002'],
  ['01a203db-ffff-7fff-bfff-ffffffffffff', 1, '01a203dc-0000-7000-8000-000000000000'],
  // Each variant digit (8, 9, a, b) keeps the variant 10.
  ['01a203db-a5ba-7123-9fff-ffffffffffff', 1, '01a203db-a5ba-7123-a000-000000000000'],
  ['01a203db-a5ba-7123-afff-ffffffffffff', 1, '01a203db-a5ba-7123-b000-000000000000'],
  ['00000000-0000-7000-8000-000000000000', 1, '00000000-0000-7000-8000-000000000001'],
];

describe('the next UUIDv7 after an id', () => {
  it('is the same in the process and in the database at each boundary of the counter', async () => {
    const inDatabase = await afterInDatabase(BOUNDARIES.map(([id, n]) => ({ id, n })));
    const inProcess = BOUNDARIES.map(([id, n]) => afterInProcess(id, n));
    expect(inProcess).toEqual(BOUNDARIES.map(([, , after]) => after));
    expect(inDatabase).toEqual(inProcess);
  });

  it('is the same in the process and in the database for fresh ids and ids with random bits near a carry', async () => {
    const cases = Array.from({ length: 300 }, (_, i) => {
      const n = 1 + (i % 7);
      if (i % 3 === 0) return { id: newUuidv7(), n };
      // A fresh id with some of its low hex digits set to f, so that adding n carries from there.
      const hex = newUuidv7().replace(/-/g, '');
      const fs = 1 + (randomBytes(1)[0]! % 19);
      const digits = (hex.slice(0, 32 - fs) + 'f'.repeat(fs)).split('');
      if (fs >= 16) digits[16] = 'b'; // the variant digit at its highest
      const text = digits.join('');
      return { id: `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`, n };
    });
    const inDatabase = await afterInDatabase(cases);
    const inProcess = cases.map((c) => afterInProcess(c.id, c.n));
    expect(inDatabase).toEqual(inProcess);
    for (const [i, after] of inProcess.entries()) {
      expect(after).toMatch(UUIDV7_PATTERN);
      expect(after > cases[i]!.id).toBe(true);
    }
  });

  it('grows with the steps, one id apart', async () => {
    const id = '01a203db-a5ba-7fff-bfff-fffffffffffa';
    const steps = Array.from({ length: 12 }, (_, i) => ({ id, n: i + 1 }));
    const inDatabase = await afterInDatabase(steps);
    for (let i = 1; i < inDatabase.length; i++) expect(inDatabase[i]).toBe(nextUuidv7After(inDatabase[i - 1]!));
  });
});

describe('nextOrderedId', () => {
  it('is a fresh id when the last one is older, and the id right after the last one otherwise', () => {
    expect(nextOrderedId(null)).toMatch(UUIDV7_PATTERN);
    const old = '01000000-0000-7000-8000-000000000000';
    const fresh = nextOrderedId(old);
    expect(fresh > '01a00000-0000-7000-8000-000000000000').toBe(true);
    const future = 'ffff0000-0000-7123-8456-ffffffffffff';
    expect(nextOrderedId(future)).toBe('ffff0000-0000-7123-8457-000000000000');
  });
});
