import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { LogRecordOut, LogsQuery, PageMetaWithMore, successEnvelope } from '@hookrelay/shared';
import { listOutboundLogs } from '../db/messages.js';
import { ID_KEYSET, readPage } from '../lib/cursor.js';
import { portalOwnerOf, projectIdOf } from '../plugins/auth.js';
import { toLogRecordOut } from '../views/message.js';

/**
 * GET /v1/logs: the project's outbound messages, newest first, deleted ones included (they carry
 * `deleted_at`). `start_time` inclusive, `end_time` exclusive, on `created_at`; keyset on the id.
 */
export async function logRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { sql } = fastify.services.db;

  app.get(
    '/logs',
    { schema: { querystring: LogsQuery, response: { 200: successEnvelope(z.array(LogRecordOut), PageMetaWithMore) } } },
    async (request) => {
      const q = request.query;
      const projectId = projectIdOf(request);
      const ownerId = portalOwnerOf(request);
      const filters = {
        ...(ownerId !== undefined ? { ownerId } : {}),
        ...(q.endpoint_id ? { endpointId: q.endpoint_id } : {}),
        ...(q.status ? { status: q.status } : {}),
        ...(q.start_time ? { startTime: q.start_time } : {}),
        ...(q.end_time ? { endTime: q.end_time } : {}),
      };
      const page = await readPage(q, ID_KEYSET, (keyset) => listOutboundLogs(sql, projectId, filters, keyset));
      return { data: page.rows.map(toLogRecordOut), meta: { request_id: request.id, has_more: page.hasMore, next_cursor: page.nextCursor } };
    },
  );
}
