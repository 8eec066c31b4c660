import { newUuidv7 } from '@hookrelay/shared';
import type { Sql } from './database.js';
import { API_KEY_REVOKED_CHANNEL } from './channels.js';
import { notifyOnCommit } from './notify.js';

export interface ApiKeyRow {
  id: string;
  project_id: string;
  key_hint: string;
  name: string;
  created_at: Date;
  revoked_at: Date | null;
}

export interface ApiKeyPrincipal {
  api_key_id: string;
  project_id: string;
  project_name: string;
}

export async function insertApiKey(
  sql: Sql,
  input: { projectId: string; keyHash: string; keyHint: string; name?: string },
): Promise<ApiKeyRow> {
  const [row] = await sql<ApiKeyRow>`
    INSERT INTO api_keys (id, project_id, key_hash, key_hint, name)
    VALUES (${newUuidv7()}, ${input.projectId}, ${input.keyHash}, ${input.keyHint}, ${input.name ?? ''})
    RETURNING id, project_id, key_hint, name, created_at, revoked_at`;
  return row!;
}

/** The project behind a key hash, or undefined when the key is unknown or revoked. */
export async function findPrincipalByKeyHash(sql: Sql, keyHash: string): Promise<ApiKeyPrincipal | undefined> {
  const [row] = await sql<ApiKeyPrincipal>`
    SELECT k.id AS api_key_id, p.id AS project_id, p.name AS project_name
    FROM api_keys k JOIN projects p ON p.id = k.project_id
    WHERE k.key_hash = ${keyHash} AND (k.revoked_at IS NULL OR k.revoked_at > now()) AND p.deleted_at IS NULL`;
  return row;
}

export async function listApiKeys(sql: Sql, projectId?: string): Promise<ApiKeyRow[]> {
  const filter = projectId === undefined ? sql.fragment`` : sql.fragment`WHERE project_id = ${projectId}`;
  return sql<ApiKeyRow>`
    SELECT id, project_id, key_hint, name, created_at, revoked_at FROM api_keys ${filter} ORDER BY id`;
}

/**
 * Revokes a key and announces it on API_KEY_REVOKED_CHANNEL when that commits; undefined when no
 * such key exists. Revoking twice keeps the first time (and announces again, which is harmless); a
 * revocation scheduled for later (`keys rotate`) is brought forward to now.
 */
export async function revokeApiKey(sql: Sql, id: string): Promise<ApiKeyRow | undefined> {
  return sql.begin(async (tx) => {
    const [row] = await tx<ApiKeyRow>`
      UPDATE api_keys SET revoked_at = least(coalesce(revoked_at, now()), now()) WHERE id = ${id}
      RETURNING id, project_id, key_hint, name, created_at, revoked_at`;
    if (row) await notifyOnCommit(tx, API_KEY_REVOKED_CHANNEL, row.id);
    return row;
  });
}

/**
 * A key's revocation at `at`, later than now (`keys rotate`'s grace period): the key authenticates
 * until then, and the sockets' periodic key check (stream/sockets.ts) closes its sockets after. An
 * earlier revocation stays. Undefined when no such key exists.
 */
export async function scheduleApiKeyRevocation(sql: Sql, id: string, at: Date): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow>`
    UPDATE api_keys SET revoked_at = least(coalesce(revoked_at, ${at}::timestamptz), ${at}::timestamptz) WHERE id = ${id}
    RETURNING id, project_id, key_hint, name, created_at, revoked_at`;
  return row;
}

/** A key by id, revoked or not. */
export async function findApiKey(sql: Sql, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow>`SELECT id, project_id, key_hint, name, created_at, revoked_at FROM api_keys WHERE id = ${id}`;
  return row;
}

/** Which of `ids` still authenticate: the key exists, is not revoked (or not yet) and its project is not deleted. */
export async function findActiveApiKeyIds(sql: Sql, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql<{ id: string }>`
    SELECT k.id FROM api_keys k JOIN projects p ON p.id = k.project_id
    WHERE k.id = ANY(${[...ids]}::uuid[]) AND (k.revoked_at IS NULL OR k.revoked_at > now()) AND p.deleted_at IS NULL`;
  return new Set(rows.map((row) => row.id));
}

/** The project behind a key id, or undefined when the key is unknown, revoked or of another project. */
export async function findPrincipalByKeyId(sql: Sql, apiKeyId: string, projectId: string): Promise<ApiKeyPrincipal | undefined> {
  const [row] = await sql<ApiKeyPrincipal>`
    SELECT k.id AS api_key_id, p.id AS project_id, p.name AS project_name
    FROM api_keys k JOIN projects p ON p.id = k.project_id
    WHERE k.id = ${apiKeyId} AND k.project_id = ${projectId} AND (k.revoked_at IS NULL OR k.revoked_at > now()) AND p.deleted_at IS NULL`;
  return row;
}
