import { keyHint, newApiKey } from '@hookrelay/shared';
import type { Database } from '../db/database.js';
import type { MigrateResult } from '../db/migrate.js';
import { insertApiKey, listApiKeys, revokeApiKey } from '../db/api-keys.js';
import { findProject, insertProject, listProjects } from '../db/projects.js';
import { isUniqueViolation } from '../db/errors.js';
import { sha256Hex } from '../security/crypto.js';

/**
 * What went wrong, as the CLI names it (docs/cli.md, Errors and exit codes), with its exit code:
 * the command must change (2), no such project or key (4), a name already taken (5), other (1).
 */
export const ADMIN_ERRORS = {
  ADMIN_ERROR: 1,
  INVALID_ARGUMENTS: 2,
  CONFIRMATION_REQUIRED: 2,
  NOT_FOUND: 4,
  DUPLICATE_NAME: 5,
} as const;
export type AdminErrorCode = keyof typeof ADMIN_ERRORS;

/** A failure of an admin command that is the operator's to fix; main prints it and exits with its code's exit code. */
export class AdminError extends Error {
  override readonly name = 'AdminError';
  constructor(
    message: string,
    readonly code: AdminErrorCode = 'ADMIN_ERROR',
  ) {
    super(message);
  }

  get exitCode(): number {
    return ADMIN_ERRORS[this.code];
  }
}

export interface AdminOutput {
  json: boolean;
  write(text: string): void;
}

export function table(rows: Record<string, string>[]): string {
  if (rows.length === 0) return '(none)\n';
  const columns = Object.keys(rows[0]!);
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => r[c] ?? '')))].join('\n') + '\n';
}

export function emit(out: AdminOutput, value: unknown, human: string): void {
  out.write(out.json ? `${JSON.stringify(value)}\n` : human);
}

export async function createProjectCommand(db: Database, out: AdminOutput, name: string): Promise<void> {
  if (name.trim() === '') throw new AdminError('--name must not be empty', 'INVALID_ARGUMENTS');
  try {
    const project = await insertProject(db.sql, name.trim());
    const value = { id: project.id, name: project.name, created_at: project.created_at.toISOString() };
    emit(out, value, `created project ${project.name} (${project.id})\ncreate a key with: hookrelay-server keys create --project ${project.id}\n`);
  } catch (error) {
    if (isUniqueViolation(error)) throw new AdminError(`a project named ${JSON.stringify(name)} already exists`, 'DUPLICATE_NAME');
    throw error;
  }
}

export async function listProjectsCommand(db: Database, out: AdminOutput): Promise<void> {
  const projects = await listProjects(db.sql);
  const value = projects.map((p) => ({ id: p.id, name: p.name, created_at: p.created_at.toISOString() }));
  // `{ data }`, as the CLI's lists print.
  emit(out, { data: value }, table(value));
}

export async function createKeyCommand(db: Database, out: AdminOutput, projectId: string, name = ''): Promise<void> {
  if (!/^[0-9a-f-]{36}$/i.test(projectId) || !(await findProject(db.sql, projectId))) {
    throw new AdminError(`no project ${projectId}; list them with: hookrelay-server projects list`, 'NOT_FOUND');
  }
  const key = newApiKey();
  const row = await insertApiKey(db.sql, { projectId, keyHash: sha256Hex(key), keyHint: keyHint(key), name });
  const value = { id: row.id, project_id: row.project_id, name: row.name, key, created_at: row.created_at.toISOString() };
  emit(out, value, `created API key ${row.id} for project ${projectId}\n\n  ${key}\n\nThis key is shown only once: store it now.\n`);
}

export async function listKeysCommand(db: Database, out: AdminOutput, projectId?: string): Promise<void> {
  const keys = await listApiKeys(db.sql, projectId);
  const value = keys.map((k) => ({
    id: k.id,
    project_id: k.project_id,
    name: k.name,
    key_hint: `hr_…${k.key_hint}`,
    created_at: k.created_at.toISOString(),
    revoked_at: k.revoked_at ? k.revoked_at.toISOString() : null,
  }));
  emit(out, { data: value }, table(value.map((k) => ({ ...k, revoked_at: k.revoked_at ?? '' }))));
}

export async function revokeKeyCommand(db: Database, out: AdminOutput, id: string): Promise<void> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw new AdminError(`${id} is not an API key id (a UUID); list them with: hookrelay-server keys list`, 'INVALID_ARGUMENTS');
  const row = await revokeApiKey(db.sql, id);
  if (!row) throw new AdminError(`no API key ${id}; list them with: hookrelay-server keys list`, 'NOT_FOUND');
  const value = { id: row.id, revoked_at: row.revoked_at!.toISOString() };
  emit(out, value, `revoked API key ${row.id}\n`);
}

/**
 * What `migrate` did: the migrations it applied and the stored functions whose current SQL it
 * applied (new or changed), each `[]` when there was nothing to do; `superseded` names the functions
 * a newer version's body was kept for (a rolling upgrade).
 */
export function migrateCommand(out: AdminOutput, migrated: MigrateResult): void {
  const value = { migrations: migrated.migrations, current_sql: migrated.currentSql, superseded: migrated.superseded };
  const list = (names: readonly string[]) => (names.length === 0 ? 'none' : names.join(', '));
  const human =
    migrated.migrations.length === 0 && migrated.currentSql.length === 0
      ? 'the database is up to date: nothing to apply\n'
      : `migrations applied: ${list(migrated.migrations)}\ncurrent SQL applied: ${list(migrated.currentSql)}\n`;
  const kept = migrated.superseded.length === 0 ? '' : `kept the newer bodies the database runs of: ${list(migrated.superseded)}\n`;
  emit(out, value, human + kept);
}
