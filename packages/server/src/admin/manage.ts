import { keyHint, newApiKey } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import { findApiKey, insertApiKey, revokeApiKey, scheduleApiKeyRevocation } from '../db/api-keys.js';
import { isUniqueViolation } from '../db/errors.js';
import { deleteProject, findProject, renameProject } from '../db/projects.js';
import { sha256Hex } from '../security/crypto.js';
import { AdminError, emit, type AdminOutput } from './commands.js';

/** How long `keys rotate` leaves the old key working by default: a day to deploy the new one. */
export const DEFAULT_ROTATION_GRACE = '24h';
const MAX_GRACE_SECONDS = 30 * 24 * 3600;
const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `--grace`: `0`, or a whole number of s, m, h or d, at most 30 days; seconds. */
export function parseGrace(text: string): number {
  const match = /^(\d{1,7})([smhd])?$/.exec(text);
  const seconds = match === null || (match[2] === undefined && match[1] !== '0') ? undefined : Number(match[1]) * (UNIT_SECONDS[match[2] ?? 's'] ?? 1);
  if (seconds === undefined || seconds > MAX_GRACE_SECONDS) {
    throw new AdminError(`--grace must be 0 or a duration such as 90s, 30m, 24h or 7d, at most 30d (got ${JSON.stringify(text)})`, 'INVALID_ARGUMENTS');
  }
  return seconds;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkId(id: string, what: string, list: string): void {
  if (!UUID.test(id)) throw new AdminError(`${JSON.stringify(id)} is not ${what} id (a UUID); list them with: hookrelay-server ${list}`, 'INVALID_ARGUMENTS');
}

/**
 * `keys rotate ID`: a new key for the old one's project and name, shown once; the old key keeps
 * working for the grace period and is revoked then (at once with `--grace 0`, announced like
 * `keys revoke`).
 */
export async function rotateKeyCommand(db: Database, out: AdminOutput, id: string, grace: string): Promise<void> {
  checkId(id, 'an API key', 'keys list');
  const graceSeconds = parseGrace(grace);
  const old = await findApiKey(db.sql, id);
  if (!old) throw new AdminError(`no API key ${id}; list them with: hookrelay-server keys list`, 'NOT_FOUND');
  if (old.revoked_at !== null && old.revoked_at.getTime() <= Date.now()) {
    throw new AdminError(`API key ${id} is revoked: create a new one with hookrelay-server keys create --project ${old.project_id}`);
  }
  if (!(await findProject(db.sql, old.project_id))) throw new AdminError(`API key ${id} belongs to a deleted project`, 'NOT_FOUND');
  const key = newApiKey();
  // The new key first: a failure between the two leaves both keys working, never neither.
  const row = await insertApiKey(db.sql, { projectId: old.project_id, keyHash: sha256Hex(key), keyHint: keyHint(key), name: old.name });
  const revoked = graceSeconds === 0 ? await revokeApiKey(db.sql, id) : await scheduleApiKeyRevocation(db.sql, id, new Date(Date.now() + graceSeconds * 1000));
  const revokedAt = revoked!.revoked_at!.toISOString();
  const value = {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    key,
    created_at: row.created_at.toISOString(),
    replaces: { id, revoked_at: revokedAt },
  };
  const when = graceSeconds === 0 ? 'now' : `at ${revokedAt}`;
  emit(
    out,
    value,
    `created API key ${row.id} for project ${row.project_id} in place of ${id}, which is revoked ${when}\n\n  ${key}\n\nThis key is shown only once: store it now.\n`,
  );
}

/** `projects rename ID --name NAME`. */
export async function renameProjectCommand(db: Database, out: AdminOutput, id: string, name: string): Promise<void> {
  checkId(id, 'a project', 'projects list');
  if (name.trim() === '') throw new AdminError('--name must not be empty', 'INVALID_ARGUMENTS');
  let row;
  try {
    row = await renameProject(db.sql, id, name.trim());
  } catch (error) {
    if (isUniqueViolation(error)) throw new AdminError(`a project named ${JSON.stringify(name.trim())} already exists`, 'DUPLICATE_NAME');
    throw error;
  }
  if (!row) throw new AdminError(`no project ${id}; list them with: hookrelay-server projects list`, 'NOT_FOUND');
  emit(out, { id: row.id, name: row.name, created_at: row.created_at.toISOString() }, `renamed project ${row.id} to ${row.name}\n`);
}

/**
 * `projects delete ID --force`: its endpoints of every kind are deleted and its keys revoked, at
 * once and in every process (docs/operating.md, Projects and keys). `--force` is required: nothing
 * of a deleted project can be used again.
 */
export async function deleteProjectCommand(db: Database, out: AdminOutput, id: string, force: boolean): Promise<void> {
  checkId(id, 'a project', 'projects list');
  if (!force) {
    throw new AdminError(
      `projects delete deletes every endpoint of project ${id} and revokes its keys: add --force to confirm`,
      'CONFIRMATION_REQUIRED',
    );
  }
  const deleted = await deleteProject(db.sql, id);
  if (!deleted) throw new AdminError(`no project ${id}; list them with: hookrelay-server projects list`, 'NOT_FOUND');
  const value = {
    id: deleted.id,
    name: deleted.name,
    deleted_at: deleted.deleted_at.toISOString(),
    revoked_keys: deleted.revokedKeyIds.length,
    deleted_endpoints: { endpoints: deleted.endpoints, inbound_endpoints: deleted.inboundEndpointIds.length, pull_endpoints: deleted.pullEndpoints },
  };
  emit(
    out,
    value,
    `deleted project ${deleted.name} (${deleted.id}): ${deleted.endpoints} endpoints, ${deleted.inboundEndpointIds.length} inbound endpoints ` +
      `and ${deleted.pullEndpoints} pull endpoints deleted, ${deleted.revokedKeyIds.length} API keys revoked\n`,
  );
}
