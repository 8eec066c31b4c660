import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  IdParams,
  PageMetaWithMore,
  RejectionDetailOut,
  RejectionOut,
  RejectionParams,
  RejectionsQuery,
  successEnvelope,
  type RejectionEndpointKind,
} from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { findInboundEndpoint } from '../db/inbound-endpoints.js';
import { findPullEndpoint } from '../db/pull-endpoints.js';
import { findRejection, listRejections } from '../db/rejections.js';
import { endpointNotFound, notFound } from '../errors.js';
import { ID_KEYSET, readPage } from '../lib/cursor.js';
import { principalOf } from '../plugins/auth.js';
import { refuseNul } from '../security/text.js';
import { toRejectionDetailOut, toRejectionOut } from '../views/rejection.js';

const ListQuery = refuseNul(RejectionsQuery);

/** The endpoint of the project, live; ENDPOINT_NOT_FOUND otherwise (another project's included). */
async function liveEndpointId(sql: Sql, kind: RejectionEndpointKind, projectId: string, id: string): Promise<string> {
  const endpoint = kind === 'inbound' ? await findInboundEndpoint(sql, projectId, id) : await findPullEndpoint(sql, projectId, id);
  if (!endpoint) throw endpointNotFound(id);
  return endpoint.id;
}

/**
 * GET /v1/{inbound,pull}-endpoints/{id}/rejections[/{rejection_id}]: the requests the endpoint's
 * ingest URL refused (docs/api.md, Refused requests), newest first, keyset on the id.
 */
export async function rejectionRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { sql } = fastify.services.db;

  for (const [kind, prefix] of [['inbound', '/inbound-endpoints'], ['pull', '/pull-endpoints']] as const) {
    app.get(
      `${prefix}/:id/rejections`,
      { schema: { params: IdParams, querystring: ListQuery, response: { 200: successEnvelope(z.array(RejectionOut), PageMetaWithMore) } } },
      async (request) => {
        const q = request.query;
        const endpointId = await liveEndpointId(sql, kind, principalOf(request).project_id, request.params.id);
        const filters = { reason: q.reason, receivedAfter: q.received_after, receivedBefore: q.received_before };
        const page = await readPage(q, ID_KEYSET, (keyset) => listRejections(sql, kind, endpointId, filters, keyset));
        return { data: page.rows.map(toRejectionOut), meta: { request_id: request.id, has_more: page.hasMore, next_cursor: page.nextCursor } };
      },
    );

    app.get(
      `${prefix}/:id/rejections/:rejection_id`,
      { schema: { params: RejectionParams, response: { 200: successEnvelope(RejectionDetailOut) } } },
      async (request) => {
        const endpointId = await liveEndpointId(sql, kind, principalOf(request).project_id, request.params.id);
        const row = await findRejection(sql, kind, endpointId, request.params.rejection_id);
        if (!row) throw notFound('refused request', request.params.rejection_id);
        return { data: toRejectionDetailOut(row), meta: { request_id: request.id } };
      },
    );
  }
}
