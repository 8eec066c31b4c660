import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { IdParams, RotateSecretOut, successEnvelope } from '@hookrelay/shared';
import { lockInboundEndpoint } from '../../db/inbound-endpoints.js';
import { endpointNotFound } from '../../errors.js';
import { rotateSigningKey } from '../../lib/signing-keys.js';
import { principalOf } from '../../plugins/auth.js';

/**
 * POST /v1/inbound-endpoints/{id}/rotate-secret: the only way to see a signing secret again after
 * create, e.g. for a key that PATCH signing_enabled created (PATCH answers only { id, updated }).
 */
export function inboundEndpointRotateSecretRoute(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  app.post(
    '/inbound-endpoints/:id/rotate-secret',
    { schema: { params: IdParams, response: { 200: successEnvelope(RotateSecretOut) } } },
    async (request) => {
      const projectId = principalOf(request).project_id;
      const { id } = request.params;
      const rotation = await rotateSigningKey(sql, services.secretBox, (tx) => lockInboundEndpoint(tx, projectId, id));
      if (!rotation) throw endpointNotFound(id);
      await services.inboundEndpointChanged(rotation.ownerId);
      return { data: rotation.rotated, meta: { request_id: request.id } };
    },
  );
}
