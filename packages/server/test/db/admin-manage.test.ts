import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newUuidv7 } from '@hookrelay/shared';
import { AdminError, createKeyCommand, createProjectCommand, listKeysCommand, listProjectsCommand, type AdminOutput } from '../../src/admin/commands.js';
import { deleteProjectCommand, parseGrace, renameProjectCommand, rotateKeyCommand } from '../../src/admin/manage.js';
import type { Database } from '../../src/db/database.js';
import { findActiveApiKeyIds, findPrincipalByKeyHash } from '../../src/db/api-keys.js';
import { insertInboundEndpoint } from '../../src/db/inbound-endpoints.js';
import { sha256Hex } from '../../src/security/crypto.js';
import { backend, createPostgresDatabaseUrl, createTestDatabase } from '../helpers/database.js';
import { SERVER_MAIN } from '../helpers/process.js';

/**
 * The admin commands an operator meets after the first week, as the CLI's are: keys rotate (a new
 * key now, the old one revoked after a grace period), projects rename|delete, lists as `{ data }`,
 * and failures with the CLI's codes and exit codes, one JSON line under --json.
 */

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.close();
});

function capture(json = true): AdminOutput & { value: () => any; text: () => string } {
  let written = '';
  return {
    json,
    write: (text) => (written += text),
    text: () => written,
    value: () => {
      const lines = written.split('\n').filter((line) => line !== '');
      expect(lines).toHaveLength(1);
      return JSON.parse(lines[0]!);
    },
  };
}

async function project(name: string): Promise<string> {
  const out = capture();
  await createProjectCommand(db, out, name);
  return out.value().id;
}

async function key(projectId: string, name = 'ci'): Promise<{ id: string; key: string }> {
  const out = capture();
  await createKeyCommand(db, out, projectId, name);
  return out.value();
}

const authenticates = async (plain: string) => (await findPrincipalByKeyHash(db.sql, sha256Hex(plain))) !== undefined;

async function adminError(run: Promise<unknown>): Promise<AdminError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AdminError);
  return error as AdminError;
}

describe('keys rotate', () => {
  it('makes a new key for the same project and name at once, and the old one stops working after the grace period', async () => {
    const projectId = await project('rotating');
    const old = await key(projectId, 'deploy');
    const out = capture();
    const before = Date.now();
    await rotateKeyCommand(db, out, old.id, '2s');
    const rotated = out.value();
    expect(rotated).toEqual({
      id: expect.any(String),
      project_id: projectId,
      name: 'deploy',
      key: expect.stringMatching(/^hr_[0-9a-f]{40}$/),
      created_at: expect.any(String),
      replaces: { id: old.id, revoked_at: expect.any(String) },
    });
    const revokeAt = Date.parse(rotated.replaces.revoked_at);
    expect(revokeAt - before).toBeGreaterThanOrEqual(1900);
    expect(revokeAt - before).toBeLessThan(5000);
    expect(await authenticates(rotated.key)).toBe(true);
    expect(await authenticates(old.key)).toBe(true);
    expect([...(await findActiveApiKeyIds(db.sql, [old.id]))]).toEqual([old.id]);
    const list = capture();
    await listKeysCommand(db, list, projectId);
    expect(list.value().data.find((k: { id: string }) => k.id === old.id).revoked_at).toBe(rotated.replaces.revoked_at);

    const deadline = Date.now() + 10_000;
    while (await authenticates(old.key)) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(Date.now()).toBeGreaterThanOrEqual(revokeAt - 50);
    expect(await findActiveApiKeyIds(db.sql, [old.id])).toEqual(new Set());
    expect(await authenticates(rotated.key)).toBe(true);
    // A revoked key cannot be rotated again.
    expect((await adminError(rotateKeyCommand(db, capture(), old.id, '1h'))).message).toMatch(/is revoked/);
  });

  it('with --grace 0 revokes the old key now; in human output the new key is shown once', async () => {
    const projectId = await project('rotating-now');
    const old = await key(projectId);
    const out = capture(false);
    await rotateKeyCommand(db, out, old.id, '0');
    const [shown] = out.text().match(/hr_[0-9a-f]{40}/g) ?? [];
    expect(out.text().match(/hr_[0-9a-f]{40}/g)).toHaveLength(1);
    expect(out.text()).toContain(`in place of ${old.id}, which is revoked now`);
    expect(await authenticates(shown!)).toBe(true);
    expect(await authenticates(old.key)).toBe(false);
  });

  it('refuses an unknown key (NOT_FOUND, exit 4), a malformed id and a bad --grace (exit 2), changing nothing', async () => {
    const [before] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys`;
    const unknown = await adminError(rotateKeyCommand(db, capture(), '00000000-0000-7000-8000-000000000000', '1h'));
    expect([unknown.code, unknown.exitCode]).toEqual(['NOT_FOUND', 4]);
    const malformed = await adminError(rotateKeyCommand(db, capture(), 'nope', '1h'));
    expect([malformed.code, malformed.exitCode]).toEqual(['INVALID_ARGUMENTS', 2]);
    const projectId = await project('rotating-bad-grace');
    const old = await key(projectId);
    for (const grace of ['', '5', '-1h', '1w', '31d', '1.5h', '1h30m']) {
      const bad = await adminError(rotateKeyCommand(db, capture(), old.id, grace));
      expect(bad.code, grace).toBe('INVALID_ARGUMENTS');
    }
    const [after] = await db.sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys`;
    expect(after!.n).toBe(before!.n + 1);
    expect(await authenticates(old.key)).toBe(true);
    expect([parseGrace('0'), parseGrace('90s'), parseGrace('30m'), parseGrace('24h'), parseGrace('30d')]).toEqual([0, 90, 1800, 86_400, 2_592_000]);
  });
});

describe('projects rename and delete', () => {
  it('rename: the new name is listed; a taken name is DUPLICATE_NAME (exit 5), an unknown project NOT_FOUND (exit 4)', async () => {
    const id = await project('old-name');
    await project('taken-name');
    const out = capture();
    await renameProjectCommand(db, out, id, ' new-name ');
    expect(out.value()).toEqual({ id, name: 'new-name', created_at: expect.any(String) });
    const taken = await adminError(renameProjectCommand(db, capture(), id, 'taken-name'));
    expect([taken.code, taken.exitCode]).toEqual(['DUPLICATE_NAME', 5]);
    const unknown = await adminError(renameProjectCommand(db, capture(), '00000000-0000-7000-8000-000000000000', 'x'));
    expect([unknown.code, unknown.exitCode]).toEqual(['NOT_FOUND', 4]);
    const list = capture();
    await listProjectsCommand(db, list);
    expect(list.value().data.find((p: { id: string }) => p.id === id).name).toBe('new-name');
  });

  it('delete needs --force; then its keys stop working, its endpoints are deleted, and its name is free', async () => {
    const id = await project('doomed');
    const k = await key(id);
    const endpoint = await insertInboundEndpoint(db.sql, {
      id: newUuidv7(),
      projectId: id,
      name: 'doomed-inbound',
      description: '',
      mode: 'cli',
      url: '',
      secretTokenEncrypted: 'sealed',
      secretTokenHash: sha256Hex(`t-${id}`),
      verifyStaticToken: false,
      staticTokenHeaderName: null,
      staticTokenQueryParam: null,
      staticTokenHash: null,
      verifyHmac: false,
      hmacScheme: 'hex',
      hmacHeaderName: null,
      hmacSecretEncrypted: null,
      timestampHeaderName: null,
      timestampToleranceSeconds: 300,
      verifyIpAllowlist: false,
      allowedCidrs: [],
      idempotencyHeaderNames: [],
      ingestResponseCode: 200,
      signingEnabled: false,
      expiresAt: null,
      eventTypeSource: null,
      eventTypePath: null,
      maxBodyBytes: null,
      retentionDays: null,
      resignLate: true,
    });
    const unconfirmed = await adminError(deleteProjectCommand(db, capture(), id, false));
    expect([unconfirmed.code, unconfirmed.exitCode]).toEqual(['CONFIRMATION_REQUIRED', 2]);
    expect(await authenticates(k.key)).toBe(true);

    const out = capture();
    await deleteProjectCommand(db, out, id, true);
    expect(out.value()).toEqual({
      id,
      name: 'doomed',
      deleted_at: expect.any(String),
      revoked_keys: 1,
      deleted_endpoints: { endpoints: 0, inbound_endpoints: 1, pull_endpoints: 0 },
    });
    expect(await authenticates(k.key)).toBe(false);
    const [row] = await db.sql<{ deleted: boolean }>`SELECT deleted_at IS NOT NULL AS deleted FROM inbound_endpoints WHERE id = ${endpoint.id}`;
    expect(row!.deleted).toBe(true);
    const list = capture();
    await listProjectsCommand(db, list);
    expect(list.value().data.map((p: { id: string }) => p.id)).not.toContain(id);
    await project('doomed');
    const again = await adminError(deleteProjectCommand(db, capture(), id, true));
    expect([again.code, again.exitCode]).toEqual(['NOT_FOUND', 4]);
    const keyOfDeleted = await adminError(createKeyCommand(db, capture(), id));
    expect(keyOfDeleted.code).toBe('NOT_FOUND');
  });
});

describe('the hookrelay-server process', () => {
  it('exits 4 for an unknown key or project, and under --json writes its failure as one JSON line on stderr and nothing on stdout', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hookrelay-admin-'));
    try {
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: dir,
        HOOKRELAY_DATA_DIR: path.join(dir, 'data'),
        ...(backend() === 'postgres' ? { DATABASE_URL: await createPostgresDatabaseUrl() } : {}),
      };
      const run = (args: string[]) => spawnSync(process.execPath, [SERVER_MAIN, ...args], { env, encoding: 'utf8', timeout: 60_000 });
      const unknownKey = '00000000-0000-7000-8000-000000000000';
      const revoke = run(['keys', 'revoke', unknownKey, '--json']);
      expect(revoke.status, revoke.stderr).toBe(4);
      expect(revoke.stdout).toBe('');
      expect(revoke.stderr).toBe(
        `${JSON.stringify({ error: { code: 'NOT_FOUND', message: `no API key ${unknownKey}; list them with: hookrelay-server keys list`, request_id: null, status: null } })}\n`,
      );
      const human = run(['projects', 'rename', unknownKey, '--name', 'x']);
      expect(human.status).toBe(4);
      expect(human.stderr).toBe(`hookrelay-server: no project ${unknownKey}; list them with: hookrelay-server projects list\n`);
      const badFlag = run(['keys', 'list', '--bogus', '--json']);
      expect(badFlag.status).toBe(2);
      expect(JSON.parse(badFlag.stderr).error.code).toBe('INVALID_ARGUMENTS');
      expect(badFlag.stderr.trimEnd().split('\n')).toHaveLength(1);
      const config = run(['keys', 'list', '--json', '--port', 'nope']);
      expect(config.status).toBe(2);
      expect(JSON.parse(config.stderr).error).toMatchObject({ code: 'CONFIG_ERROR', message: expect.stringContaining('HOOKRELAY_PORT') });
      const list = run(['keys', 'list', '--json']);
      expect(list.status, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toEqual({ data: expect.any(Array) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
