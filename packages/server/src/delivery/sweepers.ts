import { claimDeletedOutboundPayloads, clearOutboundPayloadKeys } from '../db/messages.js';
import { deletedPayloadsSweeper } from '../sweepers/payloads.js';
import type { Sweeper } from '../sweepers/sweeper.js';

/** Payloads of soft-deleted outbound messages: already unreachable, now removed from the store. */
export const deletedOutboundPayloadsSweeper = deletedPayloadsSweeper('deleted-outbound-payloads', 0x73770101, claimDeletedOutboundPayloads, clearOutboundPayloadKeys);

/** The delivery engine's sweepers, run beside the default ones by processes with the worker role. */
export const DELIVERY_SWEEPERS: readonly Sweeper[] = [deletedOutboundPayloadsSweeper];
