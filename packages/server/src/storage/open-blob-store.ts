import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { ChunkBlobStore, FileBlobStore, type BlobStore } from './blob-store.js';

/**
 * The blob store of a database: files in the data dir beside the embedded database (one process
 * owns both), rows of the shared database on PostgreSQL, where every process must read every body.
 */
export function openBlobStore(db: Database, config: Pick<Config, 'dataDir'>, log: FastifyBaseLogger): BlobStore {
  const logError = (fields: object, message: string) => log.error(fields, message);
  return db.backend === 'pglite' ? new FileBlobStore(db.sql, path.join(config.dataDir, 'payloads'), logError) : new ChunkBlobStore(db.sql, logError);
}
