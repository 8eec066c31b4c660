import type { Sql } from './database.js';

/**
 * The schema of a database as one text, read from the catalog (pg_catalog), so that it reads the
 * same on PostgreSQL and on PGlite, which has no pg_dump: the migrations applied, then each table
 * with its columns (type, default, nullability, identity, generation, storage), constraints,
 * indexes and triggers, then the sequences, views, types and stored functions with their
 * definitions. Everything is sorted in code by byte order, never by the database's collation.
 * `packages/server/schema.sql` is this text for a freshly migrated database
 * (scripts/dump-schema.mjs writes it, test/db/schema.test.ts holds it equal).
 */
export async function schemaCatalogText(sql: Sql): Promise<string> {
  const sections = [
    header(),
    await migrationsSection(sql),
    ...(await tableSections(sql)),
    await sequencesSection(sql),
    await viewsSection(sql),
    await typesSection(sql),
    await extensionsSection(sql),
    await functionsSection(sql),
  ].filter((section) => section !== '');
  return `${sections.join('\n\n')}\n`;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function header(): string {
  return [
    '-- The schema of a freshly migrated hookrelay database, read from its catalog. Written by',
    '-- `pnpm schema:dump` (packages/server/scripts/dump-schema.mjs); test/db/schema.test.ts holds',
    '-- it equal to what the migrations and packages/server/sql/ make, on PostgreSQL and on PGlite.',
    '-- Nothing runs this file: it is the current schema in one place, to read.',
  ].join('\n');
}

async function migrationsSection(sql: Sql): Promise<string> {
  const [table] = await sql<{ present: boolean }>`SELECT to_regclass('public.schema_migrations') IS NOT NULL AS present`;
  if (!table!.present) return '-- migrations applied: none';
  const rows = await sql<{ version: number; name: string }>`SELECT version, name FROM schema_migrations`;
  const names = rows.sort((a, b) => a.version - b.version).map((r) => `--   ${r.name}`);
  return ['-- migrations applied (schema_migrations):', ...names].join('\n');
}

interface TableRow {
  oid: number;
  name: string;
  persistence: string;
  options: string[] | null;
}

interface ColumnRow {
  table_oid: number;
  name: string;
  type: string;
  not_null: boolean;
  default_expr: string | null;
  identity: string;
  generated: string;
  collation: string | null;
  storage: string;
  type_storage: string;
}

interface DefinitionRow {
  table_oid: number;
  name: string;
  definition: string;
}

/** `CREATE TABLE` with its columns, then its constraints, indexes and triggers, each by name. */
async function tableSections(sql: Sql): Promise<string[]> {
  const tables = await sql<TableRow>`
    SELECT c.oid::int AS oid, c.relname AS name, c.relpersistence AS persistence, c.reloptions AS options
    FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')`;
  const columns = await sql<ColumnRow>`
    SELECT a.attrelid::int AS table_oid, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
           a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default_expr,
           a.attidentity::text AS identity, a.attgenerated::text AS generated,
           CASE WHEN a.attcollation <> t.typcollation THEN co.collname END AS collation,
           a.attstorage::text AS storage, t.typstorage::text AS type_storage
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    LEFT JOIN pg_collation co ON co.oid = a.attcollation
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum`;
  // NOT NULL shows on its column: PostgreSQL 18 also lists it as a constraint, earlier ones do not.
  const constraints = await sql<DefinitionRow>`
    SELECT con.conrelid::int AS table_oid, con.conname AS name, pg_get_constraintdef(con.oid) AS definition
    FROM pg_constraint con
    JOIN pg_class c ON c.oid = con.conrelid
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND con.contype <> 'n'`;
  // Indexes that back a constraint are its (PRIMARY KEY, UNIQUE, EXCLUDE), shown with it.
  const indexes = await sql<DefinitionRow>`
    SELECT i.indrelid::int AS table_oid, ic.relname AS name, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i
    JOIN pg_class ic ON ic.oid = i.indexrelid
    JOIN pg_class c ON c.oid = i.indrelid
    WHERE c.relnamespace = 'public'::regnamespace
      AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = i.indexrelid AND con.contype IN ('p', 'u', 'x'))`;
  // Internal triggers are a foreign key's own.
  const triggers = await sql<DefinitionRow>`
    SELECT tg.tgrelid::int AS table_oid, tg.tgname AS name, pg_get_triggerdef(tg.oid) AS definition
    FROM pg_trigger tg
    JOIN pg_class c ON c.oid = tg.tgrelid
    WHERE c.relnamespace = 'public'::regnamespace AND NOT tg.tgisinternal`;

  const of = <T extends { table_oid: number }>(rows: T[], oid: number) => rows.filter((r) => r.table_oid === oid);
  const sorted = (rows: DefinitionRow[]) => [...rows].sort((a, b) => byText(a.name, b.name));
  return tables
    .sort((a, b) => byText(a.name, b.name))
    .map((table) => {
      const unlogged = table.persistence === 'u' ? 'UNLOGGED ' : '';
      const options = table.options && table.options.length > 0 ? ` WITH (${[...table.options].sort(byText).join(', ')})` : '';
      const lines = [
        `CREATE ${unlogged}TABLE ${table.name} (`,
        of(columns, table.oid).map((c) => `    ${columnText(c)}`).join(',\n'),
        `)${options};`,
        ...sorted(of(constraints, table.oid)).map((c) => `ALTER TABLE ${table.name} ADD CONSTRAINT ${c.name} ${c.definition};`),
        ...sorted(of(indexes, table.oid)).map((i) => `${i.definition};`),
        ...sorted(of(triggers, table.oid)).map((t) => `${t.definition};`),
      ];
      return lines.join('\n');
    });
}

function columnText(c: ColumnRow): string {
  const parts = [c.name, c.type];
  if (c.collation !== null) parts.push(`COLLATE "${c.collation}"`);
  if (c.generated === 's') parts.push(`GENERATED ALWAYS AS (${c.default_expr}) STORED`);
  else if (c.default_expr !== null) parts.push(`DEFAULT ${c.default_expr}`);
  if (c.not_null) parts.push('NOT NULL');
  if (c.identity === 'a') parts.push('GENERATED ALWAYS AS IDENTITY');
  if (c.identity === 'd') parts.push('GENERATED BY DEFAULT AS IDENTITY');
  if (c.storage !== c.type_storage) parts.push(`STORAGE ${STORAGE[c.storage] ?? c.storage}`);
  return parts.join(' ');
}

const STORAGE: Readonly<Record<string, string>> = { p: 'PLAIN', e: 'EXTERNAL', m: 'MAIN', x: 'EXTENDED' };

async function sequencesSection(sql: Sql): Promise<string> {
  const rows = await sql<{ name: string; text: string }>`
    SELECT c.relname AS name,
           format('CREATE SEQUENCE %s AS %s START %s INCREMENT %s MINVALUE %s MAXVALUE %s CACHE %s%s%s;',
                  c.relname, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache,
                  CASE WHEN s.seqcycle THEN ' CYCLE' ELSE '' END,
                  coalesce((SELECT format(' OWNED BY %s.%s%s', tc.relname, a.attname, CASE WHEN d.deptype = 'i' THEN ' (identity)' ELSE '' END)
                            FROM pg_depend d
                            JOIN pg_class tc ON tc.oid = d.refobjid
                            JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                            WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')), '')) AS text
    FROM pg_sequence s
    JOIN pg_class c ON c.oid = s.seqrelid
    WHERE c.relnamespace = 'public'::regnamespace`;
  return rows
    .sort((a, b) => byText(a.name, b.name))
    .map((r) => r.text)
    .join('\n');
}

async function viewsSection(sql: Sql): Promise<string> {
  const rows = await sql<{ name: string; kind: string; definition: string }>`
    SELECT c.relname AS name, c.relkind::text AS kind, pg_get_viewdef(c.oid) AS definition
    FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('v', 'm')`;
  return rows
    .sort((a, b) => byText(a.name, b.name))
    .map((r) => `CREATE ${r.kind === 'm' ? 'MATERIALIZED VIEW' : 'VIEW'} ${r.name} AS\n${r.definition.trimEnd()}`)
    .join('\n\n');
}

/** Types of the schema's own (enums, domains, composites, ranges); a table's row type is its table. */
async function typesSection(sql: Sql): Promise<string> {
  const rows = await sql<{ name: string; text: string }>`
    SELECT t.typname AS name,
           CASE t.typtype
             WHEN 'e' THEN format('CREATE TYPE %s AS ENUM (%s);', t.typname,
                                  (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))
             WHEN 'd' THEN format('CREATE DOMAIN %s AS %s%s;', t.typname, format_type(t.typbasetype, t.typtypmod),
                                  coalesce((SELECT string_agg(' ' || pg_get_constraintdef(con.oid), '' ORDER BY con.conname) FROM pg_constraint con WHERE con.contypid = t.oid), ''))
             WHEN 'c' THEN format('CREATE TYPE %s AS (%s);', t.typname,
                                  (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                                   FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped))
             ELSE format('CREATE TYPE %s (typtype %s);', t.typname, t.typtype)
           END AS text
    FROM pg_type t
    LEFT JOIN pg_class c ON c.oid = t.typrelid
    WHERE t.typnamespace = 'public'::regnamespace
      AND (t.typtype IN ('e', 'd', 'r', 'm') OR (t.typtype = 'c' AND c.relkind = 'c') OR (t.typtype = 'b' AND t.typcategory <> 'A'))`;
  return rows
    .sort((a, b) => byText(a.name, b.name))
    .map((r) => r.text)
    .join('\n');
}

/** Extensions beyond plpgsql, which every database has. */
async function extensionsSection(sql: Sql): Promise<string> {
  const rows = await sql<{ name: string }>`SELECT extname AS name FROM pg_extension WHERE extname <> 'plpgsql'`;
  return rows
    .map((r) => r.name)
    .sort(byText)
    .map((name) => `CREATE EXTENSION ${name};`)
    .join('\n');
}

async function functionsSection(sql: Sql): Promise<string> {
  const rows = await sql<{ name: string; args: string; definition: string }>`
    SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS args, pg_get_functiondef(p.oid) AS definition
    FROM pg_proc p
    WHERE p.pronamespace = 'public'::regnamespace AND p.prokind IN ('f', 'p', 'w')`;
  const aggregates = await sql<{ name: string; args: string }>`
    SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS args
    FROM pg_proc p
    WHERE p.pronamespace = 'public'::regnamespace AND p.prokind = 'a'`;
  const functions = rows
    .sort((a, b) => byText(a.name, b.name) || byText(a.args, b.args))
    .map((r) => `${r.definition.trimEnd()};`);
  const aggregateLines = aggregates
    .sort((a, b) => byText(a.name, b.name) || byText(a.args, b.args))
    .map((r) => `-- aggregate ${r.name}(${r.args})`);
  return [...functions, ...aggregateLines].join('\n\n');
}
