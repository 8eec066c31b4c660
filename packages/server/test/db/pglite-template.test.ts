import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PGLITE_SETTINGS } from '../../src/config.js';
import { openPGlite, type Database } from '../../src/db/database.js';
import { loadCurrentSql, loadMigrations, migrate, sha256Hex, type CurrentSql, type Migration } from '../../src/db/migrate.js';
import {
  findPGliteTemplate,
  PGLITE_TEMPLATE_ARCHIVE,
  PGLITE_TEMPLATE_MANIFEST,
  prepareDataDir,
  writePGliteTemplate,
} from '../../src/db/pglite-template.js';
import { createTestApp } from '../helpers/app.js';
import { backend } from '../helpers/database.js';

/**
 * A new embedded data dir is unpacked from the template data dir instead of made by initdb: both
 * must be the same database, a template older than the migrations must be brought up to date, and
 * an existing data dir must never be touched.
 */
describe.skipIf(backend() !== 'pglite')('the PGlite template data dir', () => {
  let tmp: string;
  let migrations: Migration[];
  let currentSql: CurrentSql[];
  /** The shipped current SQL with an older body of hookrelay_uuidv7_after, as an older build has it. */
  let olderSql: CurrentSql[];
  const open: Database[] = [];

  /** Opens a data dir as the embedded server does: prepare (template or not), open, migrate. */
  async function openDataDir(name: string, templateDir: string) {
    const pgdata = path.join(tmp, name, 'pgdata');
    const prepared = await prepareDataDir(pgdata, { templateDir, migrations });
    const db = await openPGlite({ dataDir: pgdata, settings: DEFAULT_PGLITE_SETTINGS });
    open.push(db);
    const applied = await migrate(db, migrations);
    return { pgdata, prepared, db, applied };
  }

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-template-'));
    migrations = await loadMigrations();
    currentSql = await loadCurrentSql();
    olderSql = currentSql.map((f) =>
      f.name === 'hookrelay_uuidv7_after' ? { ...f, script: f.script.replace('AS $fn$\n', 'AS $fn$\n  -- an older body\n') } : f,
    );
    expect(olderSql).not.toEqual(currentSql);
  });
  afterAll(async () => {
    for (const db of open) await db.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  let byInitdb: Awaited<ReturnType<typeof openDataDir>>;
  let fromTemplate: Awaited<ReturnType<typeof openDataDir>>;
  let olderTemplateDir: string;
  /** The initdb data dir, closed and opened again with the embedded defaults. */
  let reopenedDb: Database;

  it('without a template, a new data dir is made by initdb; one with fewer migrations and older current SQL is saved from it', async () => {
    const none = path.join(tmp, 'no-template');
    mkdirSync(none);
    const pgdata = path.join(tmp, 'initdb', 'pgdata');
    const prepared = await prepareDataDir(pgdata, { templateDir: none, migrations });
    expect(prepared).toEqual({ origin: 'initdb', reason: expect.stringContaining('no template') });
    const db = await openPGlite({ dataDir: pgdata, settings: DEFAULT_PGLITE_SETTINGS });
    open.push(db);
    // The older template: everything but the last migration, and an older body of one function.
    const older = migrations.slice(0, -1);
    expect(await migrate(db, older, olderSql)).toEqual({ migrations: older.map((m) => m.name), currentSql: olderSql.map((f) => f.name), superseded: [] });
    olderTemplateDir = path.join(tmp, 'older-template');
    await writePGliteTemplate(olderTemplateDir, db.pglite, older);
    expect(await migrate(db, migrations)).toEqual({ migrations: [migrations.at(-1)!.name], currentSql: ['hookrelay_uuidv7_after'], superseded: [] });
    byInitdb = { pgdata, prepared, db, applied: { migrations: migrations.map((m) => m.name), currentSql: currentSql.map((f) => f.name), superseded: [] } };
  }, 120_000); // initdb inside WebAssembly: seconds, many more on a busy machine

  it('a new data dir from the built template holds every migration and the same schema as one made by initdb', async () => {
    const template = await findPGliteTemplate(undefined, migrations);
    expect(template, 'pnpm build makes packages/server/dist/pglite-template.tar.gz').toHaveProperty('archive');
    expect((template as { manifest: { currentSql: unknown } }).manifest.currentSql).toEqual(
      currentSql.map((f) => ({ name: f.name, sha256: sha256Hex(f.script) })),
    );
    fromTemplate = await openDataDir('template', path.dirname((template as { archive: string }).archive));
    expect(fromTemplate.prepared).toEqual({ origin: 'template' });
    expect(fromTemplate.applied).toEqual({ migrations: [], currentSql: [], superseded: [] });
    const dump = await schemaDump(byInitdb.db);
    expect(await schemaDump(fromTemplate.db)).toEqual(dump);
    expect(dump.tables).toContain('public.inbound_messages | BASE TABLE');
    expect(dump.functions.some((f) => f.startsWith('hookrelay_store_inbound_batch'))).toBe(true);
  });

  it('a template older than the migrations and the current SQL is brought up to date', async () => {
    const fromOlder = await openDataDir('older', olderTemplateDir);
    expect(fromOlder.prepared).toEqual({ origin: 'template' });
    expect(fromOlder.applied).toEqual({ migrations: [migrations.at(-1)!.name], currentSql: ['hookrelay_uuidv7_after'], superseded: [] });
    expect(await schemaDump(fromOlder.db)).toEqual(await schemaDump(byInitdb.db));
    const versions = await fromOlder.db.sql<{ version: number }>`SELECT version FROM schema_migrations ORDER BY version`;
    expect(versions.map((r) => r.version)).toEqual(migrations.map((m) => m.version));
  });

  it('a full API round trip answers the same on a data dir from the template and on one made by initdb', async () => {
    const results = [];
    for (const db of [byInitdb.db, fromTemplate.db]) results.push(await roundTrip(db));
    expect(results[1]).toEqual(results[0]);
    expect(results[0]!.message).toMatchObject({ status: 'queued', body: { hello: 'template' }, size_bytes: 20 });
  });

  it('a template whose migrations differ from the shipped ones, or made by another PGlite, is not used', async () => {
    const edited = migrations.map((m, i) => (i === 0 ? { ...m, script: `${m.script}\n-- edited\n` } : m));
    expect(await prepareDataDir(path.join(tmp, 'edited', 'pgdata'), { templateDir: olderTemplateDir, migrations: edited })).toEqual({
      origin: 'initdb',
      reason: expect.stringContaining(`its migration ${migrations[0]!.name} differs`),
    });
    expect(await prepareDataDir(path.join(tmp, 'other-pglite', 'pgdata'), { templateDir: olderTemplateDir, migrations, pgliteVersion: '0.0.1' })).toEqual({
      origin: 'initdb',
      reason: expect.stringContaining('installed 0.0.1'),
    });
    const manifest = JSON.parse(readFileSync(path.join(olderTemplateDir, PGLITE_TEMPLATE_MANIFEST), 'utf8'));
    expect(manifest.migrations.map((m: { name: string }) => m.name)).toEqual(migrations.slice(0, -1).map((m) => m.name));
    expect(manifest.currentSql).toEqual(olderSql.map((f) => ({ name: f.name, sha256: sha256Hex(f.script) })));
  });

  it('is never loaded into an existing data dir, even a closed one', async () => {
    const db = byInitdb.db;
    await db.sql`INSERT INTO projects (id, name) VALUES (${'01900000-0000-7000-8000-00000000abcd'}, ${'kept'})`;
    await db.close();
    expect(await prepareDataDir(byInitdb.pgdata, { templateDir: olderTemplateDir, migrations })).toEqual({ origin: 'existing' });
    const reopened = await openPGlite({ dataDir: byInitdb.pgdata, settings: DEFAULT_PGLITE_SETTINGS });
    open.push(reopened);
    expect(await reopened.sql`SELECT name FROM projects WHERE id = ${'01900000-0000-7000-8000-00000000abcd'}`).toEqual([{ name: 'kept' }]);
    reopenedDb = reopened;
  });

  it("runs PostgreSQL with the embedded defaults, its shared memory sized for PGlite's one backend", async () => {
    // 16 MB of buffers in a segment of 20 MB (24 MB when PostgreSQL sizes it for its default 100
    // connections and 16 autovacuum worker slots).
    const settings = await reopenedDb.sql<{ name: string; setting: string; unit: string | null }>`
      SELECT name, setting, unit FROM pg_settings
      WHERE name IN ('shared_buffers', 'max_connections', 'autovacuum_worker_slots', 'max_wal_size', 'min_wal_size') ORDER BY name`;
    expect(settings).toEqual([
      { name: 'autovacuum_worker_slots', setting: '1', unit: null },
      { name: 'max_connections', setting: '2', unit: null },
      { name: 'max_wal_size', setting: '128', unit: 'MB' },
      { name: 'min_wal_size', setting: '32', unit: 'MB' },
      { name: 'shared_buffers', setting: '2048', unit: '8kB' },
    ]);
    const [shmem] = await reopenedDb.sql<{ buffers: number; segment: number }>`
      SELECT sum(allocated_size) FILTER (WHERE name = 'Buffer Blocks')::float8 AS buffers, sum(allocated_size)::float8 AS segment
      FROM pg_shmem_allocations`;
    expect(shmem!.buffers).toBeGreaterThanOrEqual(16 * 1024 * 1024);
    expect(shmem!.segment).toBeLessThanOrEqual(21 * 1024 * 1024);
  });

  it('a data dir whose unpacking was cut off is unpacked afresh', async () => {
    const pgdata = path.join(tmp, 'cut', 'pgdata');
    // What a process killed while unpacking leaves: the staging dir, and no data dir.
    mkdirSync(`${pgdata}.new/base`, { recursive: true });
    writeFileSync(`${pgdata}.new/PG_VERSION`, 'garbage');
    expect(await prepareDataDir(pgdata, { templateDir: olderTemplateDir, migrations })).toEqual({ origin: 'template' });
    expect(readFileSync(path.join(pgdata, 'PG_VERSION'), 'utf8').trim()).toMatch(/^\d+$/);
    expect(readFileSync(path.join(olderTemplateDir, PGLITE_TEMPLATE_ARCHIVE)).length).toBeGreaterThan(0);
  });
});

/** What the schema is made of: tables, columns, constraints, indexes, functions, types, sequences. */
async function schemaDump(db: Database) {
  const rows = async (query: Promise<Record<string, unknown>[]>) => (await query).map((r) => Object.values(r).join(' | '));
  return {
    tables: await rows(db.sql`
      SELECT table_schema || '.' || table_name AS t, table_type FROM information_schema.tables
      WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`),
    columns: await rows(db.sql`
      SELECT table_name, column_name, ordinal_position, data_type, is_nullable, coalesce(column_default, '') AS d
      FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`),
    constraints: await rows(db.sql`
      SELECT conrelid::regclass::text AS t, conname, pg_get_constraintdef(oid) AS def
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`),
    indexes: await rows(db.sql`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2`),
    functions: await rows(db.sql`
      SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, md5(pg_get_functiondef(p.oid)) AS def
      FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1, 2`),
    triggers: await rows(db.sql`
      SELECT tgrelid::regclass::text AS t, tgname, pg_get_triggerdef(oid) AS def FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`),
    types: await rows(db.sql`
      SELECT t.typname, t.typtype, coalesce(string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder), '') AS labels
      FROM pg_type t LEFT JOIN pg_enum e ON e.enumtypid = t.oid
      WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('e', 'd')
      GROUP BY 1, 2 ORDER BY 1`),
    sequences: await rows(db.sql`SELECT sequence_name, data_type FROM information_schema.sequences WHERE sequence_schema = 'public' ORDER BY 1`),
    settings: await rows(db.sql`
      SELECT datname, pg_encoding_to_char(encoding) AS enc, datcollate, datctype FROM pg_database WHERE datname = current_database()`),
  };
}

/** Creates a cli-mode endpoint, ingests a webhook, reads it back: the answers without ids and times. */
async function roundTrip(db: Database) {
  const t = await createTestApp({ db });
  try {
    const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'round trip', mode: 'cli' } });
    expect(created.status, created.raw).toBe(201);
    const ingested = await t.app.inject({
      method: 'POST',
      url: `/in/${created.body.data.secret_token}/hooks?x=1`,
      payload: '{"hello":"template"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(ingested.statusCode, ingested.body).toBe(200);
    const id = ingested.json().data.message_id as string;
    const listed = await t.request('GET', '/v1/inbound-logs');
    expect(listed.status, listed.raw).toBe(200);
    expect(listed.body.data.map((m: { message_id?: string; id?: string }) => m.message_id ?? m.id)).toEqual([id]);
    const got = await t.request('GET', `/v1/inbound-messages/${id}`);
    expect(got.status, got.raw).toBe(200);
    const replayed = await t.request('POST', `/v1/inbound-messages/${id}/replay`);
    expect(replayed.status, replayed.raw).toBe(200);
    const deleted = await t.request('DELETE', `/v1/inbound-endpoints/${created.body.data.id}`);
    const strip = (value: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(value).filter(([k]) => !/(^|_)(id|at|token|url|sha256)$/.test(k) && k !== 'headers'));
    return {
      endpoint: strip(created.body.data),
      message: strip(got.body.data),
      replayCount: replayed.body.data.replay_count as number,
      deleteStatus: deleted.status,
    };
  } finally {
    await t.close();
  }
}
