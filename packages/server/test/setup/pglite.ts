import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { openPGlite } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';

/**
 * initdb in PGlite costs seconds and ~900 MB; a migrated data dir dumped once loads in about one
 * second, so each test file gets its own fresh database from it.
 */
export default async function setup(project: TestProject) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-pglite-'));
  const db = await openPGlite();
  await migrate(db);
  const dump = await db.pglite.dumpDataDir('gzip');
  await db.close();
  const file = path.join(dir, 'template.tar.gz');
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  project.provide('backend', 'pglite');
  project.provide('postgresUrl', '');
  project.provide('postgresSocketDir', '');
  project.provide('templateDatabase', '');
  project.provide('pgliteTemplatePath', file);
  return () => rmSync(dir, { recursive: true, force: true });
}
