import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  PullDeleteAllBody,
  PullDeleteAllOut,
  PullDeleteAllQuery,
  PullEventAckBatchIn,
  PullEventAckBatchOut,
  PullEventAckOut,
  PullEventDeleteBatchIn,
  PullEventDeleteBatchOut,
  PullEventDeleteOut,
  PullEventDetailOut,
  PullEventGetQuery,
  PullEventOut,
  PullEventParams,
  PullEventsPageMeta,
  PullEventsQuery,
  IdParams,
  successEnvelope,
  type PullDeleteAllIn,
} from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { findPullEndpoint } from '../db/pull-endpoints.js';
import {
  ackPullEvents,
  findPullEvent,
  listPullEvents,
  markPullEventFetched,
  softDeletePullEventChunk,
  softDeletePullEvents,
  type PullEventFilters,
} from '../db/pull-events.js';
import { AppError, endpointNotFound, invalidRequest, notFound } from '../errors.js';
import { loadBody } from '../lib/body.js';
import { decodeCursor, encodeCursor, keysetPage } from '../lib/cursor.js';
import { principalOf } from '../plugins/auth.js';
import { batchDeleteResult, uniqueIds } from '../lib/batch-delete.js';
import { refuseNul } from '../security/text.js';
import { toPullEventDetailOut, toPullEventOut } from '../views/pull-event.js';

const EventCursor = z.strictObject({ e: z.string().uuid() });
const EventsQuery = refuseNul(PullEventsQuery);
const DeleteAllQuery = refuseNul(PullDeleteAllQuery);
const DeleteAllBody = refuseNul(PullDeleteAllBody);

/** Events soft-deleted per transaction by delete-all: a failure loses at most one chunk's work. */
export const DELETE_ALL_CHUNK_SIZE = 100;

/** The outcome of a delete-all: the ids committed so far, and the error that stopped it, if any. */
export interface DeleteAllResult {
  deletedIds: string[];
  error?: unknown;
}

/**
 * Soft-deletes up to `limit` matching events, oldest first, one transaction per chunk. An error
 * ends the run; what earlier chunks committed stays committed and is reported.
 */
export async function deleteAllPullEvents(
  sql: Sql,
  endpointId: string,
  filters: Omit<PullEventFilters, 'afterId'>,
  limit: number,
  principal: { apiKeyId: string },
  chunkSize = DELETE_ALL_CHUNK_SIZE,
): Promise<DeleteAllResult> {
  const deletedIds: string[] = [];
  let afterId: string | undefined;
  try {
    while (deletedIds.length < limit) {
      const want = Math.min(chunkSize, limit - deletedIds.length);
      const chunk = await sql.begin((tx) =>
        softDeletePullEventChunk(tx, endpointId, { ...filters, ...(afterId ? { afterId } : {}) }, want, principal),
      );
      deletedIds.push(...chunk.deletedIds);
      if (chunk.selected < want || chunk.lastId === null) break;
      afterId = chunk.lastId;
    }
    return { deletedIds };
  } catch (error) {
    return { deletedIds, error };
  }
}

/** Query-string and JSON-body parameters: the body wins when it has any (docs/api.md). */
function deleteAllParams(query: PullDeleteAllIn, body: unknown): PullDeleteAllIn {
  if (body === undefined || body === null) return query;
  const parsed = DeleteAllBody.safeParse(body);
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues.map((issue) => {
    const path = ['body', ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') return { path: [path, issue.keys.join(', ')].join('.'), message: `unknown field${issue.keys.length > 1 ? 's' : ''}` };
    return { path, message: issue.message.replace(/^Invalid input: /, '') };
  });
  throw invalidRequest(details.map((d) => `${d.path}: ${d.message}`).join('; '), details);
}

function toFilters(params: { status: readonly PullEventFilters['statuses'][number][]; event_type?: string | undefined; received_after?: string | undefined; received_before?: string | undefined }): Omit<PullEventFilters, 'afterId'> {
  return {
    statuses: params.status,
    ...(params.event_type !== undefined ? { eventType: params.event_type } : {}),
    ...(params.received_after !== undefined ? { receivedAfter: params.received_after } : {}),
    ...(params.received_before !== undefined ? { receivedBefore: params.received_before } : {}),
  };
}

export async function pullEventRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  /** The path's endpoint, live and in the caller's project, or 404 ENDPOINT_NOT_FOUND. */
  const endpointOf = async (projectId: string, id: string): Promise<string> => {
    const endpoint = await findPullEndpoint(sql, projectId, id);
    if (!endpoint) throw endpointNotFound(id);
    return endpoint.id;
  };

  app.get(
    '/pull-endpoints/:id/events',
    { schema: { params: IdParams, querystring: EventsQuery, response: { 200: successEnvelope(z.array(PullEventOut), PullEventsPageMeta) } } },
    async (request) => {
      const q = request.query;
      const afterId = decodeCursor(q.cursor, EventCursor)?.e;
      const projectId = principalOf(request).project_id;
      // One round trip for a page with rows: the query itself checks the endpoint (live, in the
      // caller's project); only an empty page needs the lookup that tells 404 from "no events".
      const rows = await listPullEvents(sql, request.params.id, { ...toFilters(q), ...(afterId ? { afterId } : {}) }, q.limit + 1, { projectId });
      if (rows.length === 0) await endpointOf(projectId, request.params.id);
      const page = keysetPage(rows, q.limit, (last) => encodeCursor({ e: last.id }));
      // This list's last page says '' where the others say null (PullEventsPageMeta).
      return { data: page.rows.map(toPullEventOut), meta: { request_id: request.id, has_more: page.hasMore, next_cursor: page.nextCursor ?? '' } };
    },
  );

  app.get(
    '/pull-endpoints/:id/events/:event_id',
    { schema: { params: PullEventParams, querystring: PullEventGetQuery, response: { 200: successEnvelope(PullEventDetailOut) } } },
    async (request) => {
      const endpointId = await endpointOf(principalOf(request).project_id, request.params.id);
      let row = await findPullEvent(sql, endpointId, request.params.event_id);
      if (!row) throw notFound('event', request.params.event_id);
      // A deleted event answers its metadata only: its payload is unreachable at once.
      if (row.deleted_at) return { data: toPullEventDetailOut(row, {}), meta: { request_id: request.id } };
      const body = await loadBody(services.payloadStore, sql, row.payload_key, row.content_type, request.query.body_encoding === 'base64', row.size_bytes);
      // The first fetch that hands the payload over moves the event on; a failed read does not.
      if (row.status === 'stored' && !('body_error' in body)) {
        row = (await markPullEventFetched(sql, endpointId, row.id, new Date())) ?? (await findPullEvent(sql, endpointId, row.id)) ?? row;
      }
      return { data: toPullEventDetailOut(row, row.deleted_at ? {} : body), meta: { request_id: request.id } };
    },
  );

  app.post(
    '/pull-endpoints/:id/events/:event_id/ack',
    { schema: { params: PullEventParams, response: { 200: successEnvelope(PullEventAckOut) } } },
    async (request) => {
      const endpointId = await endpointOf(principalOf(request).project_id, request.params.id);
      const [result] = await ackPullEvents(sql, endpointId, [request.params.event_id], new Date());
      if (!result) throw notFound('event', request.params.event_id);
      return {
        data: { event_id: result.id, status: 'delivered' as const, delivered_at: result.delivered_at.toISOString(), already_delivered: result.already_delivered },
        meta: { request_id: request.id },
      };
    },
  );

  app.post(
    '/pull-endpoints/:id/events/ack-batch',
    { schema: { params: IdParams, body: PullEventAckBatchIn, response: { 200: successEnvelope(PullEventAckBatchOut) } } },
    async (request) => {
      const endpointId = await endpointOf(principalOf(request).project_id, request.params.id);
      const ids = [...new Set(request.body.event_ids.map((id) => id.toLowerCase()))];
      const found = new Map((await ackPullEvents(sql, endpointId, ids, new Date())).map((r) => [r.id, r]));
      const results = ids.map((id) => {
        const r = found.get(id);
        if (!r) return { event_id: id, outcome: 'not_found' as const };
        return { event_id: id, outcome: r.already_delivered ? ('already_delivered' as const) : ('delivered' as const), delivered_at: r.delivered_at.toISOString() };
      });
      return {
        data: {
          results,
          delivered_count: results.filter((r) => r.outcome === 'delivered').length,
          already_delivered_count: results.filter((r) => r.outcome === 'already_delivered').length,
          not_found_count: results.filter((r) => r.outcome === 'not_found').length,
        },
        meta: { request_id: request.id },
      };
    },
  );

  app.delete(
    '/pull-endpoints/:id/events/:event_id',
    { schema: { params: PullEventParams, response: { 200: successEnvelope(PullEventDeleteOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const endpointId = await endpointOf(principal.project_id, request.params.id);
      const [result] = await softDeletePullEvents(sql, endpointId, [request.params.event_id], { apiKeyId: principal.api_key_id });
      if (!result) throw notFound('event', request.params.event_id);
      return {
        data: { event_id: result.id, deleted_at: result.deleted_at.toISOString(), already_deleted: result.already_deleted },
        meta: { request_id: request.id },
      };
    },
  );

  app.post(
    '/pull-endpoints/:id/events/delete-batch',
    { schema: { params: IdParams, body: PullEventDeleteBatchIn, response: { 200: successEnvelope(PullEventDeleteBatchOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const endpointId = await endpointOf(principal.project_id, request.params.id);
      const ids = uniqueIds(request.body.message_ids);
      const touched = await softDeletePullEvents(sql, endpointId, ids, { apiKeyId: principal.api_key_id });
      return { data: batchDeleteResult('event_id', ids, touched), meta: { request_id: request.id } };
    },
  );

  app.post(
    '/pull-endpoints/:id/events/delete-all',
    { schema: { params: IdParams, querystring: DeleteAllQuery, response: { 200: successEnvelope(PullDeleteAllOut) } } },
    async (request) => {
      const principal = principalOf(request);
      const params = deleteAllParams(request.query, request.body);
      const endpointId = await endpointOf(principal.project_id, request.params.id);
      const { deletedIds, error } = await deleteAllPullEvents(sql, endpointId, toFilters(params), params.limit, { apiKeyId: principal.api_key_id });
      const data = { deleted: deletedIds.length, deleted_event_ids: deletedIds };
      if (error !== undefined) {
        request.log.error({ err: error, pull_endpoint_id: endpointId, deleted: deletedIds.length }, 'delete-all failed');
        throw deletedIds.length === 0
          ? new AppError('DELETE_FAILED', 'delete-all failed; no event was deleted', { data, cause: error })
          : new AppError('PARTIAL_DELETE_FAILURE', `delete-all failed after deleting ${deletedIds.length} events; data lists them`, { data, cause: error });
      }
      return { data, meta: { request_id: request.id } };
    },
  );
}
