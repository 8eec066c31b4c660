import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openPGlite, type Database } from '../../src/db/database.js';
import { checkpointDue } from '../../src/db/maintenance.js';
import { REWRITE_MIN_FREE_ROWS, runEmbeddedUpkeep, type RewriteMarks } from '../../src/sweepers/embedded.js';
import { DEFAULT_SWEEPERS, deletedInboundPayloadsSweeper, runSweeperOnce, startSweepers } from '../../src/sweepers/runner.js';
import type { Sweeper } from '../../src/sweepers/sweeper.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { backend } from '../helpers/database.js';

/**
 * PGlite has no autovacuum and no checkpointer: the embedded server's sweepers do their work. On
 * PostgreSQL they leave both to the server.
 */

interface LogLine {
  level: string;
  msg: string | undefined;
  fields: Record<string, unknown>;
}

function captureLog(): { log: never; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: string) =>
    (fields: unknown, msg?: string): void => {
      lines.push(typeof fields === 'string' ? { level, msg: fields, fields: {} } : { level, msg, fields: fields as Record<string, unknown> });
    };
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as never, lines };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface TableStats {
  n_dead_tup: number;
  vacuum_count: number;
  last_vacuum: Date | null;
}

async function payloadStats(db: Database): Promise<TableStats> {
  const [row] = await db.sql<TableStats>`
    SELECT n_dead_tup::int AS n_dead_tup, vacuum_count::int AS vacuum_count, last_vacuum
    FROM pg_stat_user_tables WHERE relname = 'payloads'`;
  return row!;
}

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** 150 webhooks stored and deleted, their payload rows removed by the payload sweeper: 150 dead rows. */
async function deadPayloadRows(): Promise<void> {
  const created = await t.request('POST', '/v1/inbound-endpoints', { body: { name: 'upkeep', mode: 'cli' } });
  expect(created.status, created.raw).toBe(201);
  const ids: string[] = [];
  for (let i = 0; i < 150; i++) {
    const res = await t.app.inject({ method: 'POST', url: `/in/${created.body.data.secret_token}`, payload: JSON.stringify({ i, pad: 'x'.repeat(500) }), headers: { 'content-type': 'application/json' } });
    expect(res.statusCode, res.body).toBe(200);
    ids.push(res.json().data.message_id);
  }
  for (let i = 0; i < ids.length; i += 100) {
    const res = await t.request('POST', '/v1/inbound-messages/delete-batch', { body: { message_ids: ids.slice(i, i + 100) } });
    expect(res.status, res.raw).toBe(200);
  }
  expect(await runSweeperOnce(t.db, deletedInboundPayloadsSweeper, t.app.services)).toBe(150);
}

describe('the sweepers on the embedded database', () => {
  it.skipIf(backend() !== 'pglite')('vacuum a table whose deleted rows pass the autovacuum threshold, and log it', async () => {
    await deadPayloadRows();
    // The statistics of this connection reach pg_stat_user_tables within a second.
    await until('the dead rows in the statistics', async () => (await payloadStats(t.db)).n_dead_tup >= 150);
    const before = await payloadStats(t.db);
    expect(before.last_vacuum).toBeNull();

    const { log, lines } = captureLog();
    const sweepers = startSweepers(t.db, t.app.services, log, 50, DEFAULT_SWEEPERS);
    try {
      await until('a vacuum of payloads', async () => (await payloadStats(t.db)).vacuum_count > before.vacuum_count);
    } finally {
      await sweepers.stop();
    }
    const after = await payloadStats(t.db);
    expect(after.n_dead_tup).toBe(0);
    expect(after.last_vacuum).not.toBeNull();
    const vacuumed = lines.find((line) => line.msg === 'vacuumed tables of the embedded database');
    expect(vacuumed?.level).toBe('info');
    expect(vacuumed?.fields).toMatchObject({ sweeper: 'embedded-vacuum', tables: expect.arrayContaining(['public.payloads']), ms: expect.any(Number) });
    expect(lines.filter((line) => line.level === 'error' || line.level === 'warn')).toEqual([]);
    // The 150 messages put the table's statistics behind: the planner has them again.
    const analyzed = lines.filter((line) => line.msg === 'vacuumed tables of the embedded database').flatMap((line) => line.fields.analyzed as string[]);
    expect(analyzed).toContain('public.inbound_messages');
    const [messages] = await t.db.sql<{ last_analyze: Date | null; reltuples: number }>`
      SELECT s.last_analyze, c.reltuples::float8 AS reltuples FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'inbound_messages'`;
    expect(messages!.last_analyze).not.toBeNull();
    expect(messages!.reltuples).toBeGreaterThanOrEqual(150);

    // Nothing left to do: the next upkeep vacuums nothing.
    expect((await runEmbeddedUpkeep(t.db)).filter((report) => report.step === 'embedded-vacuum')).toEqual([]);
  });

  it.skipIf(backend() !== 'postgres')('leave vacuuming to PostgreSQL', async () => {
    await deadPayloadRows();
    let rounds = 0;
    const counter: Sweeper = {
      name: 'round-counter',
      lockKey: 0x7377ffff,
      async run() {
        rounds += 1;
        return 0;
      },
    };
    const { log, lines } = captureLog();
    const sweepers = startSweepers(t.db, t.app.services, log, 50, [...DEFAULT_SWEEPERS, counter]);
    try {
      await until('three sweeper rounds', async () => rounds >= 3);
    } finally {
      await sweepers.stop();
    }
    // A manual VACUUM sets last_vacuum; the server's autovacuum sets last_autovacuum only.
    expect((await payloadStats(t.db)).last_vacuum).toBeNull();
    expect(lines.map((line) => line.msg)).not.toContain('vacuumed tables of the embedded database');
  });
});

describe.skipIf(backend() !== 'pglite')('checkpoints of the embedded database', () => {
  let db: Database | undefined;
  afterAll(async () => {
    await db?.close();
  });

  it('checkpoints once the WAL since the last checkpoint reaches max_wal_size / (1 + checkpoint_completion_target)', async () => {
    const dump = readFileSync(inject('pgliteTemplatePath'));
    // The smallest max_wal_size PostgreSQL takes (two 16 MB segments): the threshold is about 17 MB.
    db = await openPGlite({ loadDataDir: new Blob([dump]), settings: { max_wal_size: '32MB' } });
    const redo = async () => (await db!.sql<{ redo: string }>`SELECT redo_lsn::text AS redo FROM pg_control_checkpoint()`)[0]!.redo;
    expect(await checkpointDue(db.sql)).toBeNull();
    const first = await redo();

    await db.sql`CREATE TABLE scratch AS SELECT g, repeat(md5(g::text), 8) AS v FROM generate_series(1, 100000) AS g`;
    // A backend publishes its table statistics at most once a second; the upkeep reads them.
    await db.sql`SELECT pg_stat_force_next_flush()`;
    const due = await checkpointDue(db.sql);
    expect(due).toBeGreaterThan((32 * 1024 * 1024) / 1.9);

    // The new table's 100,000 inserted rows pass the insert threshold: it is vacuumed first, and that
    // vacuum's WAL is part of the checkpoint.
    const reports = await runEmbeddedUpkeep(db);
    expect(reports.map((report) => report.step)).toEqual(['embedded-vacuum', 'embedded-checkpoint']);
    expect(reports[0]!.tables).toContain('public.scratch');
    expect(reports[1]!.walBytes).toBeGreaterThanOrEqual(due!);
    expect(await redo()).not.toBe(first);
    expect(await checkpointDue(db.sql)).toBeNull();
  });
});

describe.skipIf(backend() !== 'pglite')('vacuums of the embedded database after many rows were deleted', () => {
  let db: Database | undefined;
  afterAll(async () => {
    await db?.close();
  });

  it('rewrite (VACUUM FULL) a table once more rows were deleted from it since its last rewrite than it holds, less those inserted since, so that its file shrinks', async () => {
    const dump = readFileSync(inject('pgliteTemplatePath'));
    db = await openPGlite({ loadDataDir: new Blob([dump]) });
    const sql = db.sql;
    const rows = 2 * REWRITE_MIN_FREE_ROWS;
    // Statistics are published at the end of a transaction at most once a second, unless forced:
    // each step's counts are in before the next one, as they are seconds apart in a server.
    const flush = () => sql`SELECT pg_stat_force_next_flush()`;
    for (const table of ['mostly_gone', 'mostly_kept', 'churning']) {
      await sql.execScript(`CREATE TABLE ${table} AS SELECT g, repeat(md5(g::text), 8) AS v FROM generate_series(1, ${rows}) AS g`);
      await flush();
    }
    const size = async (table: string) => (await sql<{ bytes: number }>`SELECT pg_relation_size(${table}::regclass)::float8 AS bytes`)[0]!.bytes;
    const vacuumOf = async (marks: RewriteMarks) => {
      const [report] = (await runEmbeddedUpkeep(db!, () => false, marks)).filter((r) => r.step === 'embedded-vacuum');
      await flush();
      return report;
    };
    // The first round sees the tables (and vacuums the inserts); what was deleted before it is not counted.
    const marks: RewriteMarks = new Map();
    expect((await vacuumOf(marks))!.rewritten).toEqual([]);
    const third = Math.floor(REWRITE_MIN_FREE_ROWS * 0.8);
    const before = { gone: await size('mostly_gone'), kept: await size('mostly_kept') };
    // As many rows arrive as go, more than it holds over time: the space is used again, no rewrite.
    for (let round = 0; round < 3; round++) {
      const from = round * third;
      await sql.execScript(`DELETE FROM churning WHERE g <= ${from + third}`);
      await sql.execScript(`INSERT INTO churning SELECT g, repeat(md5(g::text), 8) FROM generate_series(${rows + from + 1}, ${rows + from + third}) AS g`);
      await flush();
      expect((await vacuumOf(marks))?.rewritten ?? []).toEqual([]);
    }

    // The oldest rows go, as retention removes them, over two rounds, each a plain vacuum's worth:
    // their pages come first in the file.
    await sql.execScript(`DELETE FROM mostly_gone WHERE g <= ${third}`);
    await sql.execScript(`DELETE FROM mostly_kept WHERE g <= ${third}`);
    await flush();
    const first = await vacuumOf(marks);
    expect(first!.tables).toEqual(expect.arrayContaining(['public.mostly_gone', 'public.mostly_kept']));
    expect(first!.rewritten).toEqual([]);
    expect(await size('mostly_gone')).toBeGreaterThan(before.gone * 0.9);

    await sql.execScript(`DELETE FROM mostly_gone WHERE g <= ${2 * third}`);
    await flush();
    const second = await vacuumOf(marks);
    expect(second!.rewritten).toEqual(['public.mostly_gone']);
    const left = rows - 2 * third;
    expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM mostly_gone`)[0]!.n).toBe(left);
    // About as much of its file as of its rows is left.
    expect(await size('mostly_gone')).toBeLessThan((before.gone * left) / rows + 64 * 1024);
    // Fewer rows went from the other than it holds: its freed pages, at its start, wait for new rows.
    expect(await size('mostly_kept')).toBeGreaterThan(before.kept * 0.9);

    // The rewrite is its new mark: nothing is rewritten again until as much more is deleted.
    expect((await vacuumOf(marks))?.rewritten ?? []).toEqual([]);
  });
});
