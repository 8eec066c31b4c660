import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { schemaCatalogText } from '../../src/db/schema-catalog.js';
import { createTestDatabase } from '../helpers/database.js';

/**
 * packages/server/schema.sql is the schema a freshly migrated database has: this backend's test
 * database (every migration and every file of sql/ applied) must read the same from its catalog.
 * On PostgreSQL and on PGlite alike, so the file is also proof that both backends end in one schema.
 */

const SCHEMA_FILE = new URL('../../schema.sql', import.meta.url);

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

describe('packages/server/schema.sql', () => {
  it('is the schema the migrations and the current SQL make', async () => {
    const actual = await schemaCatalogText(db.sql);
    expect(actual, 'packages/server/schema.sql differs from the migrated schema: run `pnpm schema:dump` and commit the file').toBe(
      readFileSync(SCHEMA_FILE, 'utf8'),
    );
  });
});
