import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { globLiteralPrefix, globMatcher, globToLikePattern, prefixesOf } from '@hookrelay/shared';
import type { Database } from '../../src/db/database.js';
import { createTestDatabase } from '../helpers/database.js';

/**
 * Endpoint subscriptions are matched in SQL (db/endpoint-subscriptions.ts) with the LIKE pattern
 * and literal prefix of shared/src/glob.ts: on both databases they must judge every glob and value
 * as globMatcher, the listen filters' matcher, does.
 */
let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

const GLOBS = ['*', 'invoice.*', '*.created', 'a*b*b', 'a*bc*c', 'a**b', 'exact', 'under_score', '100%', 'back\\slash*', '*_*', 'é*🚀', '**', 'x*'];
const VALUES = ['', 'invoice.paid', 'invoice.', 'invoice', 'customer.created', '.created', 'ab', 'abb', 'abc', 'abcc', 'axb', 'exact', 'exactly',
  'under_score', 'underXscore', '100%', '1000', 'back\\slash.x', 'backXslash', '_', 'no', 'é🚀', 'éa🚀', 'e🚀', 'x', 'X'];

describe('subscription globs in SQL', () => {
  it('match exactly what globMatcher matches, found by a literal prefix among the value’s prefixes', async () => {
    const cases = GLOBS.flatMap((glob) => VALUES.map((value) => ({ glob, value })));
    const rows = await db.sql<{ i: number; matches: boolean }>`
      SELECT c.i::int AS i, (c.value LIKE c.pattern ESCAPE '\\') AS matches
      FROM unnest(${cases.map((c) => c.value)}::text[], ${cases.map((c) => globToLikePattern(c.glob))}::text[]) WITH ORDINALITY AS c (value, pattern, i)
      ORDER BY c.i`;
    const inSql = rows.map((r) => r.matches);
    const inProcess = cases.map((c) => globMatcher(c.glob)(c.value));
    expect(inSql.map((m, i) => `${cases[i]!.glob} ~ ${cases[i]!.value}: ${m}`)).toEqual(inProcess.map((m, i) => `${cases[i]!.glob} ~ ${cases[i]!.value}: ${m}`));
    // The index finds every match: a glob's literal prefix is one of the prefixes of each value it matches.
    for (const c of cases) {
      if (globMatcher(c.glob)(c.value)) expect(prefixesOf(c.value), `${c.glob} ~ ${c.value}`).toContain(globLiteralPrefix(c.glob));
    }
  });
});
