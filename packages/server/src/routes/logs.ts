import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { LogRecordOut, LogsQuery, PageMetaWithMore, successEnvelope } from '@hookrelay/shared';
import { listOutboundLogs } from '../db/messages.js';
import { decodeCursor, encodeCursor } from '../lib/cursor.js';
import { principalOf } from '../plugins/auth.js';
import { toLogRecord } from './messages.js';

const IdCursor = z.strictObject({ i: z.string().uuid() });

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
      const beforeId = q.cursor === undefined ? undefined : decodeCursor(q.cursor, IdCursor).i;
      const rows = await listOutboundLogs(
        sql,
        principalOf(request).project_id,
        {
          ...(q.endpoint_id ? { endpointId: q.endpoint_id } : {}),
          ...(q.status ? { status: q.status } : {}),
          ...(q.start_time ? { startTime: q.start_time } : {}),
          ...(q.end_time ? { endTime: q.end_time } : {}),
          ...(beforeId ? { beforeId } : {}),
        },
        q.limit + 1,
      );
      const page = rows.slice(0, q.limit);
      const hasMore = rows.length > q.limit;
      const last = page[page.length - 1];
      return {
        data: page.map(toLogRecord),
        meta: { request_id: request.id, has_more: hasMore, next_cursor: hasMore && last ? encodeCursor({ i: last.id }) : null },
      };
    },
  );
}
