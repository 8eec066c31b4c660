import type { FastifyBaseLogger } from 'fastify';
import { readRejectionNotice } from '../db/channels.js';
import type { Sql } from '../db/database.js';
import { findRejectionsByIds } from '../db/rejections.js';
import { toRejectionOut } from '../views/rejection.js';
import type { StreamHub } from './hub.js';
import type { WatchHub } from './watch.js';

/** The sockets a refused request is shown on, and how to read it back. */
export interface RejectionPush {
  streams: StreamHub;
  watch: WatchHub;
  sql: Sql;
  log: FastifyBaseLogger;
}

/**
 * Sends the refused requests of an INGEST_REJECTIONS_CHANNEL notice to the streams and watch sockets
 * of their endpoints, read back by id; endpoints nobody follows in this process cost no read.
 */
export async function pushRejections(payload: string, { streams, watch, sql, log }: RejectionPush): Promise<void> {
  const ids = [...readRejectionNotice(payload)]
    .filter(([endpointId]) => streams.hasSubscribers(endpointId) || watch.hasWatchers(endpointId))
    .flatMap(([, endpointIds]) => endpointIds);
  if (ids.length === 0) return;
  try {
    for (const row of await findRejectionsByIds(sql, ids)) {
      const rejection = toRejectionOut(row);
      streams.rejected(row.endpoint_id, rejection);
      watch.rejected(row.endpoint_id, rejection);
    }
  } catch (error) {
    log.warn({ err: error }, 'refused requests could not be read for the streams');
  }
}
