import type { BulkJobKind, BulkJobStatus } from '@hookrelay/shared';
import type { Sql, SqlFragment } from './database.js';
import { newestFirstById, uuidv7Floor } from './keyset.js';
import { liveEndpoint } from './soft-delete.js';

/**
 * Bulk recovery jobs (migrations/026): one row per job, claimed by workers with a lease, and the
 * statements that find the messages a job takes. One function per operation, `sql` first.
 */

export interface BulkJobRow {
  id: string;
  project_id: string;
  kind: BulkJobKind;
  endpoint_id: string | null;
  owner_id: string | null;
  inbound_endpoint_id: string | null;
  event_type: string | null;
  statuses: string[] | null;
  time_from: Date;
  time_to: Date | null;
  status: BulkJobStatus;
  matched: number;
  done: number;
  skipped: number;
  failed: number;
  last_error: string | null;
  after_id: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

const COLUMNS = (sql: Sql) => sql.fragment`
  b.id, b.project_id, b.kind, b.endpoint_id, b.owner_id, b.inbound_endpoint_id, b.event_type, b.statuses, b.time_from, b.time_to,
  b.status, b.matched, b.done, b.skipped, b.failed, b.last_error, b.after_id, b.created_at, b.updated_at, b.finished_at`;

/** What an outbound retry takes: the filter's values, times as the caller wrote them (RFC 3339 text). */
export interface OutboundScope {
  projectId: string;
  endpointId: string | null;
  ownerId: string | null;
  eventType: string | null;
  statuses: readonly string[];
  from: string;
  to: string | null;
}

/** What an inbound replay takes; `statuses` null: any. */
export interface InboundScope {
  projectId: string;
  endpointId: string;
  eventType: string | null;
  statuses: readonly string[] | null;
  from: string;
  to: string | null;
}

/** Where a job's window starts and ends, as SQL: the caller's text, or the job row's columns. */
interface Window {
  from: SqlFragment;
  until: SqlFragment;
}

/**
 * The window on a message's time column, and on its id, so that the id index bounds the scan: an
 * id is a UUIDv7 made by the same process, at the same moment, as the time (an inbound id may be
 * placed after another process's last one, never earlier than its time), so a minute on each side
 * holds every message of the window; the time column decides.
 */
function windowConditions(sql: Sql, id: SqlFragment, time: SqlFragment, window: Window): SqlFragment[] {
  return [
    sql.fragment`${time} >= ${window.from}`,
    sql.fragment`${time} < ${window.until}`,
    sql.fragment`${id} >= ${uuidv7Floor(sql, sql.fragment`greatest(${window.from} - interval '1 minute', 'epoch'::timestamptz)`)}`,
    sql.fragment`${id} < ${uuidv7Floor(sql, sql.fragment`greatest(${window.until} + interval '1 minute', 'epoch'::timestamptz)`)}`,
  ];
}

/** The outbound messages (`m`, with their endpoint `e`) a retry's filter matches, whatever their deletion. */
function outboundConditions(sql: Sql, scope: Omit<OutboundScope, 'from' | 'to'>, window: Window): SqlFragment[] {
  const where = [sql.fragment`m.project_id = ${scope.projectId}::uuid`, sql.fragment`m.status = ANY(${[...scope.statuses]}::text[])`];
  if (scope.endpointId !== null) where.push(sql.fragment`m.endpoint_id = ${scope.endpointId}`);
  if (scope.ownerId !== null) where.push(sql.fragment`e.owner_id = ${scope.ownerId}`);
  if (scope.eventType !== null) where.push(sql.fragment`m.event_type = ${scope.eventType}`);
  return [...where, ...windowConditions(sql, sql.fragment`m.id`, sql.fragment`m.created_at`, window)];
}

/** The inbound messages (`m`) of one endpoint a replay's filter matches, whatever their deletion. */
function inboundConditions(sql: Sql, scope: Omit<InboundScope, 'from' | 'to'>, window: Window): SqlFragment[] {
  const where = [sql.fragment`m.inbound_endpoint_id = ${scope.endpointId}::uuid`, sql.fragment`m.project_id = ${scope.projectId}::uuid`];
  if (scope.statuses !== null) where.push(sql.fragment`m.status = ANY(${[...scope.statuses]}::text[])`);
  if (scope.eventType !== null) where.push(sql.fragment`m.event_type = ${scope.eventType}`);
  return [...where, ...windowConditions(sql, sql.fragment`m.id`, sql.fragment`m.received_at`, window)];
}

/** A window from the caller's times; without an end, the statement's own moment (`now()`, the job's `created_at`). */
function givenWindow(sql: Sql, scope: { from: string; to: string | null }): Window {
  return {
    from: sql.fragment`${scope.from}::text::timestamptz`,
    until: scope.to === null ? sql.fragment`now()` : sql.fragment`${scope.to}::text::timestamptz`,
  };
}

/** The window of the job row `b`, exactly as stored. */
const jobWindow = (sql: Sql): Window => ({ from: sql.fragment`b.time_from`, until: sql.fragment`coalesce(b.time_to, b.created_at)` });

/** The count a job with this scope would take now: live messages of live endpoints. */
function countOutbound(sql: Sql, scope: OutboundScope): SqlFragment {
  return sql.fragment`
    SELECT count(*)::int AS n FROM outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
    WHERE ${sql.join(outboundConditions(sql, scope, givenWindow(sql, scope)), ' AND ')} AND m.deleted_at IS NULL AND ${liveEndpoint('e')}`;
}

function countInbound(sql: Sql, scope: InboundScope): SqlFragment {
  return sql.fragment`
    SELECT count(*)::int AS n FROM inbound_messages m
    WHERE ${sql.join(inboundConditions(sql, scope, givenWindow(sql, scope)), ' AND ')} AND m.deleted_at IS NULL`;
}

export async function countOutboundMatches(sql: Sql, scope: OutboundScope): Promise<number> {
  const [row] = await sql<{ n: number }>`${countOutbound(sql, scope)}`;
  return row!.n;
}

export async function countInboundMatches(sql: Sql, scope: InboundScope): Promise<number> {
  const [row] = await sql<{ n: number }>`${countInbound(sql, scope)}`;
  return row!.n;
}

/**
 * Stores a job with its `matched` count in one statement, so that the count and the window's end
 * (the job's `created_at` when the filter has none) are the same moment. A job that matches nothing
 * is done at once.
 */
async function insertJob(sql: Sql, id: string, count: SqlFragment, columns: {
  projectId: string; kind: BulkJobKind; endpointId: string | null; ownerId: string | null; inboundEndpointId: string | null;
  eventType: string | null; statuses: readonly string[] | null; from: string; to: string | null;
}): Promise<BulkJobRow> {
  const [row] = await sql<BulkJobRow>`
    WITH matched AS (${count})
    INSERT INTO bulk_jobs AS b (id, project_id, kind, endpoint_id, owner_id, inbound_endpoint_id, event_type, statuses, time_from, time_to,
                                status, matched, created_at, updated_at, finished_at)
    SELECT ${id}::uuid, ${columns.projectId}::uuid, ${columns.kind}, ${columns.endpointId}::text, ${columns.ownerId}::text,
           ${columns.inboundEndpointId}::uuid, ${columns.eventType}::text, ${columns.statuses === null ? null : [...columns.statuses]}::text[],
           ${columns.from}::text::timestamptz, ${columns.to}::text::timestamptz,
           CASE WHEN n = 0 THEN 'done' ELSE 'running' END, n, now(), now(), CASE WHEN n = 0 THEN now() END
    FROM matched
    RETURNING ${COLUMNS(sql)}`;
  return row!;
}

export async function insertOutboundJob(sql: Sql, id: string, scope: OutboundScope): Promise<BulkJobRow> {
  return insertJob(sql, id, countOutbound(sql, scope), { ...scope, kind: 'outbound', inboundEndpointId: null });
}

export async function insertInboundJob(sql: Sql, id: string, scope: InboundScope): Promise<BulkJobRow> {
  return insertJob(sql, id, countInbound(sql, scope), { ...scope, kind: 'inbound', inboundEndpointId: scope.endpointId, endpointId: null, ownerId: null });
}

export async function findBulkJob(sql: Sql, projectId: string, id: string): Promise<BulkJobRow | undefined> {
  const [row] = await sql<BulkJobRow>`SELECT ${COLUMNS(sql)} FROM bulk_jobs b WHERE b.id = ${id}::uuid AND b.project_id = ${projectId}::uuid`;
  return row;
}

/** Newest first by id, on the (project, id) index. */
export async function listBulkJobs(sql: Sql, projectId: string, page: { limit: number; beforeId?: string }): Promise<BulkJobRow[]> {
  return sql<BulkJobRow>`SELECT ${COLUMNS(sql)} FROM bulk_jobs b ${newestFirstById(sql, sql.fragment`b.id`, [sql.fragment`b.project_id = ${projectId}::uuid`], page)}`;
}

/**
 * Cancels a running job: its lease ends with it. The row lock waits for a chunk in flight, so the
 * answer counts what that chunk did and no chunk follows. Undefined when the job is not running
 * (ended, or not the project's).
 */
export async function cancelBulkJob(sql: Sql, projectId: string, id: string): Promise<BulkJobRow | undefined> {
  const [row] = await sql<BulkJobRow>`
    UPDATE bulk_jobs b SET status = 'cancelled', finished_at = now(), updated_at = now(), locked_by = NULL, locked_until = NULL, lease_id = NULL
    WHERE b.id = ${id}::uuid AND b.project_id = ${projectId}::uuid AND b.status = 'running'
    RETURNING ${COLUMNS(sql)}`;
  return row;
}

// ---------- workers ----------

/**
 * Leases the running job that has waited longest since its last chunk, when no live lease holds
 * it: one whose worker died, or never ran its chunk, is taken once its lease runs out. Rows another
 * worker is claiming are skipped. Undefined when there is none.
 */
export async function claimBulkJob(sql: Sql, input: { workerId: string; leaseId: string; leaseSeconds: number }): Promise<{ id: string } | undefined> {
  const [row] = await sql<{ id: string }>`
    UPDATE bulk_jobs b SET locked_by = ${input.workerId}, lease_id = ${input.leaseId}::uuid,
      locked_until = now() + make_interval(secs => ${input.leaseSeconds}::int), claims = b.claims + 1
    WHERE b.id = (
      SELECT id FROM bulk_jobs WHERE status = 'running' AND (locked_until IS NULL OR locked_until < now())
      ORDER BY updated_at, id LIMIT 1
      FOR UPDATE SKIP LOCKED
    )
    RETURNING b.id`;
  return row;
}

/** The job if still running under this lease, row-locked until the chunk commits; undefined when the lease was lost (expired and taken, or cancelled). */
export async function lockLeasedJob(sql: Sql, id: string, leaseId: string): Promise<BulkJobRow | undefined> {
  const [row] = await sql<BulkJobRow>`
    SELECT ${COLUMNS(sql)} FROM bulk_jobs b
    WHERE b.id = ${id}::uuid AND b.lease_id = ${leaseId}::uuid AND b.status = 'running'
    FOR UPDATE`;
  return row;
}

/** A message a chunk reached: deleted since the job began, or (outbound) of an endpoint that is gone. */
export interface ChunkMessage {
  id: string;
  deleted: boolean;
  endpoint_id: string;
  endpoint_live: boolean;
}

/**
 * The next `limit` messages of an outbound job after its position, oldest first (by id): those its
 * filter matches, deleted ones too when they were deleted after the job began (the job counts them
 * skipped). The job row `b` gives the window.
 */
export async function nextOutboundChunk(sql: Sql, job: BulkJobRow, limit: number): Promise<ChunkMessage[]> {
  const where = outboundConditions(sql, { projectId: job.project_id, endpointId: job.endpoint_id, ownerId: job.owner_id, eventType: job.event_type, statuses: job.statuses ?? [] }, jobWindow(sql));
  return sql<ChunkMessage>`
    SELECT m.id, (m.deleted_at IS NOT NULL) AS deleted, m.endpoint_id, ${liveEndpoint('e')} AS endpoint_live
    FROM bulk_jobs b, outbound_messages m JOIN endpoints e ON e.id = m.endpoint_id
    WHERE b.id = ${job.id}::uuid AND ${sql.join(where, ' AND ')}
      AND m.id > coalesce(b.after_id, '00000000-0000-0000-0000-000000000000'::uuid)
      AND (m.deleted_at IS NULL OR m.deleted_at >= b.created_at)
    ORDER BY m.id LIMIT ${limit}::int`;
}

/** The next `limit` messages of an inbound job after its position, in id order (see nextOutboundChunk); `endpoint_live` is the endpoint's. */
export async function nextInboundChunk(sql: Sql, job: BulkJobRow, limit: number): Promise<ChunkMessage[]> {
  const where = inboundConditions(sql, { projectId: job.project_id, endpointId: job.inbound_endpoint_id!, eventType: job.event_type, statuses: job.statuses }, jobWindow(sql));
  return sql<ChunkMessage>`
    SELECT m.id, (m.deleted_at IS NOT NULL) AS deleted, m.inbound_endpoint_id::text AS endpoint_id, ${liveEndpoint('e')} AS endpoint_live
    FROM bulk_jobs b, inbound_messages m JOIN inbound_endpoints e ON e.id = m.inbound_endpoint_id
    WHERE b.id = ${job.id}::uuid AND ${sql.join(where, ' AND ')}
      AND m.id > coalesce(b.after_id, '00000000-0000-0000-0000-000000000000'::uuid)
      AND (m.deleted_at IS NULL OR m.deleted_at >= b.created_at)
    ORDER BY m.id LIMIT ${limit}::int`;
}

/** What one chunk did, saved with its retries: the new position, the counts to add, and whether the job is done. */
export interface ChunkProgress {
  afterId: string | null;
  done: number;
  skipped: number;
  failed: number;
  /** The latest reason a message could not be retried, when this chunk had one. */
  lastError: string | null;
  finished: boolean;
}

/** Saves a chunk's progress and ends the lease (the next chunk is claimed anew, so that running jobs take turns). */
export async function saveChunkProgress(sql: Sql, id: string, leaseId: string, progress: ChunkProgress): Promise<void> {
  await sql`
    UPDATE bulk_jobs SET after_id = coalesce(${progress.afterId}::uuid, after_id),
      done = done + ${progress.done}::int, skipped = skipped + ${progress.skipped}::int, failed = failed + ${progress.failed}::int,
      last_error = coalesce(${progress.lastError}::text, last_error),
      status = CASE WHEN ${progress.finished}::boolean THEN 'done' ELSE status END,
      finished_at = CASE WHEN ${progress.finished}::boolean THEN now() END,
      locked_by = NULL, locked_until = NULL, lease_id = NULL, updated_at = now()
    WHERE id = ${id}::uuid AND lease_id = ${leaseId}::uuid`;
}

/** Ends a lease without progress (a worker stopping, or a chunk that failed): the job waits for the next claim. */
export async function releaseBulkJob(sql: Sql, id: string, leaseId: string): Promise<void> {
  await sql`UPDATE bulk_jobs SET locked_by = NULL, locked_until = NULL, lease_id = NULL WHERE id = ${id}::uuid AND lease_id = ${leaseId}::uuid`;
}

/**
 * Whether at least `count` deliveries are due and unclaimed: the queue live traffic waits in. A
 * bounded scan of the `delivery_jobs_due` partial index.
 */
export async function deliveriesWaiting(sql: Sql, count: number): Promise<boolean> {
  const [row] = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM (SELECT 1 FROM delivery_jobs WHERE locked_until IS NULL AND run_at <= now() LIMIT ${count}::int) AS due`;
  return (row?.n ?? 0) >= count;
}
