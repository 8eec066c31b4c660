import type { FastifyBaseLogger } from 'fastify';
import { newUuidv7 } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import {
  deleteProcessStreamConnections,
  deleteStreamConnection,
  insertStreamConnection,
  refreshStreamConnections,
  STALE_AFTER_SECONDS,
} from '../db/stream-connections.js';

/**
 * The rows of this process's open CLI streams, so that any process can count an endpoint's
 * connected CLIs: one per stream while it is open, refreshed under this process's id, and all of
 * them removed when the process stops.
 */
export class StreamConnections {
  private readonly processId = newUuidv7();
  private refreshTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    this.refreshTimer = setInterval(() => {
      refreshStreamConnections(this.sql, this.processId).catch((error: unknown) => this.log.warn({ err: error }, 'could not refresh the stream connections'));
    }, (STALE_AFTER_SECONDS * 1000) / 3);
    this.refreshTimer.unref();
  }

  /**
   * Records a stream that opened; returns what its close calls. The row is removed once both its
   * insert and the close happened.
   */
  open(endpointId: string, log: FastifyBaseLogger): () => void {
    const id = newUuidv7();
    const registered = insertStreamConnection(this.sql, { id, endpointId, processId: this.processId }).then(
      () => true,
      (error: unknown) => {
        log.warn({ err: error }, 'could not record a stream connection');
        return false;
      },
    );
    return () =>
      void registered.then(async (inserted) => {
        if (inserted) await deleteStreamConnection(this.sql, id).catch(() => undefined);
      });
  }

  async stop(): Promise<void> {
    clearInterval(this.refreshTimer);
    await deleteProcessStreamConnections(this.sql, this.processId).catch(() => undefined);
  }
}
