import { claimAbandonedBlobUploads } from '../db/blob-uploads.js';
import type { Sweeper } from './sweeper.js';

/** Past the request timeout, how much longer an upload's commit may take before its blob counts as abandoned. */
export const UPLOAD_COMMIT_MARGIN_MS = 5 * 60 * 1000;

/**
 * Blobs of uploads that never became a message (a crash mid-upload or before the commit, a sender
 * cut off, a commit that failed): pending longer than a request may take to arrive plus a wide
 * margin for its commit (on the embedded database, anything pending from before this process
 * started), `batch` per run. The pending rows go in the run's transaction; the blobs
 * with them (a chunk store's rows in the same transaction; files just before it commits, so a
 * failed run leaves rows that point at no file, which the next run removes again).
 */
export function abandonedUploadsSweeper(requestTimeoutSeconds: number, options: { onlyProcessSince?: Date; batch?: number } = {}): Sweeper {
  const batch = options.batch ?? 200;
  return {
    name: 'abandoned-uploads',
    lockKey: 0x73770005,
    async run(tx, now, deps) {
      let before = now.getTime() - requestTimeoutSeconds * 1000 - UPLOAD_COMMIT_MARGIN_MS;
      // The embedded database has one process, which locks its data dir: whatever an earlier one
      // left pending (a crash, a kill) is abandoned at once.
      if (options.onlyProcessSince !== undefined) before = Math.max(before, options.onlyProcessSince.getTime());
      const keys = await claimAbandonedBlobUploads(tx, new Date(before), batch);
      if (keys.length > 0) await deps.payloadStore.deleteMany(tx, keys);
      return keys.length;
    },
  };
}
