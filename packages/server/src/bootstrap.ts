import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { keyHint, newApiKey } from '@hookrelay/shared';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { insertApiKey } from './db/api-keys.js';
import { countProjects, insertProject } from './db/projects.js';
import { advisoryXactLock } from './db/locks.js';
import { sha256Hex } from './security/crypto.js';

/** Serialises bootstrap across processes starting on the same empty database. */
const BOOTSTRAP_LOCK_KEY = 0x626f6f74; // "boot"

export const BOOTSTRAP_KEY_FILE = 'bootstrap-api-key';

export interface BootstrapResult {
  /** Set when a key was generated: the caller prints it once. */
  generatedKey?: string;
  /** Where the generated key was written; unset when it was not. */
  keyFile?: string;
  /** Why the generated key could not be written to its file (the key is in the database all the same). */
  keyFileError?: string;
  projectId?: string;
}

/**
 * Creates `default` project and a key on an empty database, so a new server is usable at once
 * (docs/operating.md, PostgreSQL). A generated key goes to the data dir's file; on PostgreSQL only
 * when the data dir was given, since its default is relative to the working directory. Once the
 * key is committed, nothing here throws: the caller prints the key whatever the file's fate.
 */
export async function bootstrapProject(db: Database, config: Config): Promise<BootstrapResult> {
  const created = await db.sql.begin(async (tx) => {
    await advisoryXactLock(tx, BOOTSTRAP_LOCK_KEY);
    if ((await countProjects(tx)) > 0) return undefined;
    const project = await insertProject(tx, 'default');
    const key = config.bootstrapApiKey ?? newApiKey();
    await insertApiKey(tx, { projectId: project.id, keyHash: sha256Hex(key), keyHint: keyHint(key), name: 'bootstrap' });
    return { projectId: project.id, key, generated: config.bootstrapApiKey === undefined };
  });
  if (!created) return {};
  if (!created.generated) return { projectId: created.projectId };
  const generated = { generatedKey: created.key, projectId: created.projectId };
  if (config.databaseUrl !== undefined && !config.dataDirGiven) return generated;
  const keyFile = path.join(config.dataDir, BOOTSTRAP_KEY_FILE);
  try {
    await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
    await writeFile(keyFile, `${created.key}\n`, { mode: 0o600 });
    await chmod(keyFile, 0o600);
  } catch (error) {
    return { ...generated, keyFileError: `${keyFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` };
  }
  return { ...generated, keyFile };
}
