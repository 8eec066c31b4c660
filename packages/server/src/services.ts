import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { SecretBox } from './security/crypto.js';
import type { Resolver } from './security/ssrf.js';
import type { PayloadStore } from './storage/payload-store.js';
import type { IngestEndpointCache } from './ingest/endpoint-cache.js';
import type { SenderSigningCache } from './ingest/signing-cache.js';
import type { Metrics } from './metrics/index.js';
import type { StreamTickets } from './stream/tickets.js';
import type { SocketRegistry } from './stream/sockets.js';
import type { Tracing } from './tracing/tracing.js';
import type { EventSchemas } from './events/event-schemas.js';

/** What the process entry (or a test) hands to buildApp: the things with a lifecycle of their own. */
export interface AppDeps {
  db: Database;
  secretBox: SecretBox;
  /** DNS for destination checks; tests inject one so they never touch real DNS. */
  resolveHost?: Resolver;
  /** Where payload bytes live; by default the store HOOKRELAY_PAYLOAD_STORE names (the database unless set). */
  payloadStore?: PayloadStore;
  /** The process's tracing; by default the one the OTEL_* settings describe (off without an endpoint). */
  tracing?: Tracing;
}

/** What routes, workers and sweepers share, built once per app by buildApp. */
export interface AppServices extends AppDeps {
  config: Config;
  payloadStore: PayloadStore;
  ingestCache: IngestEndpointCache;
  /** Each inbound endpoint's re-signing settings (ingest/resign.ts), for listen pages and streams. */
  senderSigning: SenderSigningCache;
  /** This app's Prometheus registry and counters (GET /metrics). */
  metrics: Metrics;
  /** Spans (docs/operating.md, Tracing): a no-op unless an OTLP endpoint is configured. */
  tracing: Tracing;
  /** Single-use tickets that authenticate a browser's WebSocket upgrade. */
  streamTickets: StreamTickets;
  /** The /v1 WebSockets of this process: their limits, and their closing when a key is revoked. */
  sockets: SocketRegistry;
  /** The event types' compiled JSON Schemas, kept per project, name and revision. */
  eventSchemas: EventSchemas;
  /** `{receive_base}` of ingest URLs: HOOKRELAY_PUBLIC_URL, else this process's bound address. */
  receiveBase(): string;
  /**
   * Tells every process that an inbound endpoint's settings or state changed, so cached ingest
   * settings are dropped at once (here directly, elsewhere through NOTIFY).
   */
  inboundEndpointChanged(id: string): Promise<void>;
}
