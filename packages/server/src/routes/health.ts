import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../plugins/error-handler.js';
import { SERVER_COMMIT, SERVER_VERSION } from '../version.js';

const READY_TIMEOUT_MS = 2000;

/**
 * Liveness (`/healthz`, process up, with the version and commit it runs) and readiness (`/readyz`,
 * database answers within 2 s).
 */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', async (request) => ({
    data: { status: 'ok', version: SERVER_VERSION, commit: SERVER_COMMIT },
    meta: { request_id: request.id },
  }));

  app.get('/readyz', async (request) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        app.services.db.sql`SELECT 1`,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the database did not answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
        }),
      ]);
    } catch (error) {
      throw new AppError('SERVICE_UNAVAILABLE', 'database is not reachable', { retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS, cause: error });
    } finally {
      clearTimeout(timer);
    }
    return { data: { status: 'ready', database: app.services.db.backend }, meta: { request_id: request.id } };
  });
}
