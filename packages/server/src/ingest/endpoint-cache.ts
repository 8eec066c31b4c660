import type { Sql } from '../db/database.js';
import { findIngestEndpointByTokenHash, type IngestEndpointRow } from '../db/ingest.js';
import { ReadThroughCache } from '../lib/read-through-cache.js';
import type { SecretBox } from '../security/crypto.js';
import type { EventTypeRule } from './event-type.js';
import { senderSigningOf, type SenderSigning } from './resign.js';
import { compileVerifier, type InboundRequest, type VerificationResult } from './verify.js';

/** An inbound endpoint as ingestion sees it, with its verifier compiled once. */
export interface IngestTarget {
  id: string;
  projectId: string;
  mode: 'forward' | 'cli';
  paused: boolean;
  gone: boolean;
  ingestResponseCode: number;
  idempotencyHeaderNames: readonly string[];
  verify: ((request: InboundRequest) => VerificationResult) | null;
  /** The checks a request has passed once `verify` accepts it (every configured one); [] without any. */
  verified: readonly string[];
  eventTypeRule: EventTypeRule;
  /** Where the endpoint's static token travels (header name lowercased), redacted from refused requests. */
  staticTokenHeader: string | null;
  staticTokenQueryParam: string | null;
  /** The endpoint's own body limit; null: the server's. */
  maxBodyBytes: number | null;
  /** What re-signing a late delivery of its messages reads (ingest/resign.ts). */
  signing: SenderSigning;
}

function toTarget(row: IngestEndpointRow, secretBox: SecretBox): IngestTarget {
  const anyCheck = row.verify_static_token || row.verify_hmac || row.verify_ip_allowlist;
  const hmacSecret = row.hmac_secret_encrypted ? secretBox.decrypt(row.hmac_secret_encrypted) : null;
  return {
    id: row.id,
    projectId: row.project_id,
    mode: row.mode,
    paused: row.paused,
    gone: row.gone,
    ingestResponseCode: row.ingest_response_code,
    idempotencyHeaderNames: row.idempotency_header_names.map((h) => h.toLowerCase()),
    verified: Object.freeze([
      ...(row.verify_static_token ? ['static_token'] : []),
      ...(row.verify_hmac ? ['hmac'] : []),
      ...(row.verify_ip_allowlist ? ['ip_allowlist'] : []),
    ]),
    eventTypeRule: { source: row.event_type_source, path: row.event_type_path },
    staticTokenHeader: row.static_token_header_name ? row.static_token_header_name.toLowerCase() : null,
    staticTokenQueryParam: row.static_token_query_param ? row.static_token_query_param : null,
    maxBodyBytes: row.max_body_bytes,
    signing: senderSigningOf(row, hmacSecret),
    verify: anyCheck
      ? compileVerifier({
          verifyStaticToken: row.verify_static_token,
          staticTokenHeaderName: row.static_token_header_name,
          staticTokenQueryParam: row.static_token_query_param,
          staticTokenHash: row.static_token_hash,
          verifyHmac: row.verify_hmac,
          hmacScheme: row.hmac_scheme,
          hmacHeaderName: row.hmac_header_name,
          hmacSecret,
          timestampHeaderName: row.timestamp_header_name,
          timestampToleranceSeconds: row.timestamp_tolerance_seconds,
          verifyIpAllowlist: row.verify_ip_allowlist,
          allowedCidrs: row.allowed_cidrs,
        })
      : null,
  };
}

/**
 * Ingest settings by token hash, so a burst of webhooks costs one lookup and one decryption. Entries
 * are dropped when an endpoint changes (in this process directly, in others by NOTIFY) and expire
 * after a few seconds anyway. Paused and deleted states are re-checked under lock when storing.
 */
export class IngestEndpointCache {
  private readonly entries: ReadThroughCache<string, IngestTarget | null>;
  private readonly hashById = new Map<string, string>();

  constructor(sql: Sql, secretBox: SecretBox, ttlMs = 5_000, maxEntries = 10_000) {
    this.entries = new ReadThroughCache(
      async (tokenHash: string) => {
        const row = await findIngestEndpointByTokenHash(sql, tokenHash);
        return row ? toTarget(row, secretBox) : null;
      },
      ttlMs,
      maxEntries,
    );
  }

  /** The cached settings of `tokenHash` (null: no such endpoint); undefined when they must be read (`get`). */
  peek(tokenHash: string, now = Date.now()): IngestTarget | null | undefined {
    return this.entries.peek(tokenHash, now);
  }

  async get(tokenHash: string, now = Date.now()): Promise<IngestTarget | null> {
    const target = await this.entries.get(tokenHash, now);
    if (target) this.hashById.set(target.id, tokenHash);
    return target;
  }

  invalidate(endpointId: string): void {
    const hash = this.hashById.get(endpointId);
    if (hash !== undefined) {
      this.entries.delete(hash);
      this.hashById.delete(endpointId);
    }
  }
}
