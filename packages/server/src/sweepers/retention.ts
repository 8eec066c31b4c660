import { claimPayloadRemovals } from '../db/payloads.js';
import { purgeExpiredMessages } from '../db/retention.js';
import type { Sweeper } from './sweeper.js';

/**
 * Outbound and inbound messages past their endpoint's retention (docs/operating.md, Message
 * retention), removed for good with their attempts, answers and payloads: up to `batch` of each kind
 * per run, and the round runs it again at once while a run removed `batch` or more. Payloads that
 * are rows of the database go in the run's transaction; the others (files, objects) are listed by
 * it, and the next run removes them from their store first, before it commits: after their messages'
 * removal is durable, and again after a crash, until their keys are gone from the list. A run takes
 * as many keys off the list as it can add to it, so the list never outgrows two batches.
 */
export function messageRetentionSweeper(options: { defaultDays: number; batch: number }): Sweeper {
  const { batch } = options;
  return {
    name: 'message-retention',
    lockKey: 0x73770006,
    drainBatch: batch,
    async run(tx, now, deps) {
      const keys = await claimPayloadRemovals(tx, 2 * batch);
      if (keys.length > 0) await deps.payloadStore.deleteMany(tx, keys);
      const inbound = await purgeExpiredMessages(tx, 'inbound_messages', now, options.defaultDays, batch);
      const outbound = await purgeExpiredMessages(tx, 'outbound_messages', now, options.defaultDays, batch);
      deps.afterCommit(() => {
        deps.metrics?.countPurgedMessages('inbound', inbound);
        deps.metrics?.countPurgedMessages('outbound', outbound);
      });
      return inbound + outbound;
    },
  };
}
