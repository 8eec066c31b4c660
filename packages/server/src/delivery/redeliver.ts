import type { Sql } from '../db/database.js';
import { requeueInboundDeliveries, requeueOutboundDeliveries, type DeliveryStatus } from '../db/deliveries.js';
import { markInboundReplayed, type InboundMessageRow } from '../db/inbound-messages.js';
import { markOutboundRequeued } from '../db/messages.js';

/**
 * Deliveries made again by hand: `POST /v1/messages/{id}/retry` and `POST
 * /v1/inbound-messages/{id}/replay` for one message, bulk jobs for a chunk of them, in the caller's
 * transaction. The job rows are locked before the message rows, as everywhere (db/deliveries.ts).
 */

/**
 * Retries outbound messages of the project with the whole retry schedule, from any status: each
 * live one among `ids` is queued, or, when an attempt is in flight, stays `delivering` and is
 * delivered again once that attempt ends. Returns the status of each message retried, by id; a
 * deleted or unknown one is not in it.
 */
export async function retryOutboundMessages(tx: Sql, projectId: string, ids: readonly string[]): Promise<Map<string, DeliveryStatus>> {
  const requeued = await requeueOutboundDeliveries(tx, projectId, ids);
  const statuses = new Map<string, DeliveryStatus>(requeued.filter((r) => r.in_flight).map((r) => [r.message_id, 'delivering']));
  for (const row of await markOutboundRequeued(tx, projectId, requeued.filter((r) => !r.in_flight).map((r) => r.message_id))) statuses.set(row.id, row.status);
  return statuses;
}

/**
 * Replays inbound messages of the project: each live one among `ids` is queued again and counts a
 * replay; a forward-mode one gets a new delivery (a waiting one becomes due now). Pushing cli-mode
 * ones to the connected listeners is the caller's (INBOUND_REPLAY_CHANNEL), once this commits.
 * Returns the messages replayed; a deleted or unknown one is not among them.
 */
export async function replayInboundMessages(tx: Sql, projectId: string, ids: readonly string[]): Promise<InboundMessageRow[]> {
  await requeueInboundDeliveries(tx, projectId, ids);
  return markInboundReplayed(tx, projectId, ids);
}
