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
  keyFile?: string;
  projectId?: string;
}

/**
 * Creates `default` project and a key on an empty database, so a new server is usable at once
 * (docs/operating.md, PostgreSQL).
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
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const keyFile = path.join(config.dataDir, BOOTSTRAP_KEY_FILE);
  await writeFile(keyFile, `${created.key}\n`, { mode: 0o600 });
  await chmod(keyFile, 0o600);
  return { generatedKey: created.key, keyFile, projectId: created.projectId };
}
