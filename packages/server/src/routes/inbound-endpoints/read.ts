import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { EndpointListQuery, IdParams, InboundEndpointOut, InboundEndpointSummaryOut, PageMeta, successEnvelope, uuidv7AtTime } from '@hookrelay/shared';
import type { Sql } from '../../db/database.js';
import { countInboundEndpointActivity, findInboundEndpoint, listInboundEndpoints, type InboundEndpointActivity } from '../../db/inbound-endpoints.js';
import { STALE_AFTER_SECONDS } from '../../db/stream-connections.js';
import { endpointNotFound } from '../../errors.js';
import { readPage, SEQ_KEYSET } from '../../lib/cursor.js';
import { principalOf } from '../../plugins/auth.js';
import { inboundIngestUrl, toInboundEndpointOut, toInboundEndpointSummaryOut } from '../../views/inbound-endpoint.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const NO_ACTIVITY: InboundEndpointActivity = { connected_listeners: 0, messages_24h: 0 };

/** `connected_listeners` and `messages_24h` of the endpoints shown (a page, or one record). */
async function activityOf(sql: Sql, ids: readonly string[]): Promise<Map<string, InboundEndpointActivity>> {
  return countInboundEndpointActivity(sql, ids, uuidv7AtTime(Date.now() - DAY_MS), STALE_AFTER_SECONDS);
}

/** GET /v1/inbound-endpoints and GET /v1/inbound-endpoints/{id}, with each endpoint's activity. */
export function inboundEndpointReadRoutes(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.get(
    '/inbound-endpoints',
    { schema: { querystring: EndpointListQuery, response: { 200: successEnvelope(z.array(InboundEndpointSummaryOut), PageMeta) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const page = await readPage(request.query, SEQ_KEYSET, (keyset) => listInboundEndpoints(sql, projectId, keyset));
      const activity = await activityOf(sql, page.rows.map((r) => r.id));
      return {
        data: page.rows.map((row) => toInboundEndpointSummaryOut(row, activity.get(row.id) ?? NO_ACTIVITY)),
        meta: { request_id: request.id, next_cursor: page.nextCursor },
      };
    },
  );

  app.get(
    '/inbound-endpoints/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(InboundEndpointOut) } } },
    async (request) => {
      const row = await findInboundEndpoint(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      const activity = await activityOf(sql, [row.id]);
      return { data: toInboundEndpointOut(row, inboundIngestUrl(services.receiveBase(), services.secretBox.decrypt(row.secret_token_encrypted)), activity.get(row.id) ?? NO_ACTIVITY), meta: { request_id: request.id } };
    },
  );
}
