import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { openPGlite, openPostgres, type Database, type Sql } from '../../src/db/database.js';
import './provided.js';

export const backend = (): 'postgres' | 'pglite' => inject('backend');

/** The URL of a new, migrated PostgreSQL database copied from the run's template. */
export async function createPostgresDatabaseUrl(): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const base = inject('postgresUrl');
  const admin = openPostgres({ url: base, poolSize: 1 });
  try {
    await admin.sql([`CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`] as unknown as TemplateStringsArray);
  } finally {
    await admin.close();
  }
  return base.replace(/\/postgres$/, `/${name}`);
}

/** The URL of a new PostgreSQL database with no schema at all (for migration and start-up tests). */
export async function createEmptyPostgresDatabaseUrl(): Promise<string> {
  const name = `e_${randomBytes(6).toString('hex')}`;
  const base = inject('postgresUrl');
  const admin = openPostgres({ url: base, poolSize: 1 });
  try {
    await admin.sql([`CREATE DATABASE ${name}`] as unknown as TemplateStringsArray);
  } finally {
    await admin.close();
  }
  return base.replace(/\/postgres$/, `/${name}`);
}

/** A fresh, migrated database of the project's backend: each test file gets its own. */
export async function createTestDatabase(): Promise<Database> {
  if (backend() === 'postgres') return openPostgres({ url: await createPostgresDatabaseUrl(), poolSize: 5 });
  const dump = readFileSync(inject('pgliteTemplatePath'));
  return openPGlite({ loadDataDir: new Blob([dump]) });
}

/**
 * `sql` with `intercept` in front of every statement, its transactions' statements included. The
 * test decides what happens: `run` sends the statement to the real database (no mock of it).
 */
export function interceptSql(
  sql: Sql,
  intercept: (strings: TemplateStringsArray, values: unknown[], run: () => Promise<unknown>) => Promise<unknown>,
): Sql {
  const wrapped = ((strings: TemplateStringsArray, ...values: unknown[]) => intercept(strings, values, () => sql(strings, ...values))) as Sql;
  wrapped.fragment = sql.fragment;
  wrapped.join = sql.join;
  wrapped.execScript = sql.execScript;
  wrapped.begin = (fn) => sql.begin((tx) => fn(interceptSql(tx, intercept)));
  return wrapped;
}

/** The database with every statement's first two words recorded, in order (`begin` runs the wrapped callback). */
export function recordingStatements(db: Database): { db: Database; statements: string[] } {
  const statements: string[] = [];
  const sql = interceptSql(db.sql, (strings, _values, run) => {
    statements.push(strings.join('$').trim().split(/\s+/).slice(0, 2).join(' '));
    return run();
  });
  return { db: { ...db, sql }, statements };
}
