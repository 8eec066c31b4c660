import { sweepExpiredInboundEndpoints } from '../db/inbound-endpoints.js';
import type { Sweeper } from './sweeper.js';

/**
 * Records the deletion of ephemeral inbound endpoints whose TTL has elapsed. The API and ingestion
 * already treat them as gone from `expires_at` on (404 / 410), so the sweeper only makes the
 * deletion durable and frees their URLs in the DUPLICATE_URL index.
 */
export const expiredInboundEndpointsSweeper: Sweeper = {
  name: 'expired-inbound-endpoints',
  lockKey: 0x73770002,
  async run(tx, now) {
    return (await sweepExpiredInboundEndpoints(tx, now)).length;
  },
};
