import type { Sql } from '../db/database.js';
import { findSenderSigning } from '../db/inbound-endpoints.js';
import { ReadThroughCache } from '../lib/read-through-cache.js';
import type { SecretBox } from '../security/crypto.js';
import { senderSigningOf, type SenderSigning } from './resign.js';

/** Each endpoint's re-signing settings by endpoint id (null: not live), its secret opened. */
export type SenderSigningCache = ReadThroughCache<string, SenderSigning | null>;

/**
 * The re-signing settings the streams and listen pages read by (ingest/resign.ts), so that a read
 * costs no query and no decryption per message. An entry is dropped when its endpoint changes (in
 * this process directly, in others by NOTIFY) and expires after a few seconds anyway, as the ingest
 * settings do.
 */
export function senderSigningCache(sql: Sql, secretBox: SecretBox): SenderSigningCache {
  return new ReadThroughCache(async (endpointId: string) => {
    const row = await findSenderSigning(sql, endpointId);
    return row === undefined ? null : senderSigningOf(row, row.hmac_secret_encrypted === null ? null : secretBox.decrypt(row.hmac_secret_encrypted));
  });
}
