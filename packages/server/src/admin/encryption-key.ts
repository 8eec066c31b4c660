import path from 'node:path';
import type { Config } from '../config.js';
import type { Sql } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import {
  beginKeyRotation,
  FIRST_PAGE,
  replaceKeyCheck,
  replaceSealedSecret,
  SEALED_COLUMNS,
  sealedSecretsPage,
  type SealedColumn,
} from '../db/sealed-secrets.js';
import {
  finishKeyFileRotation,
  loadEncryptionKeys,
  openDatabase,
  PREVIOUS_ENCRYPTION_KEY_FILE,
  rotateKeyFile,
} from '../runtime.js';
import type { EncryptionKeys, SecretBox } from '../security/crypto.js';
import { keyCheckValue, recordEncryptionKeys, secretBoxOf, verifyEncryptionKeys } from '../security/key-check.js';
import { AdminError, type AdminOutput } from './commands.js';

/** Secrets read and sealed again per transaction. */
const BATCH_SIZE = 500;

/**
 * Passes over every secret until one finds none left to seal again: a secret written under the
 * previous key during a pass (by a process still running with it as its current key) is caught by
 * the next. More passes than this means such a process keeps writing.
 */
const MAX_PASSES = 5;

export interface ResealResult {
  /** Secrets sealed again under the current key, by column. */
  resealed: Record<SealedColumn, number>;
  /** Secrets in the database, seen by the last pass. */
  secrets: number;
  /** Secrets that no key opens, seen by the last pass. */
  unreadable: { column: SealedColumn; id: string }[];
}

/**
 * One pass over every sealed secret: those a previous key opens are sealed again under the current
 * one. Returns how many it found under a previous key, replaced or changed meanwhile (which the next
 * pass reads again).
 */
async function resealPass(sql: Sql, box: SecretBox, result: ResealResult): Promise<number> {
  let found = 0;
  result.secrets = 0;
  result.unreadable = [];
  for (const column of SEALED_COLUMNS) {
    for (let after = FIRST_PAGE; ; ) {
      const page = await sealedSecretsPage(sql, column, after, BATCH_SIZE);
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      result.secrets += page.length;
      const updates: { id: string; from: string; to: string }[] = [];
      for (const row of page) {
        try {
          const to = box.reseal(row.sealed);
          if (to !== undefined) updates.push({ id: row.id, from: row.sealed, to });
        } catch {
          result.unreadable.push({ column, id: row.id });
        }
      }
      if (updates.length === 0) continue;
      found += updates.length;
      const replaced = await sql.begin(async (tx) => {
        let n = 0;
        for (const update of updates) if (await replaceSealedSecret(tx, column, update.id, update.from, update.to)) n++;
        return n;
      });
      result.resealed[column] += replaced;
    }
  }
  return found;
}

/** Seals every secret that a previous key opens again under the current key, in batches. */
export async function resealSecrets(sql: Sql, box: SecretBox): Promise<ResealResult> {
  const result: ResealResult = {
    resealed: Object.fromEntries(SEALED_COLUMNS.map((c) => [c, 0])) as Record<SealedColumn, number>,
    secrets: 0,
    unreadable: [],
  };
  for (let pass = 1; ; pass++) {
    if ((await resealPass(sql, box, result)) === 0) return result;
    if (pass === MAX_PASSES) {
      throw new AdminError(
        `secrets are still being written under the previous key after ${MAX_PASSES} passes: some process still runs with it ` +
          'as HOOKRELAY_ENCRYPTION_KEY; give every process the new key, then run this command again',
      );
    }
  }
}

/**
 * `hookrelay-server encryption rotate-key`: seals every stored secret again under the current key
 * and then rewrites the key check, after which the previous key is no longer needed. With the key
 * in the data dir's key file (embedded, HOOKRELAY_ENCRYPTION_KEY unset) it first makes the new key
 * itself; a rotation that was cut short is finished by running the command again.
 */
export async function rotateEncryptionKeyCommand(config: Config, out: AdminOutput, holder: string): Promise<void> {
  let keys: EncryptionKeys = await loadEncryptionKeys(config);
  if (keys.generated) {
    throw new AdminError(`there is no encryption key to rotate: ${keys.keyFile} does not exist and HOOKRELAY_ENCRYPTION_KEY is unset`);
  }
  // Cut short between its two file writes, a rotation of the key file leaves the same key in both.
  if (keys.fromKeyFile && keys.previous?.equals(keys.current)) keys = { ...keys, previous: undefined, previousName: undefined };
  if (keys.previous === undefined && !keys.fromKeyFile) {
    throw new AdminError(
      'HOOKRELAY_PREVIOUS_ENCRYPTION_KEY is unset: set HOOKRELAY_ENCRYPTION_KEY to the new key and HOOKRELAY_PREVIOUS_ENCRYPTION_KEY ' +
        'to the key it replaces, in every process, then run this command (see "Rotating the encryption key" in docs/operating.md)',
    );
  }
  const db = await openDatabase(config, holder);
  try {
    // The keys must open what is stored before anything is written.
    const check = await verifyEncryptionKeys(db.sql, keys);
    await migrate(db);
    await recordEncryptionKeys(db.sql, keys, check);
    const newKeyFile = keys.previous === undefined;
    if (newKeyFile) keys = await rotateKeyFile(config, keys);
    // Before the first secret moves: from here until the check value is rewritten, a process must
    // hold both keys to start (security/key-check.ts).
    await beginKeyRotation(db.sql, keyCheckValue(keys));
    const result = await resealSecrets(db.sql, secretBoxOf(keys));
    if (result.unreadable.length > 0) {
      const listed = result.unreadable.slice(0, 10).map((u) => `${u.column} of row ${u.id}`).join(', ');
      throw new AdminError(
        `${result.unreadable.length} of ${result.secrets} secrets open with neither key (${listed}${result.unreadable.length > 10 ? ', …' : ''}); ` +
          'they were sealed under some other key. The others are sealed under the current key now; the key check is left as it was, ' +
          'so the previous key stays needed',
      );
    }
    await replaceKeyCheck(db.sql, keyCheckValue(keys));
    if (keys.fromKeyFile && keys.previousName === path.join(config.dataDir, PREVIOUS_ENCRYPTION_KEY_FILE)) await finishKeyFileRotation(config);
    const resealed = Object.values(result.resealed).reduce((sum, n) => sum + n, 0);
    const value = { resealed, secrets: result.secrets, columns: result.resealed, key_file: keys.fromKeyFile ? keys.keyFile : null };
    const human = keys.fromKeyFile
      ? `${newKeyFile ? 'a new encryption key is' : 'the encryption key is'} in ${keys.keyFile}; ${resealed} of ${result.secrets} secrets sealed again under it.\n` +
        'Back up that file now: the old key no longer opens anything.\n'
      : `${resealed} of ${result.secrets} secrets sealed again under HOOKRELAY_ENCRYPTION_KEY; every secret opens with it alone now.\n` +
        'Remove HOOKRELAY_PREVIOUS_ENCRYPTION_KEY from every process.\n';
    out.write(out.json ? `${JSON.stringify(value)}\n` : human);
  } finally {
    await db.close();
  }
}
