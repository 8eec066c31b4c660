import type { Sql } from './database.js';

export interface SigningKeyRow {
  id: string;
  owner_id: string;
  secret_encrypted: string;
  key_hint: string;
  created_at: Date;
  expires_at: Date | null;
}

export async function insertSigningKey(
  sql: Sql,
  input: { id: string; ownerId: string; secretEncrypted: string; keyHint: string },
): Promise<SigningKeyRow> {
  const [row] = await sql<SigningKeyRow>`
    INSERT INTO signing_keys (id, owner_id, secret_encrypted, key_hint)
    VALUES (${input.id}, ${input.ownerId}, ${input.secretEncrypted}, ${input.keyHint})
    RETURNING id, owner_id, secret_encrypted, key_hint, created_at, expires_at`;
  return row!;
}

/** Keys that sign now: the current one and any previous one still inside its rotation window. */
export async function listActiveSigningKeys(sql: Sql, ownerId: string, now: Date = new Date()): Promise<SigningKeyRow[]> {
  return sql<SigningKeyRow>`
    SELECT id, owner_id, secret_encrypted, key_hint, created_at, expires_at
    FROM signing_keys
    WHERE owner_id = ${ownerId} AND (expires_at IS NULL OR expires_at > ${now})
    ORDER BY created_at DESC, id DESC`;
}

/** Starts the rotation window of every key of the owner that has none yet. */
export async function expireCurrentSigningKeys(sql: Sql, ownerId: string, expiresAt: Date): Promise<void> {
  await sql`UPDATE signing_keys SET expires_at = ${expiresAt} WHERE owner_id = ${ownerId} AND expires_at IS NULL`;
}
