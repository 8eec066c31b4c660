import type { CliMessageOut } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { listInboundMessagesAfter, listInboundMessagesWithPayloadAfter, type ListenMessageRow } from '../db/inbound-messages.js';
import { joinHeaders, renderBody } from '../lib/body.js';
import { PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';

/** The payload store could not be read: the message goes out with `body_error` (decisions.md §4). */
export const PAYLOAD_UNAVAILABLE = Symbol('payload unavailable');

/**
 * A message that has just been committed, with its payload bytes in hand: what
 * `StreamHub.publishCommitted` sends without reading it back.
 */
export interface CommittedInboundMessage extends Omit<ListenMessageRow, 'payload_key'> {
  payload: Uint8Array;
}

const asBuffer = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/**
 * One message as the CLI receives it. `payload` undefined: no body (gone on purpose, or no key).
 * `forceBase64` keeps bytes exact (always on in stream frames, decisions.md §5).
 */
export function toCliMessage(
  row: Omit<ListenMessageRow, 'payload_key'>,
  payload: Uint8Array | undefined | typeof PAYLOAD_UNAVAILABLE,
  forceBase64: boolean,
): CliMessageOut {
  let body: object = {};
  if (payload === PAYLOAD_UNAVAILABLE) body = { body_error: 'payload_unavailable' as const };
  else if (payload !== undefined) body = renderBody(asBuffer(payload), row.content_type, forceBase64);
  return {
    message_id: row.id,
    content_type: row.content_type,
    headers: joinHeaders(row.raw_headers),
    raw_headers: row.raw_headers,
    size_bytes: row.size_bytes,
    payload_sha256: row.payload_sha256,
    received_at: row.received_at.toISOString(),
    method: row.method,
    path: row.path,
    query: row.query,
    ...body,
  } as CliMessageOut;
}

/** Messages as the CLI receives them (listen pages and stream frames), payloads fetched in one go. */
export async function toCliMessages(
  store: PayloadStore,
  sql: Sql,
  rows: readonly ListenMessageRow[],
  forceBase64: boolean,
): Promise<CliMessageOut[]> {
  const keys = rows.map((r) => r.payload_key).filter((k): k is string => k !== null);
  let payloads: Map<string, Buffer> | undefined;
  try {
    payloads = await store.getMany(sql, keys);
  } catch (error) {
    if (!(error instanceof PayloadUnavailableError)) throw error;
  }
  return rows.map((row) => {
    if (row.payload_key === null) return toCliMessage(row, undefined, forceBase64);
    return toCliMessage(row, payloads === undefined ? PAYLOAD_UNAVAILABLE : payloads.get(row.payload_key), forceBase64);
  });
}

/**
 * A listen page or a stream read: the endpoint's live messages after `afterId`, in id order. With
 * the database payload store the payloads come in the same statement; with another store, in one
 * more call. `lastId` is the id of the last message read (null when none), the next cursor.
 */
export async function readCliMessagesAfter(
  store: PayloadStore,
  sql: Sql,
  endpointId: string,
  afterId: string | null,
  limit: number,
  forceBase64: boolean,
): Promise<{ messages: CliMessageOut[]; lastId: string | null }> {
  if (store.kind === 'database') {
    const rows = await listInboundMessagesWithPayloadAfter(sql, endpointId, afterId, limit);
    // A row with a key but no payload lost it on purpose (deleted meanwhile): no body, as from the store.
    const messages = rows.map((row) => toCliMessage(row, row.payload_key === null ? undefined : (row.payload ?? undefined), forceBase64));
    return { messages, lastId: rows.length > 0 ? rows[rows.length - 1]!.id : null };
  }
  const rows = await listInboundMessagesAfter(sql, endpointId, afterId, limit);
  const messages = await toCliMessages(store, sql, rows, forceBase64);
  return { messages, lastId: rows.length > 0 ? rows[rows.length - 1]!.id : null };
}
