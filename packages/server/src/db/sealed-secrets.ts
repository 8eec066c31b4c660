import type { Sql } from './database.js';

/**
 * Every column that holds a secret sealed with the encryption key (security/crypto.ts SecretBox).
 * A new one must be added here, or a key rotation would leave it sealed under the old key.
 */
export const SEALED_COLUMNS = [
  'signing_keys.secret_encrypted',
  'inbound_endpoints.secret_token_encrypted',
  'inbound_endpoints.hmac_secret_encrypted',
] as const;
export type SealedColumn = (typeof SEALED_COLUMNS)[number];

export interface SealedSecret {
  /** The row's key, as text: the cursor of the next page. */
  id: string;
  sealed: string;
}

/** Before the first of a column's pages: below any id of its table. */
export const FIRST_PAGE = '';

/** Which of the tables (and columns) involved exist: read before the migrations, on a database of any age. */
export async function keyCheckTables(sql: Sql): Promise<{ check: boolean; rotation: boolean; signingKeys: boolean; inboundEndpoints: boolean }> {
  const [row] = await sql<{ check_table: boolean; rotation: boolean; signing_keys: boolean; inbound_endpoints: boolean }>`
    SELECT to_regclass('encryption_key_check') IS NOT NULL AS check_table,
           EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('encryption_key_check')
                   AND attname = 'rotating_check_value' AND NOT attisdropped) AS rotation,
           to_regclass('signing_keys') IS NOT NULL AS signing_keys,
           to_regclass('inbound_endpoints') IS NOT NULL AS inbound_endpoints`;
  return { check: row!.check_table, rotation: row!.rotation, signingKeys: row!.signing_keys, inboundEndpoints: row!.inbound_endpoints };
}

/** The stored check value, or undefined when none was written yet. */
export async function readKeyCheck(sql: Sql): Promise<string | undefined> {
  const [row] = await sql<{ check_value: string }>`SELECT check_value FROM encryption_key_check`;
  return row?.check_value;
}

/** The check value of the key an unfinished rotation seals the secrets under, or undefined when none runs. */
export async function readRotatingKeyCheck(sql: Sql): Promise<string | undefined> {
  const [row] = await sql<{ rotating_check_value: string | null }>`SELECT rotating_check_value FROM encryption_key_check`;
  return row?.rotating_check_value ?? undefined;
}

/** Records that a rotation to the key of `checkValue` has begun (the check value row exists by then). */
export async function beginKeyRotation(sql: Sql, checkValue: string): Promise<void> {
  await sql`UPDATE encryption_key_check SET rotating_check_value = ${checkValue}, updated_at = now()`;
}

/** Stores the check value unless one is stored already (another process may have been first). */
export async function insertKeyCheck(sql: Sql, checkValue: string): Promise<void> {
  await sql`INSERT INTO encryption_key_check (check_value) VALUES (${checkValue}) ON CONFLICT (singleton) DO NOTHING`;
}

/** Stores the check value in place of any stored one, which ends a rotation. */
export async function replaceKeyCheck(sql: Sql, checkValue: string): Promise<void> {
  await sql`
    INSERT INTO encryption_key_check (check_value) VALUES (${checkValue})
    ON CONFLICT (singleton) DO UPDATE SET check_value = EXCLUDED.check_value, rotating_check_value = NULL, updated_at = now()`;
}

/** The most recently written secret of a column, if it holds any. */
export async function newestSealedSecret(sql: Sql, column: SealedColumn): Promise<string | undefined> {
  let rows: { sealed: string }[];
  switch (column) {
    case 'signing_keys.secret_encrypted':
      rows = await sql`SELECT secret_encrypted AS sealed FROM signing_keys ORDER BY created_at DESC, id DESC LIMIT 1`;
      break;
    case 'inbound_endpoints.secret_token_encrypted':
      rows = await sql`SELECT secret_token_encrypted AS sealed FROM inbound_endpoints ORDER BY seq DESC LIMIT 1`;
      break;
    case 'inbound_endpoints.hmac_secret_encrypted':
      rows = await sql`
        SELECT hmac_secret_encrypted AS sealed FROM inbound_endpoints
        WHERE hmac_secret_encrypted IS NOT NULL ORDER BY updated_at DESC, seq DESC LIMIT 1`;
      break;
  }
  return rows[0]?.sealed;
}

/** Up to `limit` secrets of a column whose row key comes after `after` (FIRST_PAGE to begin), soft-deleted rows included. */
export async function sealedSecretsPage(sql: Sql, column: SealedColumn, after: string, limit: number): Promise<SealedSecret[]> {
  switch (column) {
    case 'signing_keys.secret_encrypted':
      return sql<SealedSecret>`
        SELECT id, secret_encrypted AS sealed FROM signing_keys
        WHERE id > ${after} ORDER BY id LIMIT ${limit}`;
    case 'inbound_endpoints.secret_token_encrypted':
      return sql<SealedSecret>`
        SELECT seq::text AS id, secret_token_encrypted AS sealed FROM inbound_endpoints
        WHERE seq > ${after === FIRST_PAGE ? '0' : after}::bigint ORDER BY seq LIMIT ${limit}`;
    case 'inbound_endpoints.hmac_secret_encrypted':
      return sql<SealedSecret>`
        SELECT seq::text AS id, hmac_secret_encrypted AS sealed FROM inbound_endpoints
        WHERE seq > ${after === FIRST_PAGE ? '0' : after}::bigint AND hmac_secret_encrypted IS NOT NULL
        ORDER BY seq LIMIT ${limit}`;
  }
}

/**
 * Replaces one sealed secret if it is still `from`: a secret changed meanwhile (a new HMAC secret
 * set through the API) is left as it now is. True when replaced.
 */
export async function replaceSealedSecret(sql: Sql, column: SealedColumn, id: string, from: string, to: string): Promise<boolean> {
  let rows: unknown[];
  switch (column) {
    case 'signing_keys.secret_encrypted':
      rows = await sql`
        UPDATE signing_keys SET secret_encrypted = ${to}
        WHERE id = ${id} AND secret_encrypted = ${from} RETURNING 1 AS replaced`;
      break;
    case 'inbound_endpoints.secret_token_encrypted':
      rows = await sql`
        UPDATE inbound_endpoints SET secret_token_encrypted = ${to}
        WHERE seq = ${id}::bigint AND secret_token_encrypted = ${from} RETURNING 1 AS replaced`;
      break;
    case 'inbound_endpoints.hmac_secret_encrypted':
      rows = await sql`
        UPDATE inbound_endpoints SET hmac_secret_encrypted = ${to}
        WHERE seq = ${id}::bigint AND hmac_secret_encrypted = ${from} RETURNING 1 AS replaced`;
      break;
  }
  return rows.length === 1;
}
