#!/usr/bin/env node
// Writes packages/server/schema.sql: the schema of a freshly migrated database, as the catalog
// describes it (src/db/schema-catalog.ts). Migrates a throwaway in-memory PGlite database, so it
// needs neither a PostgreSQL server nor pg_dump. Run by the root `schema:dump` after tsc, whenever a
// migration or a file of sql/ changes: test/db/schema.test.ts fails until the file is written again.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { openPGlite } from '../dist/db/database.js';
import { migrate } from '../dist/db/migrate.js';
import { schemaCatalogText } from '../dist/db/schema-catalog.js';

const target = fileURLToPath(new URL('../schema.sql', import.meta.url));
const db = await openPGlite();
try {
  await migrate(db);
  await writeFile(target, await schemaCatalogText(db.sql));
} finally {
  await db.close();
}
process.stderr.write(`schema: wrote ${target}\n`);
