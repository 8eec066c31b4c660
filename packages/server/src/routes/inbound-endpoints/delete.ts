import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { EndpointDeleteOut, IdParams, successEnvelope } from '@hookrelay/shared';
import { softDeleteInboundEndpoint } from '../../db/inbound-endpoints.js';
import { endpointNotFound } from '../../errors.js';
import { principalOf } from '../../plugins/auth.js';

/** DELETE /v1/inbound-endpoints/{id}: a soft delete; its ingest URL answers 410 from then on. */
export function inboundEndpointDeleteRoute(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.delete(
    '/inbound-endpoints/:id',
    { schema: { params: IdParams, response: { 200: successEnvelope(EndpointDeleteOut) } } },
    async (request) => {
      const row = await softDeleteInboundEndpoint(sql, principalOf(request).project_id, request.params.id);
      if (!row) throw endpointNotFound(request.params.id);
      await services.inboundEndpointChanged(row.id);
      return { data: { id: row.id, deleted: true as const }, meta: { request_id: request.id } };
    },
  );
}
