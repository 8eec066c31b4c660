import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import { PGlitePreparedStatements } from '../../src/db/pglite-prepared.js';
import { backend } from '../helpers/database.js';

/**
 * Autocommit statements on PGlite run as named prepared statements: the same rows, types and errors
 * as PGlite's own query(), each text parsed once.
 */
describe.skipIf(backend() !== 'pglite')('PGlite prepared statements', () => {
  let pglite: PGlite;
  let prepared: PGlitePreparedStatements;
  const preparedNames = async () =>
    (await pglite.query<{ name: string }>(`SELECT name FROM pg_prepared_statements WHERE name LIKE 'hookrelay_%' ORDER BY name`)).rows.map((r) => r.name);

  beforeAll(async () => {
    pglite = await PGlite.create();
    await pglite.exec(`CREATE TABLE t (id int PRIMARY KEY, ids uuid[], doc jsonb, data bytea, at timestamptz, note text)`);
    prepared = new PGlitePreparedStatements(pglite, 3);
  });
  afterAll(async () => {
    await pglite.close();
  });

  it('answers the rows and types that query() answers, parsing each text once', async () => {
    const insert = `INSERT INTO t (id, ids, doc, data, at, note) VALUES ($1, $2::uuid[], $3::jsonb, $4::bytea, $5::text::timestamptz, $6) RETURNING *`;
    const values = [1, ['0190a1a2-0000-7000-8000-000000000001'], { a: [1, 'x'], 'b"c': null }, new Uint8Array([0, 255, 7]), '2026-12-04T10:00:00.123456Z', null];
    const [stored] = await prepared.query(insert, values);
    const [expected] = (await pglite.query(`SELECT * FROM t WHERE id = 1`)).rows;
    expect(stored).toEqual(expected);
    expect(stored).toMatchObject({ id: 1, ids: ['0190a1a2-0000-7000-8000-000000000001'], doc: { a: [1, 'x'], 'b"c': null }, note: null });
    expect(stored!.at).toBeInstanceOf(Date);
    expect([...(stored!.data as Uint8Array)]).toEqual([0, 255, 7]);

    const select = `SELECT id, note FROM t WHERE id = $1`;
    expect(await prepared.query(select, [1])).toEqual([{ id: 1, note: null }]);
    expect(await prepared.query(select, [2])).toEqual([]);
    expect(await preparedNames()).toHaveLength(2);
  });

  it('fails a statement with its SQLSTATE and stays usable', async () => {
    const insert = `INSERT INTO t (id) VALUES ($1)`;
    await expect(prepared.query(insert, [1])).rejects.toMatchObject({ code: '23505' });
    await expect(prepared.query(`SELECT nonsense FROM t`, [])).rejects.toMatchObject({ code: '42703' });
    expect(await prepared.query(insert, [2])).toEqual([]);
    expect(await prepared.query(`SELECT count(*)::int AS n FROM t`, [])).toEqual([{ n: 2 }]);
  });

  it('keeps at most its capacity prepared, closing the least recently used', async () => {
    for (let i = 0; i < 5; i++) await prepared.query(`SELECT $1::int + ${i} AS n`, [1]);
    expect(await preparedNames()).toHaveLength(3);
    expect(await prepared.query(`SELECT $1::int + 0 AS n`, [1])).toEqual([{ n: 1 }]);
  });

  it('prepares a statement again when a table it reads changed its columns', async () => {
    const select = `SELECT * FROM t WHERE id = $1`;
    expect(Object.keys((await prepared.query(select, [1]))[0]!)).toContain('note');
    await pglite.exec(`ALTER TABLE t DROP COLUMN note`);
    const [row] = await prepared.query(select, [1]);
    expect(row).toMatchObject({ id: 1 });
    expect(Object.keys(row!)).not.toContain('note');
  });
});
