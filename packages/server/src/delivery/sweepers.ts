import { claimDeletedOutboundPayloads, clearOutboundPayloadKeys } from '../db/messages.js';
import type { Sweeper } from '../sweepers/runner.js';

/** Payloads of soft-deleted outbound messages: already unreachable, now removed from the store. */
export const deletedOutboundPayloadsSweeper: Sweeper = {
  name: 'deleted-outbound-payloads',
  lockKey: 0x73770101,
  async run(tx, _now, deps) {
    const claimed = await claimDeletedOutboundPayloads(tx, 500);
    await deps.payloadStore.deleteMany(tx, claimed.map((c) => c.payload_key));
    await clearOutboundPayloadKeys(tx, claimed.map((c) => c.id));
    return claimed.length;
  },
};

/** The delivery engine's sweepers, run beside the default ones by processes with the worker role. */
export const DELIVERY_SWEEPERS: readonly Sweeper[] = [deletedOutboundPayloadsSweeper];
