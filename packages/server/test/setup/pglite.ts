import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildPGliteTemplate, findPGliteTemplate } from '../../src/db/pglite-template.js';

/**
 * initdb in PGlite costs seconds and much memory; each test file loads a fresh database from the
 * template data dir instead: the one `pnpm build` made when it fits the migrations, else one made here.
 */
export default async function setup(project: TestProject) {
  let template = await findPGliteTemplate();
  let dir: string | undefined;
  if ('reason' in template) {
    dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-pglite-'));
    await buildPGliteTemplate(dir);
    template = await findPGliteTemplate(dir);
    if ('reason' in template) throw new Error(template.reason);
  }
  project.provide('backend', 'pglite');
  project.provide('postgresUrl', '');
  project.provide('postgresSocketDir', '');
  project.provide('templateDatabase', '');
  project.provide('pgliteTemplatePath', template.archive);
  return () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  };
}
