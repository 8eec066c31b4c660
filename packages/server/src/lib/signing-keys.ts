import { generateSigningSecret, keyHint, newSigningKeyId, type RotateSecretOut } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { expireCurrentSigningKeys, insertSigningKey, type SigningKeyRow } from '../db/signing-keys.js';
import type { SecretBox } from '../security/crypto.js';

/**
 * How long a rotated-out signing key keeps signing beside the new one: time for receivers to take
 * the new secret.
 */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** A new signing key of `ownerId`, stored sealed: the secret in clear exists only in this answer. */
export async function createSigningKey(tx: Sql, secretBox: SecretBox, ownerId: string): Promise<{ key: SigningKeyRow; secret: string }> {
  const secret = generateSigningSecret();
  const key = await insertSigningKey(tx, {
    id: newSigningKeyId(),
    ownerId,
    secretEncrypted: secretBox.encrypt(secret),
    keyHint: keyHint(secret),
  });
  return { key, secret };
}

/**
 * Rotates the signing key of the endpoint that `lockOwner` row-locks: its current keys keep signing
 * for ROTATION_OVERLAP_MS beside a new one. The row lock keeps two concurrent rotations from both
 * leaving a "current" key. Undefined when `lockOwner` finds no live endpoint.
 */
export async function rotateSigningKey(
  sql: Sql,
  secretBox: SecretBox,
  lockOwner: (tx: Sql) => Promise<{ id: string } | undefined>,
): Promise<{ ownerId: string; rotated: RotateSecretOut } | undefined> {
  const previousKeyExpiresAt = new Date(Date.now() + ROTATION_OVERLAP_MS);
  return sql.begin(async (tx) => {
    const owner = await lockOwner(tx);
    if (!owner) return undefined;
    await expireCurrentSigningKeys(tx, owner.id, previousKeyExpiresAt);
    const { key, secret } = await createSigningKey(tx, secretBox, owner.id);
    return {
      ownerId: owner.id,
      rotated: {
        signing_key_id: key.id,
        signing_secret: secret,
        key_hint: key.key_hint,
        previous_key_expires_at: previousKeyExpiresAt.toISOString(),
      },
    };
  });
}
