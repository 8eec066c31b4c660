import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { constantTimeEqual } from '../security/crypto.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * `GET /metrics` in the Prometheus text format. Open by default: metrics carry no secrets and no
 * project data. With HOOKRELAY_METRICS_TOKEN set, the scraper must send it as a bearer token.
 */
export async function metricsRoutes(app: FastifyInstance): Promise<void> {
  const { metrics, config } = app.services;
  const token = config.metricsToken;

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (token !== undefined) {
      const header = request.headers.authorization;
      const match = typeof header === 'string' ? BEARER.exec(header) : null;
      if (!match || !constantTimeEqual(match[1]!, token)) {
        throw new AppError('UNAUTHORIZED', 'metrics token is invalid or missing: send Authorization: Bearer <HOOKRELAY_METRICS_TOKEN>');
      }
    }
    const text = await metrics.render();
    return reply.type(metrics.contentType).send(text);
  });
}
