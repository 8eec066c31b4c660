import type { RejectionDetailOut, RejectionOut } from '@hookrelay/shared';
import type { RejectionDetailRow, RejectionRow } from '../db/rejections.js';

/** A refused request as lists show it and stream frames carry it. */
export function toRejectionOut(row: RejectionRow): RejectionOut {
  return {
    id: row.id,
    endpoint_kind: row.endpoint_kind,
    endpoint_id: row.endpoint_id,
    received_at: row.received_at.toISOString(),
    reason: row.reason,
    detail: row.detail,
    status: row.status,
    method: row.method,
    path: row.path,
    query: row.query,
    raw_headers: row.raw_headers,
    size_bytes: row.size_bytes,
    body_sha256: row.body_sha256,
    body_truncated: row.body_truncated,
    source_address: row.source_address,
  };
}

/** One refused request with the start of its body. */
export function toRejectionDetailOut(row: RejectionDetailRow): RejectionDetailOut {
  return {
    ...toRejectionOut(row),
    body: Buffer.from(row.body_prefix.buffer, row.body_prefix.byteOffset, row.body_prefix.byteLength).toString('base64'),
    body_encoding: 'base64',
  };
}
