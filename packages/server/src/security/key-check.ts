import { ConfigError } from '../errors.js';
import type { Sql } from '../db/database.js';
import { insertKeyCheck, keyCheckTables, newestSealedSecret, readKeyCheck, readRotatingKeyCheck, replaceKeyCheck, SEALED_COLUMNS } from '../db/sealed-secrets.js';
import { SecretBox, type EncryptionKeys } from './crypto.js';

/**
 * The encryption key check: a fixed text sealed under the key the database's secrets are sealed
 * with. A process whose key does not open it refuses to start, before it writes anything, rather
 * than starting and answering 500 to every request that needs a secret.
 */
const CHECK_PLAINTEXT = 'hookrelay.encryption-key-check.v1';

/** Which key opens the database's secrets; undefined when it has neither secrets nor a check value yet. */
export type SealedWith = 'current' | 'previous' | undefined;

export interface KeyCheck {
  sealedWith: SealedWith;
  /** The database holds a check value for these keys already: nothing to record. */
  recorded: boolean;
  /** The stored check value is for a key that sealed nothing still stored: a new one replaces it. */
  replace?: boolean;
}

export function secretBoxOf(keys: EncryptionKeys): SecretBox {
  return new SecretBox(keys.current, keys.previous === undefined ? [] : [keys.previous]);
}

/** A new check value for `keys.current`. */
export function keyCheckValue(keys: EncryptionKeys): string {
  return new SecretBox(keys.current).encrypt(CHECK_PLAINTEXT);
}

/** Which of the keys opens `sealed` (and, for a check value, finds the fixed text in it). */
function openedBy(box: SecretBox, sealed: string, expected?: string): 'current' | 'previous' | undefined {
  try {
    const opened = box.open(sealed);
    if (expected !== undefined && opened.plaintext !== expected) return undefined;
    return opened.current ? 'current' : 'previous';
  } catch {
    return undefined;
  }
}

/** The current key's origin, as the operator set it. */
function currentKeyName(keys: EncryptionKeys): string {
  return keys.fromKeyFile ? `the encryption key in ${keys.currentName} (HOOKRELAY_ENCRYPTION_KEY is unset)` : 'HOOKRELAY_ENCRYPTION_KEY';
}

/** The refusal, in the operator's terms: which keys were tried, where they came from, what to do. */
export function keyMismatchError(keys: EncryptionKeys, nothingChanged = true): ConfigError {
  const tail = nothingChanged ? ' Nothing was changed.' : '';
  if (keys.generated) {
    return new ConfigError(
      `${keys.keyFile} is missing, but this database holds secrets sealed with an encryption key: restore that file ` +
        `from a backup, or set HOOKRELAY_ENCRYPTION_KEY to the key they were sealed with.${tail}`,
    );
  }
  const current = currentKeyName(keys);
  const subject = keys.previousName === undefined ? `${current} does not open` : `neither ${current} nor ${keys.previousName} opens`;
  return new ConfigError(
    `${subject} this database's secrets: it is not the key they were sealed with. Start with that key ` +
      `(to change keys, see "Rotating the encryption key" in docs/operating.md).${tail}`,
  );
}

/**
 * The refusal of keys that open one side of an unfinished rotation only: the secrets already sealed
 * again, or those not yet, would answer 500.
 */
export function rotationIncompleteError(keys: EncryptionKeys): ConfigError {
  const tried = keys.previousName === undefined ? currentKeyName(keys) : `${currentKeyName(keys)} with ${keys.previousName}`;
  return new ConfigError(
    `${tried} opens only part of this database's secrets: \`hookrelay-server encryption rotate-key\` began sealing them again ` +
      'under a new key and did not finish. Start with both keys, the new one as HOOKRELAY_ENCRYPTION_KEY and the one it replaces ' +
      'as HOOKRELAY_PREVIOUS_ENCRYPTION_KEY (embedded, with the key in the data dir: both encryption-key and encryption-key.previous), ' +
      'then run the command again to finish (see "Rotating the encryption key" in docs/operating.md). Nothing was changed.',
  );
}

/**
 * Checks the keys against the database before anything is written, the migrations included: so it
 * reads a database of any age. Its check value decides, and during a rotation (or after one was cut
 * short) the check value of the key it seals under too; a database from before check values has
 * none, and then the newest secret of each sealed column stands for the key in use. Throws a
 * ConfigError when the keys do not open them all.
 */
export async function verifyEncryptionKeys(sql: Sql, keys: EncryptionKeys): Promise<KeyCheck> {
  const box = secretBoxOf(keys);
  const tables = await keyCheckTables(sql);
  const newest = async (): Promise<string[]> => {
    const found: string[] = [];
    for (const column of SEALED_COLUMNS) {
      if (!(column.startsWith('signing_keys.') ? tables.signingKeys : tables.inboundEndpoints)) continue;
      const sealed = await newestSealedSecret(sql, column);
      if (sealed !== undefined) found.push(sealed);
    }
    return found;
  };
  if (tables.check) {
    const checkValue = await readKeyCheck(sql);
    if (checkValue !== undefined) {
      const sealedWith = openedBy(box, checkValue, CHECK_PLAINTEXT);
      if (sealedWith !== undefined) {
        // During a rotation the secrets are sealed under two keys: these keys must open both.
        const rotating = tables.rotation ? await readRotatingKeyCheck(sql) : undefined;
        if (rotating !== undefined && openedBy(box, rotating, CHECK_PLAINTEXT) === undefined) throw rotationIncompleteError(keys);
        return { sealedWith, recorded: true };
      }
      // A data dir that lost its key file before it stored any secret loses nothing to a new key.
      if (keys.generated && (await newest()).length === 0) return { sealedWith: undefined, recorded: false, replace: true };
      throw keyMismatchError(keys);
    }
  }
  let sealedWith: SealedWith;
  for (const sealed of await newest()) {
    const by = openedBy(box, sealed);
    if (by === undefined) throw keyMismatchError(keys);
    if (by === 'previous' || sealedWith === undefined) sealedWith = by;
  }
  return { sealedWith, recorded: false };
}

/**
 * After the migrations: stores the check value when the database has none, sealed under the key its
 * secrets were found sealed with, and checks the value stored then, which is another process's
 * when two started at once on a database without one.
 */
export async function recordEncryptionKeys(sql: Sql, keys: EncryptionKeys, check: KeyCheck): Promise<KeyCheck> {
  if (check.recorded) return check;
  const sealingKeys = check.sealedWith === 'previous' && keys.previous !== undefined ? { ...keys, current: keys.previous } : keys;
  if (check.replace === true) await replaceKeyCheck(sql, keyCheckValue(sealingKeys));
  else await insertKeyCheck(sql, keyCheckValue(sealingKeys));
  const stored = await readKeyCheck(sql);
  const sealedWith = stored === undefined ? undefined : openedBy(secretBoxOf(keys), stored, CHECK_PLAINTEXT);
  if (sealedWith === undefined) throw keyMismatchError(keys, false);
  return { sealedWith, recorded: true };
}
