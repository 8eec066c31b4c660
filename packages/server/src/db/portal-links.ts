import { newUuidv7 } from '@hookrelay/shared';
import { PORTAL_LINK_REVOKED_CHANNEL } from './channels.js';
import type { Sql } from './database.js';
import { newestFirstById } from './keyset.js';
import { notifyOnCommit } from './notify.js';

export interface PortalLinkRow {
  id: string;
  project_id: string;
  owner_id: string;
  read_only: boolean;
  expires_at: Date;
  created_at: Date;
  revoked_at: Date | null;
}

/** A portal token's principal: the project and the one owner whose resources it reaches. */
export interface PortalLinkPrincipal {
  link_id: string;
  project_id: string;
  project_name: string;
  owner_id: string;
  read_only: boolean;
  expires_at: Date;
}

const PRINCIPAL = (sql: Sql) => sql.fragment`
  SELECT l.id AS link_id, p.id AS project_id, p.name AS project_name, l.owner_id, l.read_only, l.expires_at
  FROM portal_links l JOIN projects p ON p.id = l.project_id`;
const AUTHENTICATES = (sql: Sql) => sql.fragment`l.revoked_at IS NULL AND l.expires_at > now() AND p.deleted_at IS NULL`;

const COLUMNS = (sql: Sql) => sql.fragment`id, project_id, owner_id, read_only, expires_at, created_at, revoked_at`;

export async function insertPortalLink(
  sql: Sql,
  input: { projectId: string; ownerId: string; tokenHash: string; readOnly: boolean; expiresInMinutes: number },
): Promise<PortalLinkRow> {
  const [row] = await sql<PortalLinkRow>`
    INSERT INTO portal_links (id, project_id, owner_id, token_hash, read_only, expires_at)
    VALUES (${newUuidv7()}, ${input.projectId}, ${input.ownerId}, ${input.tokenHash}, ${input.readOnly},
            now() + make_interval(mins => ${input.expiresInMinutes}::int))
    RETURNING ${COLUMNS(sql)}`;
  return row!;
}

/**
 * The link behind a token hash, checked on every request: undefined once it expired or was revoked
 * (the database's clock decides both, so every process agrees at once), or its project was deleted.
 */
export async function findPrincipalByPortalTokenHash(sql: Sql, tokenHash: string): Promise<PortalLinkPrincipal | undefined> {
  const [row] = await sql<PortalLinkPrincipal>`${PRINCIPAL(sql)} WHERE l.token_hash = ${tokenHash} AND ${AUTHENTICATES(sql)}`;
  return row;
}

/** The link a portal stream ticket names, checked as a token is: undefined once it expired or was revoked, or is of another project. */
export async function findPrincipalByPortalLinkId(sql: Sql, linkId: string, projectId: string): Promise<PortalLinkPrincipal | undefined> {
  const [row] = await sql<PortalLinkPrincipal>`
    ${PRINCIPAL(sql)} WHERE l.id = ${linkId}::uuid AND l.project_id = ${projectId}::uuid AND ${AUTHENTICATES(sql)}`;
  return row;
}

/** Which of the links `ids` still authenticate (the open portal sockets' periodic check). */
export async function findActivePortalLinkIds(sql: Sql, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql<{ id: string }>`
    SELECT l.id FROM portal_links l JOIN projects p ON p.id = l.project_id
    WHERE l.id = ANY(${[...ids]}::uuid[]) AND ${AUTHENTICATES(sql)}`;
  return new Set(rows.map((row) => row.id));
}

/** A project's links, newest first, revoked and expired ones included; `ownerId` exact. */
export async function listPortalLinks(
  sql: Sql,
  projectId: string,
  filters: { ownerId?: string | undefined },
  page: { limit: number; beforeId?: string | undefined },
): Promise<PortalLinkRow[]> {
  const where = [sql.fragment`l.project_id = ${projectId}::uuid`];
  if (filters.ownerId !== undefined) where.push(sql.fragment`l.owner_id = ${filters.ownerId}`);
  return sql<PortalLinkRow>`
    SELECT l.id, l.project_id, l.owner_id, l.read_only, l.expires_at, l.created_at, l.revoked_at
    FROM portal_links l ${newestFirstById(sql, sql.fragment`l.id`, where, page)}`;
}

/**
 * Revokes a link of the project and announces it on PORTAL_LINK_REVOKED_CHANNEL when that commits
 * (its open sockets close); a second revoke keeps the first time. Undefined when the project has no
 * such link.
 */
export async function revokePortalLink(sql: Sql, projectId: string, id: string): Promise<PortalLinkRow | undefined> {
  return sql.begin(async (tx) => {
    const [row] = await tx<PortalLinkRow>`
      UPDATE portal_links SET revoked_at = coalesce(revoked_at, now())
      WHERE project_id = ${projectId}::uuid AND id = ${id}::uuid
      RETURNING ${COLUMNS(tx)}`;
    if (row) await notifyOnCommit(tx, PORTAL_LINK_REVOKED_CHANNEL, row.id);
    return row;
  });
}

/**
 * Who owns a resource a portal token names in a path, or undefined when the project has no such
 * resource: an outbound endpoint (deleted ones too, as the API reads them), an outbound message
 * (its endpoint's owner), an event or a bulk job (the owner its filter named). Null: the resource belongs to no owner (the operator's own).
 */
export async function findResourceOwner(
  sql: Sql,
  projectId: string,
  kind: 'endpoint' | 'message' | 'event' | 'bulkJob',
  id: string,
): Promise<{ owner_id: string | null } | undefined> {
  const rows =
    kind === 'bulkJob'
      ? await sql<{ owner_id: string | null }>`SELECT owner_id FROM bulk_jobs WHERE project_id = ${projectId}::uuid AND id = ${id}::uuid`
      : kind === 'endpoint'
      ? await sql<{ owner_id: string | null }>`SELECT owner_id FROM endpoints WHERE project_id = ${projectId}::uuid AND id = ${id}`
      : kind === 'message'
        ? await sql<{ owner_id: string | null }>`
            SELECT e.owner_id FROM outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
            WHERE m.project_id = ${projectId}::uuid AND m.id = ${id}::uuid`
        : await sql<{ owner_id: string | null }>`SELECT owner_id FROM events WHERE project_id = ${projectId}::uuid AND id = ${id}::uuid`;
  return rows[0];
}
