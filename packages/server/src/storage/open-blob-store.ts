import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { ChunkBlobStore, FileBlobStore, type BlobStore } from './blob-store.js';
import type { PayloadStore } from './payload-store.js';
import type { S3PayloadStore } from './s3-payload-store.js';

/**
 * Where large bodies stream to: the S3 bucket when the payload store is one (multipart uploads);
 * otherwise files in the data dir beside the embedded database (one process owns both), or rows of
 * the shared database on PostgreSQL, where every process must read every body.
 */
export function openBlobStore(db: Database, config: Pick<Config, 'dataDir'>, log: FastifyBaseLogger, payloadStore?: PayloadStore): BlobStore {
  const logError = (fields: object, message: string) => log.error(fields, message);
  const s3 = payloadStore as Partial<Pick<S3PayloadStore, 'blobStore'>> | undefined;
  if (payloadStore?.kind === 's3' && typeof s3?.blobStore === 'function') return s3.blobStore(db.sql, logError);
  return db.backend === 'pglite' ? new FileBlobStore(db.sql, path.join(config.dataDir, 'payloads'), logError) : new ChunkBlobStore(db.sql, logError);
}
