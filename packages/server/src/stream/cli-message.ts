import type { CliMessageOut } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import type { InboundMessageRow } from '../db/inbound-messages.js';
import { joinHeaders, renderBody } from '../lib/body.js';
import { PayloadUnavailableError, type PayloadStore } from '../storage/payload-store.js';

/**
 * Messages as the CLI receives them (listen pages and stream frames), payloads fetched in one go.
 * `forceBase64` keeps bytes exact (always on in stream frames, decisions.md §5).
 */
export async function toCliMessages(
  store: PayloadStore,
  sql: Sql,
  rows: readonly InboundMessageRow[],
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
    let body: object = {};
    if (row.payload_key !== null) {
      if (payloads === undefined) body = { body_error: 'payload_unavailable' as const };
      else {
        const bytes = payloads.get(row.payload_key);
        if (bytes !== undefined) body = renderBody(bytes, row.content_type, forceBase64);
      }
    }
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
  });
}
