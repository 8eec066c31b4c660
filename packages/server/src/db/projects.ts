import { newUuidv7 } from '@hookrelay/shared';
import type { Sql } from './database.js';

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
  return sql<ProjectRow>`SELECT id, name, created_at FROM projects ORDER BY id`;
}

export async function findProject(sql: Sql, id: string): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow>`SELECT id, name, created_at FROM projects WHERE id = ${id}`;
  return row;
}

export async function countProjects(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }>`SELECT count(*)::int AS n FROM projects`;
  return row!.n;
}
