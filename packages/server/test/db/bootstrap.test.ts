import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOTSTRAP_KEY_FILE, bootstrapProject } from '../../src/bootstrap.js';
import { parseConfig } from '../../src/config.js';
import type { Database } from '../../src/db/database.js';
import { findPrincipalByKeyHash } from '../../src/db/api-keys.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { createTestDatabase } from '../helpers/database.js';

/** Bootstrap on an empty database: the `default` project and its first key, given or generated. */

let db: Database;
let tmp: string;
beforeAll(async () => {
  db = await createTestDatabase();
  tmp = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-bootstrap-'));
});
afterAll(async () => {
  await db?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

let dirCount = 0;
const freshDataDir = () => path.join(tmp, `data-${++dirCount}`, 'nested');

async function counts(): Promise<{ projects: number; keys: number }> {
  const [p] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM projects`;
  const [k] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys`;
  return { projects: p!.n, keys: k!.n };
}

/** Every column of every api_keys and projects row, as text. */
async function storedText(): Promise<string> {
  const keys = await db.sql<{ j: string }>`SELECT row_to_json(k)::text AS j FROM api_keys k`;
  const projects = await db.sql<{ j: string }>`SELECT row_to_json(p)::text AS j FROM projects p`;
  return [...keys, ...projects].map((r) => r.j).join('\n');
}

async function emptyTables(): Promise<void> {
  await db.sql`DELETE FROM api_keys`;
  await db.sql`DELETE FROM projects`;
}

describe('bootstrapProject', () => {
  it('starts from an empty database', async () => {
    expect(await counts()).toEqual({ projects: 0, keys: 0 });
  });

  it('with HOOKRELAY_BOOTSTRAP_API_KEY: creates project default and that key, stored only as a hash', async () => {
    const key = `hr_${randomBytes(20).toString('hex')}`;
    const dataDir = freshDataDir();
    const result = await bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_BOOTSTRAP_API_KEY: key }));

    expect(result.generatedKey).toBeUndefined();
    expect(result.keyFile).toBeUndefined();
    expect(result.projectId).toEqual(expect.any(String));
    expect(await counts()).toEqual({ projects: 1, keys: 1 });

    const principal = await findPrincipalByKeyHash(db.sql, sha256Hex(key));
    expect(principal).toEqual({ api_key_id: expect.any(String), project_id: result.projectId, project_name: 'default' });

    const [row] = await db.sql<{ key_hash: string; key_hint: string }>`SELECT key_hash, key_hint FROM api_keys`;
    expect(row!.key_hash).toBe(sha256Hex(key));
    const stored = await storedText();
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(3));
    // The key is not written to disk either: the operator chose it.
    expect(existsSync(path.join(dataDir, BOOTSTRAP_KEY_FILE))).toBe(false);
  });

  it('a second bootstrap does nothing', async () => {
    const before = await storedText();
    const dataDir = freshDataDir();
    const result = await bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: dataDir }));
    expect(result).toEqual({});
    expect(await counts()).toEqual({ projects: 1, keys: 1 });
    expect(await storedText()).toBe(before);
    expect(existsSync(path.join(dataDir, BOOTSTRAP_KEY_FILE))).toBe(false);

    const again = await bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: dataDir, HOOKRELAY_BOOTSTRAP_API_KEY: `hr_${'1'.repeat(40)}` }));
    expect(again).toEqual({});
    expect(await findPrincipalByKeyHash(db.sql, sha256Hex(`hr_${'1'.repeat(40)}`))).toBeUndefined();
    expect(await counts()).toEqual({ projects: 1, keys: 1 });
  });

  it('without the variable: generates an hr_ key and writes it to <dataDir>/bootstrap-api-key with mode 0600', async () => {
    await emptyTables();
    const dataDir = freshDataDir();
    expect(existsSync(dataDir)).toBe(false);
    const result = await bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: dataDir }));

    const key = result.generatedKey!;
    expect(key).toMatch(/^hr_[a-f0-9]{40}$/);
    const file = path.join(dataDir, BOOTSTRAP_KEY_FILE);
    expect(BOOTSTRAP_KEY_FILE).toBe('bootstrap-api-key');
    expect(result.keyFile).toBe(file);
    expect(readFileSync(file, 'utf8').trim()).toBe(key);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const principal = await findPrincipalByKeyHash(db.sql, sha256Hex(key));
    expect(principal?.project_name).toBe('default');
    expect(principal?.project_id).toBe(result.projectId);
    const stored = await storedText();
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(key.slice(3));
    expect(await counts()).toEqual({ projects: 1, keys: 1 });
  });

  it('generates a different key each time', async () => {
    await emptyTables();
    const first = (await bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: freshDataDir() }))).generatedKey;
    await emptyTables();
    const second = (await bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: freshDataDir() }))).generatedKey;
    expect(first).toMatch(/^hr_[a-f0-9]{40}$/);
    expect(second).toMatch(/^hr_[a-f0-9]{40}$/);
    expect(first).not.toBe(second);
  });

  it('two bootstraps at once create one project and one key', async () => {
    await emptyTables();
    const results = await Promise.all([
      bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: freshDataDir() })),
      bootstrapProject(db, parseConfig({ HOOKRELAY_DATA_DIR: freshDataDir() })),
    ]);
    expect(await counts()).toEqual({ projects: 1, keys: 1 });
    expect(results.filter((r) => r.generatedKey !== undefined)).toHaveLength(1);
    expect(results.filter((r) => r.projectId === undefined)).toHaveLength(1);
  });
});
