import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { notifyAfterCommit } from '../../src/db/notify.js';
import { createTestDatabase } from '../helpers/database.js';

let db: Database;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
}

describe('announcements after a commit', () => {
  it('reach every listener of the channel, in order, and none after it unlistens', async () => {
    const heard: string[] = [];
    const other: string[] = [];
    const unlisten = await db.listen('hookrelay_test_announce', (payload) => heard.push(payload));
    const unlistenOther = await db.listen('hookrelay_test_other', (payload) => other.push(payload));
    await db.announce('hookrelay_test_announce', ['a', 'b', 'c']);
    await until(() => heard.length === 3);
    expect(heard).toEqual(['a', 'b', 'c']);
    await unlisten();
    await db.announce('hookrelay_test_announce', ['d']);
    await db.notify('hookrelay_test_announce', 'e');
    // A NOTIFY still heard would arrive well within this (the one above took a round trip).
    await new Promise((r) => setTimeout(r, 200));
    expect(heard).toEqual(['a', 'b', 'c']);
    expect(other).toEqual([]);
    await unlistenOther();
  });

  it('are not queued behind a long statement: a wake-up is heard while another transaction holds the database', async () => {
    const heard: string[] = [];
    const unlisten = await db.listen('hookrelay_test_busy', (payload) => heard.push(payload));
    try {
      let slowDone = false;
      // A transaction kept open while its caller awaits something else (PGlite runs one at a time).
      const slow = db.sql
        .begin(async (tx) => {
          await tx`SELECT 1`;
          await new Promise((r) => setTimeout(r, 1_500));
        })
        .then(() => (slowDone = true));
      await new Promise((r) => setTimeout(r, 100));
      await notifyAfterCommit(db, 'hookrelay_test_busy', ['wake']);
      await until(() => heard.length > 0 || slowDone, 5_000);
      expect(heard).toEqual(['wake']);
      expect(slowDone).toBe(false);
      await slow;
    } finally {
      await unlisten();
    }
  });

  it('still hear a NOTIFY that SQL sends in its transaction, once it commits', async () => {
    const heard: string[] = [];
    const unlisten = await db.listen('hookrelay_test_sql', (payload) => heard.push(payload));
    try {
      await db.sql.begin(async (tx) => {
        await tx`SELECT pg_notify('hookrelay_test_sql', 'from sql')`;
      });
      await until(() => heard.length > 0);
      expect(heard).toEqual(['from sql']);
    } finally {
      await unlisten();
    }
  });
});
