import { newUuidv7 } from '@hookrelay/shared';
import type { Sql } from './database.js';
import { API_KEY_REVOKED_CHANNEL, INBOUND_ENDPOINT_CHANGED_CHANNEL } from './channels.js';
import { notifyOnCommit } from './notify.js';

export interface ProjectRow {
  id: string;
  name: string;
  created_at: Date;
}

export async function insertProject(sql: Sql, name: string): Promise<ProjectRow> {
  const [row] = await sql<ProjectRow>`
    INSERT INTO projects (id, name) VALUES (${newUuidv7()}, ${name})
    RETURNING id, name, created_at`;
  return row!;
}

export async function listProjects(sql: Sql): Promise<ProjectRow[]> {
  return sql<ProjectRow>`SELECT id, name, created_at FROM projects WHERE deleted_at IS NULL ORDER BY id`;
}

/** A project that is not deleted. */
export async function findProject(sql: Sql, id: string): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow>`SELECT id, name, created_at FROM projects WHERE id = ${id} AND deleted_at IS NULL`;
  return row;
}

/** Renames a project that is not deleted; undefined when there is none. */
export async function renameProject(sql: Sql, id: string, name: string): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow>`
    UPDATE projects SET name = ${name} WHERE id = ${id} AND deleted_at IS NULL
    RETURNING id, name, created_at`;
  return row;
}

export interface DeletedProject extends ProjectRow {
  deleted_at: Date;
  revokedKeyIds: string[];
  endpoints: number;
  inboundEndpointIds: string[];
  pullEndpoints: number;
}

/**
 * Deletes a project in one transaction: its live endpoints of every kind are deleted as the API
 * deletes one, its keys revoked (announced on API_KEY_REVOKED_CHANNEL, which closes their sockets),
 * and the inbound endpoints announced as changed, so that every process's ingest cache forgets
 * them. The rows stay, like those of a deleted endpoint. Undefined when there is no such project.
 */
export async function deleteProject(sql: Sql, id: string): Promise<DeletedProject | undefined> {
  return sql.begin(async (tx) => {
    const [project] = await tx<(ProjectRow & { deleted_at: Date })>`
      UPDATE projects SET deleted_at = now() WHERE id = ${id} AND deleted_at IS NULL
      RETURNING id, name, created_at, deleted_at`;
    if (!project) return undefined;
    const endpoints = await tx`
      UPDATE endpoints SET deleted_at = now(), updated_at = now() WHERE project_id = ${id} AND deleted_at IS NULL RETURNING id`;
    const inbound = await tx<{ id: string }>`
      UPDATE inbound_endpoints SET deleted_at = now(), updated_at = now() WHERE project_id = ${id} AND deleted_at IS NULL RETURNING id`;
    const pull = await tx`
      UPDATE pull_endpoints SET deleted_at = now(), updated_at = now() WHERE project_id = ${id} AND deleted_at IS NULL RETURNING id`;
    const keys = await tx<{ id: string }>`
      UPDATE api_keys SET revoked_at = least(coalesce(revoked_at, now()), now()) WHERE project_id = ${id} RETURNING id`;
    for (const key of keys) await notifyOnCommit(tx, API_KEY_REVOKED_CHANNEL, key.id);
    for (const endpoint of inbound) await notifyOnCommit(tx, INBOUND_ENDPOINT_CHANGED_CHANNEL, endpoint.id);
    return {
      ...project,
      revokedKeyIds: keys.map((k) => k.id),
      endpoints: endpoints.length,
      inboundEndpointIds: inbound.map((e) => e.id),
      pullEndpoints: pull.length,
    };
  });
}

export async function countProjects(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }>`SELECT count(*)::int AS n FROM projects`;
  return row!.n;
}
