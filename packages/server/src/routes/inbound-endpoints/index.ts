import type { FastifyInstance } from 'fastify';
import { inboundEndpointCreateRoute } from './create.js';
import { inboundEndpointDeleteRoute } from './delete.js';
import { inboundEndpointPauseRoutes } from './pause.js';
import { inboundEndpointReadRoutes } from './read.js';
import { inboundEndpointRotateSecretRoute } from './rotate-secret.js';
import { inboundEndpointUpdateRoute } from './update.js';

/**
 * /v1/inbound-endpoints (docs/api.md, Inbound endpoints): create, read, update, pause and resume,
 * delete, rotate the signing secret. Every write that changes how the endpoint ingests tells every
 * process to drop its cached ingest settings.
 */
export async function inboundEndpointRoutes(fastify: FastifyInstance): Promise<void> {
  inboundEndpointCreateRoute(fastify);
  inboundEndpointReadRoutes(fastify);
  inboundEndpointUpdateRoute(fastify);
  inboundEndpointPauseRoutes(fastify);
  inboundEndpointDeleteRoute(fastify);
  inboundEndpointRotateSecretRoute(fastify);
}
