import type { Sql } from '../db/database.js';
import { findIngestEndpointByTokenHash, type IngestEndpointRow } from '../db/ingest.js';
import type { SecretBox } from '../security/crypto.js';
import type { EventTypeRule } from './event-type.js';
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
}

interface Entry {
  target: IngestTarget | null;
  loadedAt: number;
}

function toTarget(row: IngestEndpointRow, secretBox: SecretBox): IngestTarget {
  const anyCheck = row.verify_static_token || row.verify_hmac || row.verify_ip_allowlist;
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
    verify: anyCheck
      ? compileVerifier({
          verifyStaticToken: row.verify_static_token,
          staticTokenHeaderName: row.static_token_header_name,
          staticTokenQueryParam: row.static_token_query_param,
          staticTokenHash: row.static_token_hash,
          verifyHmac: row.verify_hmac,
          hmacScheme: row.hmac_scheme,
          hmacHeaderName: row.hmac_header_name,
          hmacSecret: row.hmac_secret_encrypted ? secretBox.decrypt(row.hmac_secret_encrypted) : null,
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
  private readonly entries = new Map<string, Entry>();
  private readonly hashById = new Map<string, string>();

  constructor(
    private readonly sql: Sql,
    private readonly secretBox: SecretBox,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The cached settings of `tokenHash` (null: no such endpoint); undefined when they must be read (`get`). */
  peek(tokenHash: string, now = Date.now()): IngestTarget | null | undefined {
    const cached = this.entries.get(tokenHash);
    return cached && now - cached.loadedAt < this.ttlMs ? cached.target : undefined;
  }

  async get(tokenHash: string, now = Date.now()): Promise<IngestTarget | null> {
    const cached = this.peek(tokenHash, now);
    if (cached !== undefined) return cached;
    const row = await findIngestEndpointByTokenHash(this.sql, tokenHash);
    const target = row ? toTarget(row, this.secretBox) : null;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(tokenHash, { target, loadedAt: now });
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
