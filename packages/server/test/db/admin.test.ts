import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdminError,
  createKeyCommand,
  createProjectCommand,
  listKeysCommand,
  listProjectsCommand,
  revokeKeyCommand,
  type AdminOutput,
} from '../../src/admin/commands.js';
import type { Database } from '../../src/db/database.js';
import { findPrincipalByKeyHash } from '../../src/db/api-keys.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { createTestDatabase } from '../helpers/database.js';

/** Server admin commands: projects create|list, keys create|list|revoke. */

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

function capture(json = true): AdminOutput & { text: () => string; json_: () => any } {
  let written = '';
  return {
    json,
    write(text: string) {
      written += text;
    },
    text: () => written,
    json_: () => {
      const lines = written.split('\n').filter((l) => l.trim() !== '');
      expect(lines).toHaveLength(1);
      return JSON.parse(lines[0]!);
    },
  };
}

async function newProject(name: string): Promise<{ id: string; name: string }> {
  const out = capture();
  await createProjectCommand(db, out, name);
  return out.json_();
}

async function newKey(projectId: string, name?: string): Promise<{ id: string; project_id: string; key: string; name: string }> {
  const out = capture();
  await createKeyCommand(db, out, projectId, name);
  return out.json_();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('projects', () => {
  it('create prints the new project as one JSON object', async () => {
    const out = capture();
    await createProjectCommand(db, out, 'acme');
    const project = out.json_();
    expect(project).toEqual({ id: expect.stringMatching(UUID), name: 'acme', created_at: expect.any(String) });
    const [row] = await db.sql<{ name: string }>`SELECT name FROM projects WHERE id = ${project.id}`;
    expect(row!.name).toBe('acme');
  });

  it('list shows every project', async () => {
    const beta = await newProject('beta');
    const out = capture();
    await listProjectsCommand(db, out);
    const list = (out.json_() as { data: { id: string; name: string }[] }).data;
    expect(list.map((p) => p.name)).toEqual(expect.arrayContaining(['acme', 'beta']));
    expect(list.find((p) => p.name === 'beta')?.id).toBe(beta.id);

    const human = capture(false);
    await listProjectsCommand(db, human);
    expect(human.text()).toContain('beta');
    expect(human.text()).toContain(beta.id);
  });

  it('refuses a duplicate name with AdminError', async () => {
    await expect(createProjectCommand(db, capture(), 'acme')).rejects.toBeInstanceOf(AdminError);
    await expect(createProjectCommand(db, capture(), 'acme')).rejects.toThrow(/already exists/);
    const [row] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM projects WHERE name = 'acme'`;
    expect(row!.n).toBe(1);
  });

  it('refuses an empty name with AdminError', async () => {
    await expect(createProjectCommand(db, capture(), '   ')).rejects.toBeInstanceOf(AdminError);
  });
});

describe('keys', () => {
  it('create prints a key that authenticates for its project, stored only as a hash', async () => {
    const project = await newProject('keys-project');
    const created = await newKey(project.id, 'ci');
    expect(created.key).toMatch(/^hr_[a-f0-9]{40}$/);
    expect(created.id).toMatch(UUID);
    expect(created.project_id).toBe(project.id);
    expect(created.name).toBe('ci');
    const principal = await findPrincipalByKeyHash(db.sql, sha256Hex(created.key));
    expect(principal).toEqual({ api_key_id: created.id, project_id: project.id, project_name: 'keys-project' });
    const [row] = await db.sql<{ j: string }>`SELECT row_to_json(k)::text AS j FROM api_keys k WHERE id = ${created.id}`;
    expect(row!.j).not.toContain(created.key);
    expect(row!.j).not.toContain(created.key.slice(3));
  });

  it('create in human mode prints the key once', async () => {
    const project = await newProject('human-keys');
    const out = capture(false);
    await createKeyCommand(db, out, project.id);
    const match = /hr_[a-f0-9]{40}/.exec(out.text());
    expect(match).not.toBeNull();
    expect(out.text().split(match![0]).length - 1).toBe(1);
    expect(await findPrincipalByKeyHash(db.sql, sha256Hex(match![0]))).toBeDefined();
  });

  it('list shows keys without the plain key or its hash', async () => {
    const project = await newProject('listed-keys');
    const a = await newKey(project.id, 'a');
    const b = await newKey(project.id, 'b');
    for (const json of [true, false]) {
      const out = capture(json);
      await listKeysCommand(db, out);
      const text = out.text();
      for (const k of [a, b]) {
        expect(text).toContain(k.id);
        expect(text).not.toContain(k.key);
        expect(text).not.toContain(k.key.slice(3));
        expect(text).not.toContain(sha256Hex(k.key));
      }
    }
    const out = capture();
    await listKeysCommand(db, out, project.id);
    const list = (out.json_() as { data: { id: string; project_id: string; key_hint: string; revoked_at: string | null }[] }).data;
    expect(list.map((k) => k.id).sort()).toEqual([a.id, b.id].sort());
    for (const k of list) {
      expect(k.project_id).toBe(project.id);
      expect(k.revoked_at).toBeNull();
      expect(Object.keys(k)).not.toContain('key');
      expect(Object.keys(k)).not.toContain('key_hash');
    }
  });

  it('revoke stops the key from authenticating and shows it revoked', async () => {
    const project = await newProject('revoked-keys');
    const kept = await newKey(project.id);
    const revoked = await newKey(project.id);
    const out = capture();
    await revokeKeyCommand(db, out, revoked.id);
    expect(out.json_()).toEqual({ id: revoked.id, revoked_at: expect.any(String) });

    expect(await findPrincipalByKeyHash(db.sql, sha256Hex(revoked.key))).toBeUndefined();
    expect(await findPrincipalByKeyHash(db.sql, sha256Hex(kept.key))).toBeDefined();

    const list = capture();
    await listKeysCommand(db, list, project.id);
    const rows = (list.json_() as { data: { id: string; revoked_at: string | null }[] }).data;
    expect(rows.find((k) => k.id === revoked.id)?.revoked_at).toEqual(expect.any(String));
    expect(rows.find((k) => k.id === kept.id)?.revoked_at).toBeNull();

    // Revoking again is harmless and keeps it revoked.
    await revokeKeyCommand(db, capture(), revoked.id);
    expect(await findPrincipalByKeyHash(db.sql, sha256Hex(revoked.key))).toBeUndefined();
  });

  it('refuses an unknown or malformed project with AdminError, creating nothing', async () => {
    const [before] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys`;
    await expect(createKeyCommand(db, capture(), '00000000-0000-7000-8000-000000000000')).rejects.toBeInstanceOf(AdminError);
    await expect(createKeyCommand(db, capture(), 'not-a-project')).rejects.toBeInstanceOf(AdminError);
    const [after] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys`;
    expect(after!.n).toBe(before!.n);
  });

  it('refuses to revoke an unknown or malformed key id with AdminError', async () => {
    await expect(revokeKeyCommand(db, capture(), '00000000-0000-7000-8000-000000000000')).rejects.toBeInstanceOf(AdminError);
    await expect(revokeKeyCommand(db, capture(), 'nope')).rejects.toBeInstanceOf(AdminError);
  });
});
