import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

/**
 * `GET /v1/openapi.json`, generated from the zod schemas the routes validate and serialise with,
 * so the document cannot drift from what the server does. Registered before the routes: the
 * generator collects them as they are added.
 */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'hookrelay API',
        version,
        description: 'Webhook relay: outbound endpoints and messages, inbound endpoints, pull endpoints and logs.',
      },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'hr_… API key' } } },
      security: [{ apiKey: [] }],
    },
    // Only the API: ingest URLs (/in, /pull) take any bytes from senders and have no schema to show.
    transform: (input) => (input.url.startsWith('/v1/') ? jsonSchemaTransform(input) : { schema: { ...input.schema, hide: true }, url: input.url }),
  });
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
