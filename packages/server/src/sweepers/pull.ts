import { sweepExpiredPullEndpoints } from '../db/pull-endpoints.js';
import { claimDeletedPullPayloads, clearPullPayloadKeys, deleteExpiredPullEvents } from '../db/pull-events.js';
import { deletedPayloadsSweeper } from './payloads.js';
import type { Sweeper } from './sweeper.js';

/** Rows removed per run (per sweeper interval); a backlog drains over the following runs. */
const BATCH = 500;

/**
 * Events past their endpoint's retention (`retention_days`), and every event of a deleted pull
 * endpoint, are removed for good: rows and payloads in the same transaction. Retention ends the
 * record too, unlike a soft delete, which keeps the metadata until retention removes it.
 */
export const expiredPullEventsSweeper: Sweeper = {
  name: 'expired-pull-events',
  lockKey: 0x73770601,
  async run(tx, now, deps) {
    const { count, payloadKeys } = await deleteExpiredPullEvents(tx, now, BATCH);
    await deps.payloadStore.deleteMany(tx, payloadKeys);
    return count;
  },
};

/** Payloads of soft-deleted pull events: already unreachable, now removed from the store. */
export const deletedPullPayloadsSweeper = deletedPayloadsSweeper('deleted-pull-payloads', 0x73770602, claimDeletedPullPayloads, clearPullPayloadKeys, BATCH);

/**
 * Records the deletion of ephemeral pull endpoints whose TTL has elapsed. The API and ingestion
 * already treat them as gone from `expires_at` on (404 / 410); once marked deleted, their events
 * go with the next run of expired-pull-events.
 */
export const expiredPullEndpointsSweeper: Sweeper = {
  name: 'expired-pull-endpoints',
  lockKey: 0x73770603,
  async run(tx, now) {
    return (await sweepExpiredPullEndpoints(tx, now)).length;
  },
};
