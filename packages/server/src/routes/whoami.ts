import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { WhoamiOut, successEnvelope } from '@hookrelay/shared';
import { principalOf } from '../plugins/auth.js';

export async function whoamiRoutes(app: FastifyInstance): Promise<void> {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/whoami',
    { schema: { response: { 200: successEnvelope(WhoamiOut) } } },
    async (request) => {
      const principal = principalOf(request);
      return {
        data: { project_id: principal.project_id, project_name: principal.project_name, api_key_id: principal.api_key_id },
        meta: { request_id: request.id },
      };
    },
  );
}
