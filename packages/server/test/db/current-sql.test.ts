import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSecretToken, newUuidv7 } from '@hookrelay/shared';
import { openPostgres, type Database } from '../../src/db/database.js';
import { storeInboundBatch } from '../../src/db/ingest.js';
import { CURRENT_SQL_DIR, loadCurrentSql, loadMigrations, migrate, sha256Hex, type CurrentSql, type Migration } from '../../src/db/migrate.js';
import { insertProject } from '../../src/db/projects.js';
import { sha256Hex as sha256OfBytes } from '../../src/security/crypto.js';
import { backend, createEmptyPostgresDatabaseUrl, createPostgresDatabaseUrl, createTestDatabase } from '../helpers/database.js';

/**
 * The current body of each stored function is one file in packages/server/sql/, applied after the
 * numbered migrations when the database does not hold that body yet (by SHA-256), under the
 * migrations' advisory lock.
 */

let db: Database;
let migrations: Migration[];
let shipped: CurrentSql[];
const opened: Database[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  migrations = await loadMigrations();
  shipped = await loadCurrentSql();
});
afterAll(async () => {
  for (const other of opened) await other.close();
  await db?.close();
});

/** A function of the test's own, at body `answer`. */
const probe = (answer: number, name = 'hookrelay_test_probe'): CurrentSql => ({
  name,
  script: `CREATE OR REPLACE FUNCTION ${name}() RETURNS integer LANGUAGE sql IMMUTABLE AS $fn$ SELECT ${answer} $fn$;\n`,
});

async function callProbe(on: Database, name = 'hookrelay_test_probe'): Promise<number> {
  const [row] = await on.sql<{ answer: number }>([`SELECT ${name}() AS answer`] as unknown as TemplateStringsArray);
  return row!.answer;
}

/** The catalog row of the function: its transaction id changes whenever it is created or replaced. */
async function catalogVersion(on: Database, name: string): Promise<string> {
  const [row] = await on.sql<{ xmin: string }>`SELECT xmin::text AS xmin FROM pg_proc WHERE proname = ${name}`;
  return row!.xmin;
}

async function recorded(on: Database, name: string) {
  return on.sql<{ sha256: string; current: boolean }>`
    SELECT sha256, replaced_at IS NULL AS current FROM schema_current_sql WHERE name = ${name} ORDER BY applied_at, replaced_at NULLS LAST`;
}

describe('the shipped current SQL', () => {
  it('is one file per stored function, named after the function it creates or replaces', () => {
    const files = readdirSync(CURRENT_SQL_DIR).filter((f) => f.endsWith('.sql')).sort();
    expect(files).toEqual(['hookrelay_store_inbound_batch.sql', 'hookrelay_uuidv7_after.sql']);
    for (const file of files) {
      const script = readFileSync(path.join(CURRENT_SQL_DIR, file), 'utf8');
      const created = [...script.matchAll(/CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)/gi)].map((m) => m[1]);
      expect(created).toEqual([file.replace(/\.sql$/, '')]);
      expect(script).toMatch(/CREATE OR REPLACE FUNCTION/);
    }
  });

  it('is what the migrated database runs, each body recorded once by its hash', async () => {
    const rows = await db.sql<{ name: string; sha256: string }>`
      SELECT name, sha256 FROM schema_current_sql WHERE replaced_at IS NULL ORDER BY name COLLATE "C"`;
    expect(rows).toEqual(shipped.map((f) => ({ name: f.name, sha256: sha256Hex(f.script) })));
    expect(await migrate(db)).toEqual({ migrations: [], currentSql: [], superseded: [] });
  });

  it('leaves no function of migration 005 that nothing calls', async () => {
    const functions = await db.sql<{ proname: string }>`
      SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND prokind = 'f' AND prorettype <> 'trigger'::regtype
      ORDER BY proname COLLATE "C"`;
    expect(functions.map((f) => f.proname)).toEqual(shipped.map((f) => f.name));
  });
});

describe('migrate and the current SQL files', () => {
  it('applies a new file once, and not again while it is unchanged', async () => {
    const first = await migrate(db, migrations, [...shipped, probe(1)]);
    expect(first).toEqual({ migrations: [], currentSql: ['hookrelay_test_probe'], superseded: [] });
    expect(await callProbe(db)).toBe(1);
    const catalog = await catalogVersion(db, 'hookrelay_test_probe');
    expect(await migrate(db, migrations, [...shipped, probe(1)])).toEqual({ migrations: [], currentSql: [], superseded: [] });
    // Not replaced with the same text either: the catalog row is the one the first apply wrote.
    expect(await catalogVersion(db, 'hookrelay_test_probe')).toBe(catalog);
    expect(await recorded(db, 'hookrelay_test_probe')).toEqual([{ sha256: sha256Hex(probe(1).script), current: true }]);
  });

  it('applies a file again when it changes, and never puts a replaced body back', async () => {
    expect((await migrate(db, migrations, [...shipped, probe(2)])).currentSql).toEqual(['hookrelay_test_probe']);
    expect(await callProbe(db)).toBe(2);
    // A process of the previous version, started after the newer one: its body stays out.
    const catalog = await catalogVersion(db, 'hookrelay_test_probe');
    expect(await migrate(db, migrations, [...shipped, probe(1)])).toEqual({ migrations: [], currentSql: [], superseded: ['hookrelay_test_probe'] });
    expect(await callProbe(db)).toBe(2);
    expect(await catalogVersion(db, 'hookrelay_test_probe')).toBe(catalog);
    expect(await recorded(db, 'hookrelay_test_probe')).toEqual([
      { sha256: sha256Hex(probe(1).script), current: false },
      { sha256: sha256Hex(probe(2).script), current: true },
    ]);
    // A body the database has never held is applied, whatever came before.
    expect((await migrate(db, migrations, [...shipped, probe(3)])).currentSql).toEqual(['hookrelay_test_probe']);
    expect(await callProbe(db)).toBe(3);
  });

  it('rolls a failing file back with everything else of the start', async () => {
    const broken: CurrentSql = { name: 'hookrelay_test_broken', script: 'CREATE OR REPLACE FUNCTION hookrelay_test_broken() RETURNS int LANGUAGE sql AS $$ SELECT * FROM no_such_table $$;' };
    const extra: Migration = { version: 9101, name: '9101_test_before_broken', script: 'CREATE TABLE test_before_broken (id integer);' };
    await expect(migrate(db, [...migrations, extra], [...shipped, probe(4), broken])).rejects.toThrow(/no_such_table/);
    expect(await callProbe(db)).toBe(3);
    const [table] = await db.sql<{ t: string | null }>`SELECT to_regclass('test_before_broken')::text AS t`;
    expect(table!.t).toBeNull();
    expect(await recorded(db, 'hookrelay_test_broken')).toEqual([]);
  });

  it('applies each new body once when processes start at once', async () => {
    // On PostgreSQL each from its own pool; PGlite has one connection, which runs them in turn.
    const url = backend() === 'postgres' ? await createPostgresDatabaseUrl() : undefined;
    const connect = () => {
      if (url === undefined) return db;
      const other = openPostgres({ url, poolSize: 1 });
      opened.push(other);
      return other;
    };
    const starts = Array.from({ length: 4 }, () => connect());
    const files = [...shipped, probe(5, 'hookrelay_test_concurrent'), probe(6, 'hookrelay_test_concurrent_b')];
    const results = await Promise.all(starts.map((start) => migrate(start, migrations, files)));
    expect(results.flatMap((r) => r.currentSql).sort()).toEqual(['hookrelay_test_concurrent', 'hookrelay_test_concurrent_b']);
    expect(results.filter((r) => r.currentSql.length > 0)).toHaveLength(1);
    expect(await callProbe(starts[0]!, 'hookrelay_test_concurrent')).toBe(5);
    expect(await recorded(starts[0]!, 'hookrelay_test_concurrent')).toHaveLength(1);
  });
});

/**
 * A rolling upgrade on PostgreSQL: the database as the previous version left it (migrations up to
 * 012, hookrelay_store_inbound_batch put there by a migration and not recorded as current SQL,
 * hookrelay_ingest_inbound still there), then a start of this version; calls as a process of the
 * previous version makes them must go on working. The migrations keep no superseded body, so the
 * bodies the previous version had are installed as it would have been: the current SQL outside the
 * record, and hookrelay_ingest_inbound by the signature migration 013 drops it by (nothing calls it).
 */
const PREVIOUS_INGEST_INBOUND = `CREATE FUNCTION hookrelay_ingest_inbound(p_items jsonb, p_bodies bytea, p_idempotency_expires_at timestamptz)
  RETURNS TABLE (ord integer, outcome text, message_id uuid, endpoint_id uuid, previous_last_id uuid)
  LANGUAGE sql AS $fn$ SELECT NULL::integer, NULL::text, NULL::uuid, NULL::uuid, NULL::uuid WHERE false $fn$;`;

describe.skipIf(backend() !== 'postgres')('a start on a database of the previous version', () => {
  it('drops hookrelay_ingest_inbound, applies the current SQL, and takes the calls of the previous version', async () => {
    const previous = openPostgres({ url: await createEmptyPostgresDatabaseUrl(), poolSize: 2 });
    opened.push(previous);
    const before = migrations.filter((m) => m.version <= 12);
    expect(await migrate(previous, before, [])).toEqual({ migrations: before.map((m) => m.name), currentSql: [], superseded: [] });
    for (const file of shipped) await previous.sql.execScript(file.script);
    await previous.sql.execScript(PREVIOUS_INGEST_INBOUND);
    const fn = async () =>
      (await previous.sql<{ proname: string }>`SELECT proname FROM pg_proc WHERE proname LIKE 'hookrelay\\_%' AND prorettype <> 'trigger'::regtype ORDER BY 1`).map(
        (r) => r.proname,
      );
    expect(await fn()).toEqual(['hookrelay_ingest_inbound', 'hookrelay_store_inbound_batch', 'hookrelay_uuidv7_after']);

    const result = await migrate(previous);
    expect(result).toEqual({ migrations: migrations.filter((m) => m.version > 12).map((m) => m.name), currentSql: shipped.map((f) => f.name), superseded: [] });
    expect(await fn()).toEqual(['hookrelay_store_inbound_batch', 'hookrelay_uuidv7_after']);

    // The previous version's call: a batch with no event_type and no verified in its items.
    const projectId = (await insertProject(previous.sql, 'previous')).id;
    const endpointId = newUuidv7();
    await previous.sql`
      INSERT INTO inbound_endpoints (id, project_id, name, mode, url, secret_token_encrypted, secret_token_hash)
      VALUES (${endpointId}, ${projectId}, 'previous', 'cli', '', 'unused', ${sha256OfBytes(newSecretToken())})`;
    const body = Buffer.from('{"previous":true}');
    const ids = [newUuidv7(), newUuidv7()];
    const items = ids.map((id, n) => ({
      n, ord: n, id, endpoint_id: endpointId, project_id: projectId, method: 'POST', path: '/', query: '', content_type: 'application/json',
      size_bytes: body.length, sha256: sha256OfBytes(body), raw_headers: [['content-type', 'application/json']] as [string, string][],
      idempotency_key: n === 0 ? 'k' : null, received_at: new Date(), body_offset: n * body.length,
    }));
    const rows = await storeInboundBatch(previous.sql, items as never, Buffer.concat([body, body]), new Date(Date.now() + 60_000));
    expect(rows.map((r) => [r.outcome, r.message_id])).toEqual(ids.map((id) => ['stored', id]));
    const stored = await previous.sql<{ event_type: string | null; verified: string[] }>`
      SELECT event_type, verified FROM inbound_messages WHERE inbound_endpoint_id = ${endpointId} ORDER BY id`;
    expect(stored).toEqual([{ event_type: null, verified: [] }, { event_type: null, verified: [] }]);
  });
});
