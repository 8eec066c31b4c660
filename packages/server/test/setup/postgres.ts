import type { TestProject } from 'vitest/node';
import { openPostgres } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { startPgCluster } from '../../src/testing/pg-cluster.js';

export const TEMPLATE_DATABASE = 'hookrelay_template';

/** One cluster per run; a migrated template database that each test file copies. */
export default async function setup(project: TestProject) {
  const cluster = await startPgCluster(process.env);
  const admin = openPostgres({ url: cluster.url, poolSize: 1 });
  await admin.sql([`CREATE DATABASE ${TEMPLATE_DATABASE}`] as unknown as TemplateStringsArray);
  await admin.close();
  const template = openPostgres({ url: cluster.url.replace(/\/postgres$/, `/${TEMPLATE_DATABASE}`), poolSize: 1 });
  await migrate(template);
  await template.close();
  project.provide('backend', 'postgres');
  project.provide('postgresUrl', cluster.url);
  project.provide('postgresSocketDir', cluster.dir);
  project.provide('templateDatabase', TEMPLATE_DATABASE);
  project.provide('pgliteTemplatePath', '');
  return () => cluster.stop();
}
