import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { IdParams, PauseOut, successEnvelope } from '@hookrelay/shared';
import { updateInboundEndpoint } from '../../db/inbound-endpoints.js';
import { endpointNotFound } from '../../errors.js';
import { PAUSE_ACTIONS } from '../../http/pause.js';
import { principalOf } from '../../plugins/auth.js';

/** POST /v1/inbound-endpoints/{id}/pause and …/resume; every process drops its cached settings. */
export function inboundEndpointPauseRoutes(fastify: FastifyInstance): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = fastify;
  const { sql } = services.db;

  const setPaused = async (projectId: string, id: string, paused: boolean): Promise<PauseOut> => {
    const row = await updateInboundEndpoint(sql, projectId, id, { paused });
    if (!row) throw endpointNotFound(id);
    await services.inboundEndpointChanged(row.id);
    return { id: row.id, paused: row.paused };
  };

  for (const [action, paused] of PAUSE_ACTIONS) {
    app.post(
      `/inbound-endpoints/:id/${action}`,
      { schema: { params: IdParams, response: { 200: successEnvelope(PauseOut) } } },
      async (request) => ({
        data: await setPaused(principalOf(request).project_id, request.params.id, paused),
        meta: { request_id: request.id },
      }),
    );
  }
}
